package judge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// walkCase is a comparison of two documents and the finding expected of
// compareJSONValues: the digest path (at) and the detailed reason, or
// neither when the documents are equal.
type walkCase struct {
	name       string
	c          Comparator
	got, want  string
	at, detail string
}

// runWalkCases checks each case's finding, that it is the same the second
// time, and that the go-cmp oracle finds the same.
func runWalkCases(t *testing.T, cases []walkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseJSON([]byte(tc.got))
			if err != nil {
				t.Fatalf("got: %v", err)
			}
			want, err := parseJSON([]byte(tc.want))
			if err != nil {
				t.Fatalf("want: %v", err)
			}
			f := compareJSONValues(tc.c, got, want)
			switch {
			case f == nil && tc.detail != "":
				t.Fatalf("equal, want %s: %s", tc.at, tc.detail)
			case f != nil && tc.detail == "":
				t.Fatalf("got %s: %s, want equal", f.at, f.detail)
			case f != nil && (f.what != firstDifference || f.at != tc.at || f.detail != tc.detail):
				t.Fatalf("got %q at %q: %q\nwant %q at %q: %q", f.what, f.at, f.detail, firstDifference, tc.at, tc.detail)
			}
			sameFinding(t, tc.c, got, want) // what the go-cmp comparator found
			if again := compareJSONValues(tc.c, got, want); (again == nil) != (f == nil) || (f != nil && *again != *f) {
				t.Fatalf("not deterministic: %+v then %+v", f, again)
			}
		})
	}
}

func TestJSONWalk(t *testing.T) {
	c := Comparator{Kind: KindJSON}
	runWalkCases(t, []walkCase{
		// Nested objects and arrays: the digest path ranks keys, the
		// detailed one names them.
		{"nested equal", c, `{"a":{"b":[1,{"c":[true,null]}]}}`, `{"a":{"b":[1.0,{"c":[true,null]}]}}`, "", ""},
		{"nested", c, `{"a":{"b":[1,{"c":true}]}}`, `{"a":{"b":[1,{"c":false}]}}`, "$.#0.#0[1].#0", "$.a.b[1].c: got true"},
		{"key ranks", c, `{"z":1,"b":{"y":2,"x":3}}`, `{"z":1,"b":{"y":2,"x":4}}`, "$.#0.#0", `$.b.x: got "3"`},
		{"nested array of arrays", c, `[[1,2],[3,[4,5]]]`, `[[1,2],[3,[4,6]]]`, "$[1][1][1]", `$[1][1][1]: got "5"`},
		// The first difference: members in byte order of their keys
		// (so "B" before "a"), elements by index, depth first.
		{"keys in byte order", c, `{"a":1,"B":1}`, `{"a":2,"B":2}`, "$.#0", `$.B: got "1"`},
		{"depth first", c, `{"a":[1,{"z":0}],"b":9}`, `{"a":[1,{"z":1}],"b":8}`, "$.#0[1].#0", `$.a[1].z: got "0"`},
		{"lower index first", c, `[[0,0,5],[9]]`, `[[0,0,6],[8]]`, "$[0][2]", `$[0][2]: got "5"`},
		// Missing and extra keys: the object differs as a whole; a
		// missing key is never named, and comes before an extra one.
		{"missing key", c, `{"a":1}`, `{"a":1,"b":2}`, "$", "$: lacks a key the expected object has"},
		{"missing and extra", c, `{"a":1,"x":1}`, `{"a":1,"b":1}`, "$", "$: lacks a key the expected object has"},
		{"smallest extra key", c, `{"a":1,"z":1,"y":1}`, `{"a":1}`, "$", `$: unexpected key "y"`},
		{"extra key nested", c, `[{"a":1}]`, `[{}]`, "$[0]", `$[0]: unexpected key "a"`},
		{"keys differ before values", c, `{"a":2,"b":1}`, `{"a":1}`, "$", `$: unexpected key "b"`},
		// Type mismatches.
		{"null vs bool", c, `null`, `false`, "$", "$: got null, want a boolean"},
		{"string vs number", c, `"1"`, `1`, "$", `$: got string "1", want a number`},
		{"number vs string", c, `1`, `"1"`, "$", `$: got number "1", want a string`},
		{"array vs object", c, `[1]`, `{"a":1}`, "$", "$: got an array of 1 element, want an object"},
		{"object vs null", c, `{}`, `null`, "$", "$: got an object with 0 keys, want a null"},
		{"bool vs array", c, `true`, `[]`, "$", "$: got true, want an array"},
		{"nested null", c, `{"a":[null]}`, `{"a":[0]}`, "$.#0[0]", "$.a[0]: got null, want a number"},
		// Arrays of different lengths differ as a whole.
		{"shorter", c, `{"a":[1]}`, `{"a":[1,2]}`, "$.#0", "$.a: got an array of 1 element, want 2"},
		{"longer", c, `[1,2,3]`, `[9,2]`, "$", "$: got an array of 3 elements, want 2"},
		// Strings are compared exactly.
		{"strings", c, `["café"]`, `["cafe"]`, "$[0]", `$[0]: got string "café"`},
		{"bools", c, `[true,false]`, `[true,false]`, "", ""},
	})
}

func TestJSONWalkTolerance(t *testing.T) {
	exact := Comparator{Kind: KindJSON}
	abs := Comparator{Kind: KindJSON, AbsTol: 0.25}
	rel := Comparator{Kind: KindJSON, RelTol: 0.5}
	both := Comparator{Kind: KindJSON, AbsTol: 0.25, RelTol: 0.1}
	runWalkCases(t, []walkCase{
		{"exact by value", exact, `[1.0,1e2,-0,0.5e1]`, `[1,100,0,5]`, "", ""},
		{"exact by decimal", exact, `[0.1]`, `[0.10000000000000001]`, "$[0]", `$[0]: got "0.1"`},
		// |a-b| <= abs_tol, the bound included.
		{"abs within", abs, `[1.25,0.75]`, `[1,1]`, "", ""},
		{"abs beyond", abs, `[1.25,1.5]`, `[1,1]`, "$[1]", `$[1]: got "1.5", not within the tolerance`},
		// |a-b| <= rel_tol*max(|a|,|b|): relative to the larger, whichever
		// side it is on.
		{"rel larger candidate", rel, `2`, `1`, "", ""},
		{"rel larger expected", rel, `1`, `2`, "", ""},
		{"rel beyond", rel, `{"m":3}`, `{"m":1}`, "$.#0", `$.m: got "3", not within the tolerance`},
		{"rel near zero", rel, `1e-300`, `0`, "$", `$: got "1e-300", not within the tolerance`},
		// Either tolerance suffices.
		{"either rel", both, `109`, `100`, "", ""},
		{"either abs", both, `1.2`, `1`, "", ""},
		{"neither", both, `1.5`, `1`, "$", `$: got "1.5", not within the tolerance`},
		// Beyond float64 only an exact match counts.
		{"beyond float64", abs, `[1e400,1e401]`, `[1e400,1e400]`, "$[1]", `$[1]: got "1e401", not within the tolerance`},
	})
}

func TestJSONWalkUnordered(t *testing.T) {
	bag := Comparator{Kind: KindJSON, UnorderedArrays: true}
	bagTol := Comparator{Kind: KindJSON, UnorderedArrays: true, AbsTol: 0.1}
	runWalkCases(t, []walkCase{
		{"duplicates", bag, `[1,2,1]`, `[1,1,2]`, "", ""},
		{"duplicate objects", bag, `[{"a":[1,2]},{"a":[2,1]}]`, `[{"a":[2,1]},{"a":[2,1]}]`, "", ""},
		// The digest path points at the candidate's element; the
		// detailed reason names it.
		{"duplicate counts", bag, `[1,1,2]`, `[1,2,2]`, "$[1]", `$: element [1] (number "1") has no match in the expected array (or appears more often)`},
		{"inside object", bag, `{"k":[2,1],"v":[3,1]}`, `{"k":[1,2],"v":[2,3]}`, "$.#1[1]", `$.v: element [1] (number "1") has no match in the expected array (or appears more often)`},
		{"length", bag, `[1,1]`, `[1]`, "$", "$: got an array of 2 elements, want 1 (compared without order)"},
		{"tolerance duplicates", bagTol, `[1,1,1.05]`, `[1.02,1.08,0.99]`, "", ""},
		{"tolerance duplicate counts", bagTol, `{"k":[1,1,1]}`, `{"k":[1,1,2]}`, "$.#0[2]", `$.k: element [2] (number "1") has no match in the expected array`},
		{"tolerance pairing by search", bagTol, bagOf(1, false), bagOf(1, true), "", ""},
		// Arrays nested in the elements of an unordered array are paired
		// in sorted order only: the search is paid at one level.
		{"no search one level down", bagTol, "[" + bagOf(1, false) + "]", "[" + bagOf(1, true) + "]", "$[0]", "$: element [0] (an array of 2 elements) has no match in the expected array"},
	})
}

// TestJSONWalkPath: how a finding locates its value.
func TestJSONWalkPath(t *testing.T) {
	c := Comparator{Kind: KindJSON}
	long := strings.Repeat("k", 70)
	runWalkCases(t, []walkCase{
		{"root", c, `1`, `2`, "$", `$: got "1"`},
		{"odd key quoted", c, `{"a b":1}`, `{"a b":2}`, "$.#0", `$["a b"]: got "1"`},
		{"empty key", c, `{"":1}`, `{"":2}`, "$.#0", `$[""]: got "1"`},
		{"escaped key", c, `{"\u202e":1}`, `{"\u202e":2}`, "$.#0", `$["\u202e"]: got "1"`},
		// Identifiers up to 64 bytes are named bare, longer keys quoted
		// and truncated.
		{"long identifier", c, `{"` + long[:64] + `":1}`, `{"` + long[:64] + `":2}`, "$.#0", "$." + long[:64] + `: got "1"`},
		{"longer key truncated", c, `{"` + long + `":1}`, `{"` + long + `":2}`, "$.#0", `$["` + long[:61] + `"…]: got "1"`},
		// Long paths keep their last segments.
		{"long path", c, nestedArrays(60, "1"), nestedArrays(60, "2"), "$…" + strings.Repeat("[0]", 53), "$…" + strings.Repeat("[0]", 53) + `: got "1"`},
	})
}

// TestJSONWalkDeep: nesting as deep as parseJSON allows compares in linear
// time to a deterministic finding; deeper values, which parseJSON never
// makes, are refused without being walked.
func TestJSONWalkDeep(t *testing.T) {
	deepest := nestedArrays(MaxJSONDepth, "1")
	for _, c := range oracleComparators {
		runWalkCases(t, []walkCase{
			{"deepest equal", c, deepest, nestedArrays(MaxJSONDepth, "1.0"), "", ""},
			{"deepest objects", c, strings.Repeat(`{"a":`, MaxJSONDepth) + "1" + strings.Repeat("}", MaxJSONDepth), strings.Repeat(`{"a":`, MaxJSONDepth) + "1" + strings.Repeat("}", MaxJSONDepth), "", ""},
		})
	}
	runWalkCases(t, []walkCase{
		{"deepest differs", Comparator{Kind: KindJSON}, deepest, nestedArrays(MaxJSONDepth, "2"), "$…" + strings.Repeat("[0]", 53), "$…" + strings.Repeat("[0]", 53) + `: got "1"`},
	})
	if _, err := parseJSON([]byte(nestedArrays(MaxJSONDepth+1, "1"))); err == nil {
		t.Fatal("parseJSON accepts more than MaxJSONDepth levels: the walk's bound no longer matches")
	}

	// Values too deep to walk, on either side, built directly.
	var deep any = json.Number("1")
	for range 100_000 {
		deep = []any{deep}
	}
	var limit any = json.Number("1")
	for range MaxJSONDepth {
		limit = []any{limit}
	}
	over := []any{limit}
	overObj := map[string]any{"a": limit}
	want := "$: values nested deeper than 256 levels are not compared"
	for _, c := range oracleComparators {
		for _, p := range [][2]any{{deep, deep}, {over, over}, {overObj, overObj}, {over, limit}, {limit, over}, {[]any{1, deep}, []any{}}} {
			start := time.Now()
			f := compareJSONValues(c, p[0], p[1])
			if f == nil || f.at != "$" || f.detail != want {
				t.Fatalf("%+v: got %+v, want %q", c, f, want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("refusing a deep value took %v", d)
			}
		}
		if f := compareJSONValues(c, limit, limit); f != nil {
			t.Fatalf("%+v: %d levels: %+v", c, MaxJSONDepth, f)
		}
	}
}

// TestJSONWalkBagBounds: the exhaustive search for a pairing under a
// tolerance stops at maxMatchElements elements and maxMatchWork; beyond,
// the pairing in sorted order decides, and the finding names the first
// candidate element, in the candidate's order, that it failed to pair.
func TestJSONWalkBagBounds(t *testing.T) {
	tol := Comparator{Kind: KindJSON, UnorderedArrays: true, AbsTol: 0.1}
	if 2*64 != maxMatchElements {
		t.Fatalf("maxMatchElements is %d: adjust the test", maxMatchElements)
	}
	tooLarge := "$: element [1] (an object with 1 key) differs from its counterpart in sorted order (too large to search all pairings)"
	// 128 elements a side of 45 nodes each: 128×(2×128×45) > maxMatchWork
	// (of 25 nodes each: not).
	if 128*2*128*45 <= maxMatchWork || 128*2*128*25 > maxMatchWork {
		t.Fatalf("maxMatchWork is %d: adjust the test", maxMatchWork)
	}
	tooMuchWork := "$: element [1] (an object with 2 keys) differs from its counterpart in sorted order (too large to search all pairings)"
	runWalkCases(t, []walkCase{
		{"at maxMatchElements", tol, bagOf(64, false), bagOf(64, true), "", ""},
		{"beyond maxMatchElements", tol, bagOf(65, false), bagOf(65, true), "$[1]", tooLarge},
		{"within maxMatchWork", tol, paddedBag(64, 20, false), paddedBag(64, 20, true), "", ""},
		{"beyond maxMatchWork", tol, paddedBag(64, 40, false), paddedBag(64, 40, true), "$[1]", tooMuchWork},
		// Without a tolerance, multisets of hashes decide exactly at any size.
		{"exact any size", Comparator{Kind: KindJSON, UnorderedArrays: true}, bagOf(1000, false), bagOf(1000, false), "", ""},
	})
	// Deterministic: the same finding every time, however the maps
	// inside happen to iterate.
	got, _ := parseJSON([]byte(bagOf(1000, false)))
	want, _ := parseJSON([]byte(bagOf(1000, true)))
	start := time.Now()
	first := compareJSONValues(tol, got, want)
	if first == nil || first.at != "$[1]" || first.detail != tooLarge {
		t.Fatalf("got %+v", first)
	}
	for range 20 {
		if f := compareJSONValues(tol, got, want); *f != *first {
			t.Fatalf("not deterministic: %+v then %+v", first, f)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}
