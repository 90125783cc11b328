package judge

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// oracleComparators are the json comparators the differential tests try:
// exact, each tolerance, and each again with unordered arrays.
var oracleComparators = []Comparator{
	{Kind: KindJSON},
	{Kind: KindJSON, AbsTol: 0.1},
	{Kind: KindJSON, RelTol: 0.05},
	{Kind: KindJSON, AbsTol: 0.1, RelTol: 0.05},
	{Kind: KindJSON, UnorderedArrays: true},
	{Kind: KindJSON, UnorderedArrays: true, AbsTol: 0.1},
	{Kind: KindJSON, UnorderedArrays: true, RelTol: 0.05},
}

// sameFinding fails the test when the walk and the go-cmp oracle disagree
// on a pair of parsed values.
func sameFinding(t *testing.T, c Comparator, got, want any) {
	t.Helper()
	nf, of := compareJSONValues(c, got, want), oracleCompareJSONValues(c, got, want)
	if (nf == nil) != (of == nil) || (nf != nil && *nf != *of) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("%+v\ngot  %s\nwant %s\nwalk:   %+v\noracle: %+v", c, g, w, nf, of)
	}
}

// jsonGen makes random JSON values from small alphabets, so that equal
// and nearly equal values are common, and values derived from others by
// small changes.
type jsonGen struct{ r *rand.Rand }

var (
	genKeys = []string{"a", "b", "B", "c", "a b", "", "é", "z\n", "_1"}
	// genNumbers holds equal spellings and values within and beyond the
	// comparators' tolerances of each other.
	genNumbers = []string{"0", "-0", "0.0", "1", "1.0", "1e0", "1.05", "0.96", "1.2", "2", "-1", "100", "1e2", "104", "0.1", "0.10000000000000001", "1e400", "3"}
	genStrings = []string{"", "x", "X", "1", "café"}
)

func (g jsonGen) scalar() any {
	switch g.r.IntN(5) {
	case 0:
		return nil
	case 1:
		return g.r.IntN(2) == 0
	case 2:
		return genStrings[g.r.IntN(len(genStrings))]
	}
	return json.Number(genNumbers[g.r.IntN(len(genNumbers))])
}

func (g jsonGen) value(depth int) any {
	if depth == 0 || g.r.IntN(3) == 0 {
		return g.scalar()
	}
	n := g.r.IntN(5)
	if g.r.IntN(2) == 0 {
		a := make([]any, n)
		for i := range a {
			a[i] = g.value(depth - 1)
		}
		return a
	}
	m := map[string]any{}
	for range n {
		m[genKeys[g.r.IntN(len(genKeys))]] = g.value(depth - 1)
	}
	return m
}

// mutate returns a copy of v, changed in a few places or not at all:
// scalars replaced, arrays shuffled, grown or shrunk, keys added or
// dropped.
func (g jsonGen) mutate(v any, depth int) any {
	if g.r.IntN(8) == 0 {
		return g.value(depth)
	}
	switch t := v.(type) {
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = g.mutate(e, depth-1)
		}
		switch g.r.IntN(6) {
		case 0:
			g.r.Shuffle(len(a), func(i, j int) { a[i], a[j] = a[j], a[i] })
		case 1:
			a = append(a, g.value(depth-1))
		case 2:
			if len(a) > 0 {
				a = a[:len(a)-1]
			}
		}
		return a
	case map[string]any:
		m := make(map[string]any, len(t))
		for _, k := range sortedKeys(t) { // in order, for a reproducible test
			m[k] = g.mutate(t[k], depth-1)
		}
		switch g.r.IntN(6) {
		case 0:
			m[genKeys[g.r.IntN(len(genKeys))]] = g.value(depth - 1)
		case 1:
			delete(m, genKeys[g.r.IntN(len(genKeys))])
		}
		return m
	}
	return v
}

// TestCompareJSONMatchesOracle: the walk finds exactly what the go-cmp
// comparator it replaced found (same path in both renderings, same
// explanation), over random pairs of related values under every kind of
// json comparator.
func TestCompareJSONMatchesOracle(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 500
	}
	g := jsonGen{rand.New(rand.NewPCG(1, 2))}
	unequal := 0
	for i := range n {
		depth := 1 + i%5
		got := g.value(depth)
		want := g.mutate(got, depth)
		if i%2 == 1 {
			got, want = want, got
		}
		for _, c := range oracleComparators {
			sameFinding(t, c, got, want)
			if compareJSONValues(c, got, want) != nil {
				unequal++
			}
		}
	}
	// Both outcomes must be common for the test to mean anything.
	if total := n * len(oracleComparators); unequal < total/10 || unequal > total*9/10 {
		t.Fatalf("%d of %d comparisons unequal: the generator is off", unequal, total)
	}
	t.Logf("%d of %d comparisons unequal", unequal, n*len(oracleComparators))
}

// TestCompareJSONMatchesOracleDocuments runs the differential test on
// documents: some cases of TestCompareJSON, and large ones like those of
// the bound tests (the deepest are in TestJSONWalkDeep).
func TestCompareJSONMatchesOracleDocuments(t *testing.T) {
	pairs := [][2]string{
		{`{"b":2,"a":1}`, `{"a":1,"b":2}`},
		{`{"a":{"b":[1,2,3]}}`, `{"a":{"b":[1,2,4]}}`},
		{`[0,1,2,3,{"k":[1,2,3]},5,6,7,8]`, `[0,1,2,3,{"k":[1,2,4]},5,6,7,9]`},
		{`{"a":1,"z\n\u202e":2}`, `{"a":1}`},
		{`{"a":1,"x":2}`, `{"a":1,"b":2}`},
		{`[{"p":[1.0,5]},{"p":[1.05,3]}]`, `[{"p":[1.04,5]},{"p":[1.01,3]}]`},
		{`{"k":[2,1],"v":[1]}`, `{"k":[1,2],"v":[2]}`},
		{`[1,1,2]`, `[1,2,2]`},
		{`null`, `{}`},
		{`{}`, `null`},
		{`[null]`, `[[]]`},
		{strings.Repeat(`{"a":[1,`, 20) + "0" + strings.Repeat("]}", 20), strings.Repeat(`{"a":[1,`, 20) + "0.01" + strings.Repeat("]}", 20)},
		{bagOf(65, false), bagOf(65, true)},
		{bagOf(64, false), bagOf(64, true)},
		{paddedBag(64, 40, false), paddedBag(64, 40, true)},
		{"[" + strings.Repeat("1,", 5000) + "2]", "[2," + strings.Repeat("1,", 4999) + "1]"},
		{"[" + strings.Repeat("1,", 5000) + "2]", "[2," + strings.Repeat("1,", 4999) + "1.05]"},
	}
	for _, p := range pairs {
		got, err := parseJSON([]byte(p[0]))
		if err != nil {
			t.Fatal(err)
		}
		want, err := parseJSON([]byte(p[1]))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range oracleComparators {
			sameFinding(t, c, got, want)
			sameFinding(t, c, want, got)
		}
	}
}

// FuzzCompareJSONOracle: the walk and the go-cmp oracle agree on any two
// documents parseJSON accepts.
func FuzzCompareJSONOracle(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":[1,2,{"b":null}],"c":"x"}`, `{"c":"x","a":[1,2,{"b":false}]}`},
		{`[[2,1],[3],[1,2]]`, `[[3],[1,2],[2,1]]`},
		{`[{"p":[1.0,5]},{"p":[1.05,3]}]`, `[{"p":[1.04,5]},{"p":[1.01,3]}]`},
		{`{"a":1,"B":{"x":[1e2]}}`, `{"a":1,"B":{"x":[100.5]}}`},
	} {
		for flags := range uint8(len(oracleComparators)) {
			f.Add(flags, []byte(s[0]), []byte(s[1]))
		}
	}
	f.Fuzz(func(t *testing.T, flags uint8, got, want []byte) {
		gv, err := parseJSON(got)
		if err != nil {
			return
		}
		wv, err := parseJSON(want)
		if err != nil {
			return
		}
		sameFinding(t, oracleComparators[int(flags)%len(oracleComparators)], gv, wv)
	})
}

// nestedArrays is inner inside depth arrays.
func nestedArrays(depth int, inner string) string {
	return strings.Repeat("[", depth) + inner + strings.Repeat("]", depth)
}

// bagOf is an unordered array of 2n objects that pairs with bagOf(n, true)
// under an absolute tolerance of 0.1 only by a search of all pairings:
// the pairing in sorted order puts {"p":[1.0,5]} against {"p":[1.01,3]}.
// The candidate's side (want false) starts with {"p":[1.05,3]}.
func bagOf(n int, want bool) string {
	a, b := `{"p":[1.05,3]}`, `{"p":[1.0,5]}`
	if want {
		a, b = `{"p":[1.04,5]}`, `{"p":[1.01,3]}`
	}
	return "[" + strings.Join(slices.Repeat([]string{a, b}, n), ",") + "]"
}

// paddedBag is bagOf(n, want) with an array of pad zeros added to each
// element, to make the elements large without making the pairing easier.
func paddedBag(n, pad int, want bool) string {
	zeros := `,"pad":[` + strings.TrimSuffix(strings.Repeat("0,", pad), ",") + `]}`
	return strings.ReplaceAll(bagOf(n, want), "]}", "]"+zeros)
}
