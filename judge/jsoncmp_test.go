package judge

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/schema"
)

func TestCompareJSON(t *testing.T) {
	c := Comparator{Kind: KindJSON}
	rel := Comparator{Kind: KindJSON, RelTol: 1e-9}
	abs := Comparator{Kind: KindJSON, AbsTol: 0.5}
	bag := Comparator{Kind: KindJSON, UnorderedArrays: true}
	bagAbs := Comparator{Kind: KindJSON, UnorderedArrays: true, AbsTol: 1}
	bagTol := Comparator{Kind: KindJSON, UnorderedArrays: true, AbsTol: 0.1}
	runCompareTable(t, []compareCase{
		{"key order", c, `{"b":2,"a":1}`, `{"a":1,"b":2}`, true, ""},
		{"white space", c, " [1, 2]\n", `[1,2]`, true, ""},
		{"number spellings", c, `[1.0, 1e2, -0, 0.5e1]`, `[1, 100, 0, 5]`, true, ""},
		{"big integers exact", c, `12345678901234567891`, `12345678901234567890`, false, `$: got "12345678901234567891"`},
		{"floats exact by decimal", c, `0.30000000000000004`, `0.3`, false, `$: got "0.30000000000000004"`},
		{"relative tolerance", rel, `{"mean": 2.0000000001}`, `{"mean": 2}`, true, ""},
		{"relative tolerance exceeded", rel, `{"mean": 2.001}`, `{"mean": 2}`, false, `$.mean: got "2.001", not within the tolerance`},
		{"absolute tolerance nested", abs, `{"a":[1.4, {"b": -0.4}]}`, `{"a":[1, {"b": 0}]}`, true, ""},
		{"tolerance beyond float64", abs, `1e400`, `1e400`, true, ""},
		{"string is not number", c, `"1"`, `1`, false, `$: got string "1", want a number`},
		{"null is not false", c, `null`, `false`, false, "$: got null, want a boolean"},
		{"bool differs", c, `[true]`, `[false]`, false, "$[0]: got true"},
		{"nested path", c, `{"a":{"b":[1,2,3]}}`, `{"a":{"b":[1,2,4]}}`, false, `$.a.b[2]: got "3"`},
		{"odd key", c, `{"a b":1}`, `{"a b":2}`, false, `$["a b"]: got "1"`},
		{"missing key", c, `{"a":1}`, `{"a":1,"b":2}`, false, `$: lacks a key the expected object has`},
		{"extra key escaped", c, `{"a":1,"z\n\u202e":2}`, `{"a":1}`, false, `$: unexpected key "z\n\u202e"`},
		{"nested missing key", c, `{"a":[{"b":1}]}`, `{"a":[{"c":1}]}`, false, `$.a[0]: lacks a key the expected object has`},
		{"same count other keys", c, `{"a":1,"x":2}`, `{"a":1,"b":2}`, false, `$: lacks a key the expected object has`},
		{"index in a long array", c, `[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]`, `[0,1,2,3,4,5,6,7,8,9,10,11,12,13,99,15,16,17,18,19]`, false, `$[14]: got "14"`},
		{"first of several differences", c, `[0,1,2,3,{"k":[1,2,3]},5,6,7,8]`, `[0,1,2,3,{"k":[1,2,4]},5,6,7,9]`, false, `$[4].k[2]: got "3"`},
		{"array shorter", c, `[1,2]`, `[1,2,3]`, false, "$: got an array of 2 elements, want 3"},
		{"array longer", c, `{"x":[1,2,3,4]}`, `{"x":[1,2,3]}`, false, "$.x: got an array of 4 elements, want 3"},
		{"order matters", c, `[2,1]`, `[1,2]`, false, `$[0]: got "2"`},
		{"object vs array", c, `{}`, `[]`, false, "$: got an object with 0 keys, want an array"},
		{"unicode strings", c, `"caf\u00e9"`, `"café"`, true, ""},
		{"string differs", c, `"Café"`, `"café"`, false, `$: got string "Café"`},
		{"empty containers", c, `{"a":[],"b":{}}`, `{"b":{},"a":[]}`, true, ""},

		{"duplicate key in candidate", c, `{"a":1,"a":1}`, `{"a":1}`, false, `not valid JSON: duplicate object key "a" at offset 7`},
		{"nested duplicate key", c, `[{"x":{"k":1,"k":2}}]`, `[{"x":{"k":2}}]`, false, "duplicate object key"},
		{"trailing data", c, `{} {}`, `{}`, false, "not valid JSON: data after the JSON value at offset 3"},
		{"trailing garbage", c, `1x`, `1`, false, "not valid JSON"},
		{"NaN literal", c, `NaN`, `1`, false, "not valid JSON: syntax error"},
		{"Infinity literal", c, `[Infinity]`, `[1]`, false, "not valid JSON"},
		{"lone surrogate", c, `"\ud800"`, `"\ufffd"`, false, "unpaired surrogate escape"},
		{"lone low surrogate", c, `"a\udc00b"`, `"a\ufffdb"`, false, "unpaired surrogate escape"},
		{"surrogate pair ok", c, `"\ud83d\ude00"`, `"😀"`, true, ""},
		{"literal replacement char ok", c, `"\ufffd"`, "\"\uFFFD\"", true, ""},
		{"invalid utf8", c, "\"\xff\"", `"x"`, false, "not valid JSON: not valid UTF-8"},
		{"empty", c, ``, `1`, false, "not valid JSON: unexpected end of input"},
		{"truncated", c, `{"a":[1,2`, `1`, false, "unexpected end of input"},
		{"comment", c, `1 // x`, `1`, false, "not valid JSON"},
		{"number out of range", c, `1e999999999999999999`, `1`, false, "exponent out of range"},
		{"too deep", c, strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1), `1`, false, "nested deeper than 256 levels"},

		{"unordered permutation", bag, `[3,1,2]`, `[1,2,3]`, true, ""},
		{"unordered numbers by value", bag, `[1.0,2e0]`, `[2,1]`, true, ""},
		{"unordered duplicates", bag, `[1,2,1]`, `[1,1,2]`, true, ""},
		{"unordered duplicate counts differ", bag, `[1,1,2]`, `[1,2,2]`, false, `$: element [1] (number "1") has no match`},
		{"unordered length", bag, `[1,2]`, `[1,2,2]`, false, "$: got an array of 2 elements, want 3 (compared without order)"},
		{"unordered nested arrays", bag, `[[1,2],[3]]`, `[[3],[2,1]]`, true, ""},
		{"unordered objects", bag, `[{"a":1},{"b":[2,1]}]`, `[{"b":[1,2]},{"a":1}]`, true, ""},
		{"unordered inside object", bag, `{"k":[2,1],"v":[1]}`, `{"k":[1,2],"v":[2]}`, false, `$.v: element [0] (number "1") has no match`},
		{"unordered type matters", bag, `["1",1]`, `[1,1]`, false, `element [0] (string "1")`},
		{"unordered tolerance needs sorted pairing", bagAbs, `[1.0,0.1]`, `[1.9,1]`, true, ""},
		{"unordered tolerance fails", bagAbs, `[0,5]`, `[0,3]`, false, `$: element [1] (number "5") has no match`},
		{"unordered tolerance needs matching", bagTol,
			`[{"p":[1.0,5]},{"p":[1.05,3]}]`, `[{"p":[1.04,5]},{"p":[1.01,3]}]`, true, ""},
		{"unordered tolerance strings exact", bagTol, `["a","b"]`, `["b","a"]`, true, ""},
	})
}

// TestCompareJSONDeep guards against go-cmp's slice diff, whose cost
// doubles with each level of nesting.
func TestCompareJSONDeep(t *testing.T) {
	deep := strings.Repeat("[", 200) + "1" + strings.Repeat("]", 200)
	deepObj := strings.Repeat(`{"a":[1,`, 120) + "0" + strings.Repeat("]}", 120)
	wide := "[" + strings.Repeat("1,", 50000) + "1]"
	for _, c := range []Comparator{{Kind: KindJSON}, {Kind: KindJSON, UnorderedArrays: true}, {Kind: KindJSON, UnorderedArrays: true, RelTol: 1e-9}} {
		for _, doc := range []string{deep, deepObj, wide} {
			start := time.Now()
			r := Compare(c, []byte(doc), []byte(doc))
			if !r.Equal {
				t.Fatalf("%+v: a document does not equal itself: %s", c, r.Reason)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%+v: comparing %d bytes took %v", c, len(doc), d)
			}
		}
	}
}

// TestCompareJSONUnorderedBounded: a large unordered array under a
// tolerance whose sorted pairing fails is not searched exhaustively.
func TestCompareJSONUnorderedBounded(t *testing.T) {
	var got, want strings.Builder
	got.WriteString("[")
	want.WriteString("[")
	for i := 0; i < 2000; i++ {
		if i > 0 {
			got.WriteString(",")
			want.WriteString(",")
		}
		got.WriteString(`{"v":` + strconv.Itoa(i) + `}`)
		want.WriteString(`{"v":` + strconv.Itoa(i+1) + `}`)
	}
	got.WriteString("]")
	want.WriteString("]")
	c := Comparator{Kind: KindJSON, UnorderedArrays: true, AbsTol: 0.5}
	start := time.Now()
	r := CompareFor(schema.DisclosureDetailed, c, []byte(got.String()), []byte(want.String()))
	if r.Equal || !strings.Contains(r.Reason, "too large to search all pairings") {
		t.Fatalf("got %+v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}
