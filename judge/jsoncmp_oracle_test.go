package judge

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	gocmp "github.com/google/go-cmp/cmp"
)

// This file keeps the json comparator as it was when it used go-cmp, as an
// oracle for the differential tests of the plain walk that replaced it
// (jsoncmp_walk_test.go). It reuses what the two share unchanged: bag,
// equal, numbersEqual and the path rendering. Only tests may import go-cmp.

// oracleCompareJSONValues is the former compareJSONValues.
func oracleCompareJSONValues(c Comparator, got, want any) *finding {
	j := &jsonCmp{tol: c.tolerance(), unordered: c.UnorderedArrays}
	r := &oracleReporter{j: j}
	if gocmp.Equal(got, want, j.options(), gocmp.Reporter(r)) {
		return nil
	}
	if r.found == nil {
		return differsAt("$", "$: values differ") // unreachable: go-cmp reports every difference
	}
	return r.found
}

// options returns the go-cmp options the json comparator used: containers
// whose shapes differ are unequal outright, the others are walked as
// balanced binary trees in index or key order, unordered arrays are
// decided by bag. FuzzCompare checks them against jsonCmp.equal.
func (j *jsonCmp) options() gocmp.Options {
	opts := gocmp.Options{
		gocmp.Comparer(j.numbersEqual),
		gocmp.FilterValues(func(x, y map[string]any) bool { return !sameKeys(x, y) },
			gocmp.Comparer(func(x, y map[string]any) bool { return false })),
		gocmp.FilterValues(sameKeys, gocmp.Transformer("members", oracleMembers)),
	}
	if j.unordered {
		return append(opts, gocmp.Comparer(func(x, y []any) bool {
			ok, _, _ := j.bag(x, y, true)
			return ok
		}))
	}
	return append(opts,
		gocmp.FilterValues(func(x, y []any) bool { return len(x) != len(y) },
			gocmp.Comparer(func(x, y []any) bool { return false })),
		gocmp.FilterValues(func(x, y []any) bool { return len(x) == len(y) },
			gocmp.Transformer("elements", oracleElements)),
	)
}

// oracleElemTree is an array as go-cmp sees it: a balanced binary tree
// whose in-order walk visits the elements by index.
type oracleElemTree struct {
	L     *oracleElemTree
	Index int
	V     any
	R     *oracleElemTree
}

func oracleElements(a []any) *oracleElemTree {
	var build func(lo, hi int) *oracleElemTree
	build = func(lo, hi int) *oracleElemTree {
		if lo >= hi {
			return nil
		}
		mid := int(uint(lo+hi) >> 1)
		return &oracleElemTree{L: build(lo, mid), Index: mid, V: a[mid], R: build(mid+1, hi)}
	}
	return build(0, len(a))
}

// oracleMemberTree is an object as go-cmp sees it: a balanced binary tree
// of its members in key order, each with the rank of its key.
type oracleMemberTree struct {
	L    *oracleMemberTree
	Key  string
	Rank int
	V    any
	R    *oracleMemberTree
}

func oracleMembers(m map[string]any) *oracleMemberTree {
	keys := sortedKeys(m)
	var build func(lo, hi int) *oracleMemberTree
	build = func(lo, hi int) *oracleMemberTree {
		if lo >= hi {
			return nil
		}
		mid := int(uint(lo+hi) >> 1)
		return &oracleMemberTree{L: build(lo, mid), Key: keys[mid], Rank: mid, V: m[keys[mid]], R: build(mid+1, hi)}
	}
	return build(0, len(keys))
}

// oracleReporter records the first difference go-cmp reports, located by
// its JSON path.
type oracleReporter struct {
	j     *jsonCmp
	path  gocmp.Path
	found *finding
}

func (r *oracleReporter) PushStep(ps gocmp.PathStep) { r.path = append(r.path, ps) }

func (r *oracleReporter) PopStep() { r.path = r.path[:len(r.path)-1] }

func (r *oracleReporter) Report(rs gocmp.Result) {
	if rs.Equal() || r.found != nil {
		return
	}
	var detailed, digest []string
	var node reflect.Value
	for _, ps := range r.path {
		switch s := ps.(type) {
		case gocmp.Indirect:
			if vx, _ := s.Values(); vx.IsValid() {
				node = vx
			}
		case gocmp.StructField:
			if s.Name() != "V" || !node.IsValid() {
				continue
			}
			switch n := node.Interface().(type) {
			case oracleElemTree:
				seg := "[" + strconv.Itoa(n.Index) + "]"
				detailed, digest = append(detailed, seg), append(digest, seg)
			case oracleMemberTree:
				detailed = append(detailed, keySegment(n.Key))
				digest = append(digest, ".#"+strconv.Itoa(n.Rank))
			}
		}
	}
	vx, vy := r.path.Last().Values()
	at, why := oracleExplain(r.j, oracleValueOf(vx), oracleValueOf(vy))
	r.found = differsAt(joinPath(append(digest, at...)), joinPath(detailed)+": "+why)
}

func oracleValueOf(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// oracleExplain is the former jsonCmp.explain.
func oracleExplain(j *jsonCmp, got, want any) (at []string, why string) {
	if gt, wt := jsonType(got), jsonType(want); gt != wt {
		return nil, fmt.Sprintf("got %s, want %s %s", describe(got), article(wt), wt)
	}
	switch g := got.(type) {
	case json.Number:
		return nil, j.tol.mismatch(jsonNumber(g))
	case []any:
		w := want.([]any)
		if j.unordered {
			if _, i, why := j.bag(g, w, true); why != "" {
				if i >= 0 {
					at = []string{"[" + strconv.Itoa(i) + "]"}
				}
				return at, why
			}
			return nil, "arrays differ"
		}
		return nil, fmt.Sprintf("got an array of %s, want %d", plural(len(g), "element"), len(w))
	case map[string]any:
		w := want.(map[string]any)
		for _, k := range sortedKeys(w) {
			if _, ok := g[k]; !ok {
				return nil, "lacks a key the expected object has"
			}
		}
		for _, k := range sortedKeys(g) {
			if _, ok := w[k]; !ok {
				return nil, "unexpected key " + quoteString(k)
			}
		}
		return nil, "objects differ"
	}
	return nil, "got " + describe(got)
}
