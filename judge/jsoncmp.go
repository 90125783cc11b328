package judge

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	gocmp "github.com/google/go-cmp/cmp"
)

// Bounds of the search for a pairing of unordered arrays under a tolerance
// (see jsonCmp.bag).
const (
	// maxMatchElements: longer arrays are only paired in sorted order.
	maxMatchElements = 128
	// maxMatchWork bounds elements × nodes of the two arrays.
	maxMatchWork = 1 << 20
)

// compareJSONBytes parses both documents and compares them.
func compareJSONBytes(c Comparator, got, want []byte) (*finding, error) {
	wv, err := parseJSON(want)
	if err != nil {
		return nil, fmt.Errorf("%w: json: %v", ErrExpected, err)
	}
	gv, err := parseJSON(got)
	if err != nil {
		return jsonSyntax(err), nil
	}
	return compareJSONValues(c, gv, wv), nil
}

// compareJSONValues compares two values from parseJSON with go-cmp and
// returns nil or the first difference, located by its JSON path.
func compareJSONValues(c Comparator, got, want any) *finding {
	j := &jsonCmp{tol: c.tolerance(), unordered: c.UnorderedArrays}
	r := &diffReporter{j: j}
	if gocmp.Equal(got, want, j.options(), gocmp.Reporter(r)) {
		return nil
	}
	if r.found == nil {
		return differsAt("$", "$: values differ") // unreachable: go-cmp reports every difference
	}
	return r.found
}

// jsonCmp holds the go-cmp options of one json comparison. Every function
// it hands to go-cmp is pure, symmetric and deterministic, as go-cmp
// requires (and checks, by calling some of them twice with the arguments
// swapped).
type jsonCmp struct {
	tol       tolerance
	unordered bool
}

// options returns the go-cmp options.
//
// Containers never reach go-cmp's own slice and map comparison. Its slice
// comparison runs an edit-script search that is deliberately unstable (it
// picks a direction at random) and compares elements twice, which costs
// time exponential in the nesting depth; its map comparison sorts keys by
// reflection, O(n log² n). Instead, containers whose shapes differ (arrays
// of different lengths, objects with different key sets) are unequal
// outright, and the others are transformed into balanced binary trees in
// index or key order, which go-cmp walks in that order in linear time and
// logarithmic depth. Unordered arrays are decided by jsonCmp.bag.
func (j *jsonCmp) options() gocmp.Options {
	opts := gocmp.Options{
		gocmp.Comparer(j.numbersEqual),
		gocmp.FilterValues(func(x, y map[string]any) bool { return !sameKeys(x, y) },
			gocmp.Comparer(func(x, y map[string]any) bool { return false })),
		gocmp.FilterValues(sameKeys, gocmp.Transformer("members", members)),
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
			gocmp.Transformer("elements", elements)),
	)
}

// sameKeys reports whether two objects have the same keys.
func sameKeys(x, y map[string]any) bool {
	if len(x) != len(y) {
		return false
	}
	for k := range x {
		if _, ok := y[k]; !ok {
			return false
		}
	}
	return true
}

// elemTree is an array as go-cmp sees it: a balanced binary tree whose
// in-order walk (L, then V, then R) visits the elements by index. Two
// arrays of one length give trees of one shape.
type elemTree struct {
	L     *elemTree
	Index int
	V     any
	R     *elemTree
}

func elements(a []any) *elemTree {
	var build func(lo, hi int) *elemTree
	build = func(lo, hi int) *elemTree {
		if lo >= hi {
			return nil
		}
		mid := int(uint(lo+hi) >> 1)
		return &elemTree{L: build(lo, mid), Index: mid, V: a[mid], R: build(mid+1, hi)}
	}
	return build(0, len(a))
}

// memberTree is an object as go-cmp sees it: a balanced binary tree of its
// members in key order, each with the rank of its key in that order. Two
// objects with the same keys give trees of one shape.
type memberTree struct {
	L    *memberTree
	Key  string
	Rank int
	V    any
	R    *memberTree
}

func members(m map[string]any) *memberTree {
	keys := sortedKeys(m)
	var build func(lo, hi int) *memberTree
	build = func(lo, hi int) *memberTree {
		if lo >= hi {
			return nil
		}
		mid := int(uint(lo+hi) >> 1)
		return &memberTree{L: build(lo, mid), Key: keys[mid], Rank: mid, V: m[keys[mid]], R: build(mid+1, hi)}
	}
	return build(0, len(keys))
}

// equal is the equality the go-cmp options define, for the comparisons
// between elements that jsonCmp.bag makes. It does not call go-cmp: a
// nested go-cmp comparison re-checks its first comparer call by calling it
// twice, which would double the work at every level of nesting. Nested
// unordered arrays are paired in sorted order only (matching off), which
// bounds the work of an exhaustive pairing to one level.
func (j *jsonCmp) equal(x, y any) bool {
	switch a := x.(type) {
	case nil:
		return y == nil
	case bool:
		b, ok := y.(bool)
		return ok && a == b
	case string:
		b, ok := y.(string)
		return ok && a == b
	case json.Number:
		b, ok := y.(json.Number)
		return ok && j.numbersEqual(a, b)
	case []any:
		b, ok := y.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		if j.unordered {
			eq, _, _ := j.bag(a, b, false)
			return eq
		}
		for i := range a {
			if !j.equal(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := y.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !j.equal(av, bv) {
				return false
			}
		}
		return true
	}
	return false
}

// numbersEqual compares two JSON numbers (already validated by parseJSON).
func (j *jsonCmp) numbersEqual(a, b json.Number) bool {
	return j.tol.equal(jsonNumber(a), jsonNumber(b))
}

func jsonNumber(n json.Number) number {
	d, _ := parseDecimal(string(n))
	return number{class: finite, dec: d, text: string(n)}
}

// bag compares two arrays as multisets. It returns whether they are equal
// and, when not, the index of a candidate element without a match (-1 when
// the lengths differ) and a detailed explanation (x is the candidate's
// array).
//
// Without a tolerance, equality of elements is an equivalence, so the
// arrays are equal exactly when their multisets of canonical hashes are.
//
// With a tolerance it is not (1 ~ 1.5 ~ 2, but 1 !~ 2), so a greedy pairing
// could miss one that exists. Both arrays are first sorted by a canonical
// order in which numbers, also inside elements, order by value, and paired
// position by position; for arrays of numbers this finds a pairing
// whenever one exists. If that fails and matching is allowed and the arrays
// are small enough (maxMatchElements, maxMatchWork), a maximum bipartite
// matching over all pairs decides exactly. Matching is allowed for the
// arrays go-cmp reaches, not for arrays nested in their elements (see
// jsonCmp.equal), so its cost is paid at one level only. Either way an
// accepted pairing is a real one: a bag is never equal unless every
// candidate element is paired with a distinct expected element it equals.
func (j *jsonCmp) bag(x, y []any, matching bool) (bool, int, string) {
	if len(x) != len(y) {
		return false, -1, fmt.Sprintf("got an array of %s, want %d (compared without order)", plural(len(x), "element"), len(y))
	}
	if j.tol.exact() {
		return j.bagExact(x, y)
	}
	kx, ky := make([]sortKey, len(x)), make([]sortKey, len(y))
	work := 0
	for i := range x {
		kx[i], ky[i] = j.sortKey(x[i]), j.sortKey(y[i])
		work += kx[i].nodes + ky[i].nodes
	}
	px, py := sortedOrder(kx), sortedOrder(ky)
	firstBad := -1
	for k := range px {
		if !j.equal(x[px[k]], y[py[k]]) {
			firstBad = px[k]
			break
		}
	}
	if firstBad < 0 {
		return true, -1, ""
	}
	if !matching || len(x) > maxMatchElements || len(x)*work > maxMatchWork {
		return false, firstBad, fmt.Sprintf("element [%d] (%s) differs from its counterpart in sorted order (too large to search all pairings)", firstBad, describe(x[firstBad]))
	}
	if i := j.unmatched(x, y); i >= 0 {
		return false, i, fmt.Sprintf("element [%d] (%s) has no match in the expected array", i, describe(x[i]))
	}
	return true, -1, ""
}

// bagExact compares multisets of canonical hashes.
func (j *jsonCmp) bagExact(x, y []any) (bool, int, string) {
	counts := make(map[[32]byte]int, len(y))
	for _, v := range y {
		counts[canonicalHash(v)]++
	}
	for i, v := range x {
		h := canonicalHash(v)
		if counts[h] == 0 {
			return false, i, fmt.Sprintf("element [%d] (%s) has no match in the expected array (or appears more often)", i, describe(v))
		}
		counts[h]--
	}
	return true, -1, ""
}

// unmatched finds a maximum matching between x and y (Kuhn's augmenting
// paths, trying candidates in index order) and returns the first element
// of x left unmatched, or -1.
func (j *jsonCmp) unmatched(x, y []any) int {
	n := len(x)
	// eq caches pair comparisons: 0 unknown, 1 equal, 2 different.
	eq := make([]uint8, n*n)
	equal := func(i, k int) bool {
		if eq[i*n+k] == 0 {
			eq[i*n+k] = 2
			if j.equal(x[i], y[k]) {
				eq[i*n+k] = 1
			}
		}
		return eq[i*n+k] == 1
	}
	owner := make([]int, n) // owner[k] is the x index paired with y[k]
	for k := range owner {
		owner[k] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for k := 0; k < n; k++ {
			if seen[k] || !equal(i, k) {
				continue
			}
			seen[k] = true
			if owner[k] < 0 || try(owner[k], seen) {
				owner[k] = i
				return true
			}
		}
		return false
	}
	first := -1
	for i := 0; i < n; i++ {
		if !try(i, make([]bool, n)) && first < 0 {
			first = i
		}
	}
	return first
}

// canonicalHash hashes a value so that equal values, with arrays taken as
// multisets and numbers by decimal value, hash alike.
func canonicalHash(v any) [32]byte {
	h := sha256.New()
	var lenBuf [8]byte
	writeLen := func(n int) {
		binary.BigEndian.PutUint64(lenBuf[:], uint64(n))
		h.Write(lenBuf[:])
	}
	switch t := v.(type) {
	case nil:
		h.Write([]byte{'n'})
	case bool:
		if t {
			h.Write([]byte{'t'})
		} else {
			h.Write([]byte{'f'})
		}
	case json.Number:
		d, _ := parseDecimal(string(t))
		s := d.String()
		h.Write([]byte{'d'})
		writeLen(len(s))
		h.Write([]byte(s))
	case string:
		h.Write([]byte{'s'})
		writeLen(len(t))
		h.Write([]byte(t))
	case []any:
		hs := make([][32]byte, len(t))
		for i, e := range t {
			hs[i] = canonicalHash(e)
		}
		slices.SortFunc(hs, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
		h.Write([]byte{'a'})
		writeLen(len(hs))
		for _, e := range hs {
			h.Write(e[:])
		}
	case map[string]any:
		keys := sortedKeys(t)
		h.Write([]byte{'o'})
		writeLen(len(keys))
		for _, k := range keys {
			writeLen(len(k))
			h.Write([]byte(k))
			e := canonicalHash(t[k])
			h.Write(e[:])
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortKey places a value in the canonical order used to pair unordered
// arrays under a tolerance: by JSON type, then by shape (everything but
// the numbers, arrays as multisets), then by the values of its numbers.
type sortKey struct {
	rank  int
	shape [32]byte
	nums  []float64
	nodes int
}

func (j *jsonCmp) sortKey(v any) sortKey {
	h := sha256.New()
	k := sortKey{nodes: 1}
	switch t := v.(type) {
	case nil:
		k.rank = 0
	case bool:
		k.rank = 1
		h.Write([]byte(strconv.FormatBool(t)))
	case json.Number:
		k.rank = 2
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !math.IsInf(f, 0) {
			f = 0
		}
		k.nums = []float64{f}
	case string:
		k.rank = 3
		h.Write([]byte(t))
	case []any:
		k.rank = 4
		kids := make([]sortKey, len(t))
		for i, e := range t {
			kids[i] = j.sortKey(e)
		}
		slices.SortStableFunc(kids, compareSortKeys)
		for _, c := range kids {
			h.Write([]byte{byte(c.rank)})
			h.Write(c.shape[:])
			k.nums = append(k.nums, c.nums...)
			k.nodes += c.nodes
		}
	case map[string]any:
		k.rank = 5
		for _, key := range sortedKeys(t) {
			c := j.sortKey(t[key])
			fmt.Fprintf(h, "%d:%s", len(key), key)
			h.Write([]byte{byte(c.rank)})
			h.Write(c.shape[:])
			k.nums = append(k.nums, c.nums...)
			k.nodes += c.nodes
		}
	}
	h.Sum(k.shape[:0])
	return k
}

func compareSortKeys(a, b sortKey) int {
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c
	}
	if c := bytes.Compare(a.shape[:], b.shape[:]); c != 0 {
		return c
	}
	return slices.Compare(a.nums, b.nums)
}

// sortedOrder returns the indexes of keys in canonical order (stable).
func sortedOrder(keys []sortKey) []int {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return compareSortKeys(keys[a], keys[b]) })
	return idx
}

// diffReporter records the first difference go-cmp reports, located by
// its JSON path. It must read the path while go-cmp reports, because go-cmp
// reuses its path steps.
type diffReporter struct {
	j     *jsonCmp
	path  gocmp.Path
	found *finding
}

func (r *diffReporter) PushStep(ps gocmp.PathStep) { r.path = append(r.path, ps) }

func (r *diffReporter) PopStep() { r.path = r.path[:len(r.path)-1] }

func (r *diffReporter) Report(rs gocmp.Result) {
	if rs.Equal() || r.found != nil {
		return
	}
	// The path alternates between the trees made by elements and members:
	// a V field is the element or member of the tree node just entered.
	// The detailed path names object members by key (the candidate's key,
	// which the expected object shares, since members are only compared
	// between objects with the same keys); the digest path by the rank of
	// the key among the object's keys in byte order, from 0 (.#2 is the
	// member with the third smallest key), so that it quotes nothing.
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
			case elemTree:
				seg := "[" + strconv.Itoa(n.Index) + "]"
				detailed, digest = append(detailed, seg), append(digest, seg)
			case memberTree:
				detailed = append(detailed, keySegment(n.Key))
				digest = append(digest, ".#"+strconv.Itoa(n.Rank))
			}
		}
	}
	vx, vy := r.path.Last().Values()
	// An invalid value is a JSON null at the root.
	at, why := r.j.explain(valueOf(vx), valueOf(vy))
	r.found = differsAt(joinPath(append(digest, at...)), joinPath(detailed)+": "+why)
}

func valueOf(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// keySegment renders an object key in a detailed JSON path: .name for
// identifier-like keys, ["..."] (escaped, truncated) for others.
func keySegment(k string) string {
	if isIdentifier(k) {
		return "." + k
	}
	return "[" + quoteString(k) + "]"
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || !isDigit(c)) {
			return false
		}
	}
	return true
}

// maxPathLen bounds a rendered path; longer paths lose leading segments.
const maxPathLen = 160

func joinPath(segs []string) string {
	n := 1
	first := len(segs)
	for first > 0 && n+len(segs[first-1]) <= maxPathLen {
		first--
		n += len(segs[first])
	}
	if first > 0 {
		return "$…" + strings.Join(segs[first:], "")
	}
	return "$" + strings.Join(segs, "")
}

// explain describes why the candidate value got differs from want at the
// place go-cmp reported: path segments that point further into got (an
// unmatched element of an unordered array), and the detailed explanation.
// The explanation may state want's type and length, never its content:
// not even a key of an expected object.
func (j *jsonCmp) explain(got, want any) (at []string, why string) {
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

func article(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an"
	}
	return "a"
}
