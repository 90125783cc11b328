package judge

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/strictgrade/strictgrade/schema"
)

// fuzzComparator builds a valid comparator from fuzz input: only options
// that apply to the kind are set.
func fuzzComparator(kind, flags uint8, absTol, relTol float64) Comparator {
	c := Comparator{Kind: kinds[int(kind)%len(kinds)]}
	switch c.Kind {
	case KindNumbers, KindJSON, KindCSV:
		if flags&1 != 0 && !math.IsNaN(absTol) && !math.IsInf(absTol, 0) {
			c.AbsTol = math.Abs(absTol)
		}
		if flags&2 != 0 && !math.IsNaN(relTol) && !math.IsInf(relTol, 0) {
			c.RelTol = math.Mod(math.Abs(relTol), 1)
		}
	}
	c.AllowNaN = flags&4 != 0 && (c.Kind == KindNumbers || c.Kind == KindCSV)
	c.UnorderedArrays = flags&8 != 0 && c.Kind == KindJSON
	c.IgnoreCase = flags&16 != 0 && (c.Kind == KindLines || c.Kind == KindTokens || c.Kind == KindUnorderedLines || c.Kind == KindCSV)
	c.CSVHeader = flags&32 != 0 && c.Kind == KindCSV
	return c
}

func kindIndex(k string) uint8 {
	for i, kk := range kinds {
		if kk == k {
			return uint8(i)
		}
	}
	panic(k)
}

func FuzzCompare(f *testing.F) {
	seeds := []struct {
		kind      string
		flags     uint8
		abs, rel  float64
		got, want string
	}{
		{KindExact, 0, 0, 0, "a\nb\n", "a\nb"},
		{KindLines, 16, 0, 0, "A \r\nb\n\n", "a\nb"},
		{KindTokens, 0, 0, 0, "1  2\t3", "1 2 3"},
		{KindNumbers, 1, 0.5, 0, "1.5 nan -inf 1e400", "1 NaN -Infinity 1e400"},
		{KindNumbers, 6, 0, 0.25, "3 0x10 1_0 .5 5.", "4 16 10 0.5 5"},
		{KindNumbers, 0, 0, 0, "123456789012345678901234567890", "123456789012345678901234567891"},
		{KindJSON, 0, 0, 0, `{"b":[1,2,{"c":null}],"a":1.0}`, `{"a":1,"b":[1,2,{"c":null}]}`},
		{KindJSON, 8, 0, 0, `[[2,1],[3],[1,2]]`, `[[3],[1,2],[2,1]]`},
		{KindJSON, 9, 0.1, 0, `[{"p":[1.0,5]},{"p":[1.05,3]}]`, `[{"p":[1.04,5]},{"p":[1.01,3]}]`},
		{KindJSON, 0, 0, 0, `{"a":1,"a":2}`, `{"a":1}`},
		{KindJSON, 0, 0, 0, `"\ud800"`, `"x"`},
		{KindJSON, 0, 0, 0, `[[[[[[[[1]]]]]]]]`, `[[[[[[[[2]]]]]]]]`},
		{KindUnorderedLines, 16, 0, 0, "b\nA\na\n", "a\nb\na"},
		{KindCSV, 33, 1e-6, 0, "H,x\r\n1.0000001,\"a,b\"\n", "H,x\n1,\"a,b\"\n"},
		{KindCSV, 4, 0, 0, "nan,\"q\"\"\"\n", "NaN,\"q\"\"\"\n"},
		{KindCSV, 0, 0, 0, "a\"b\n", "ab\n"},
	}
	for _, s := range seeds {
		f.Add(kindIndex(s.kind), s.flags, s.abs, s.rel, []byte(s.got), []byte(s.want))
	}
	f.Fuzz(func(t *testing.T, kind, flags uint8, absTol, relTol float64, got, want []byte) {
		c := fuzzComparator(kind, flags, absTol, relTol)
		if err := c.Validate(); err != nil {
			t.Fatalf("fuzzComparator made an invalid comparator %+v: %v", c, err)
		}
		r := Compare(c, got, want)
		if r.Equal != (r.Reason == "") {
			t.Fatalf("Equal %v with reason %q", r.Equal, r.Reason)
		}
		if r.DecidedBy != c.Kind {
			t.Fatalf("DecidedBy %q, want %q", r.DecidedBy, c.Kind)
		}
		if !utf8.ValidString(r.Reason) || !textRule.MatchString(r.Reason) || encodedLen(r.Reason) > maxCaseReasonBytes {
			t.Fatalf("unsafe reason %q", r.Reason)
		}
		if !r.Equal && checkExpected(c, want) == nil && !digestReason.MatchString(r.Reason) {
			t.Fatalf("digest reason %q says more than a position and a summary", r.Reason)
		}
		detailed := CompareFor(schema.DisclosureDetailed, c, got, want)
		if detailed.Equal != r.Equal || !textRule.MatchString(detailed.Reason) || encodedLen(detailed.Reason) > maxCaseReasonBytes {
			t.Fatalf("detailed result %+v for digest result %+v", detailed, r)
		}
		if again := Compare(c, got, want); again != r {
			t.Fatalf("not deterministic: %+v then %+v", r, again)
		}
		// Every usable expected value equals itself.
		if checkExpected(c, got) == nil {
			if self := Compare(c, got, got); !self.Equal {
				t.Fatalf("%+v: %q does not equal itself: %s", c, got, self.Reason)
			}
		}
		// The equality go-cmp decides and the one bag uses between
		// elements agree wherever the exhaustive pairing plays no part.
		if c.Kind == KindJSON && (!c.UnorderedArrays || c.tolerance().exact()) {
			gv, err1 := parseJSON(got)
			wv, err2 := parseJSON(want)
			if err1 == nil && err2 == nil {
				j := &jsonCmp{tol: c.tolerance(), unordered: c.UnorderedArrays}
				if a, b := gocmp.Equal(gv, wv, j.options()), j.equal(gv, wv); a != b {
					t.Fatalf("go-cmp says %v, jsonCmp.equal says %v", a, b)
				}
			}
		}
	})
}

// FuzzJudgeValue feeds arbitrary bytes as the function shim's record. The
// judge must never fail to judge because of them, must emit a schema-valid
// verdict, and may pass only a well-formed record holding the expected
// value.
func FuzzJudgeValue(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"value":[1,2,{"a":null}]}`,
		`{"ok":true,"value":[1.0,2e0,{"a":null}]}`,
		`{"ok":false,"error":"ZeroDivisionError: division by zero"}`,
		`{"ok":true,"value":{"x":[1.5,2],"y":"s"}}`,
		`{"ok":true,"value":0,"value":1}`,
		`{"ok":true}`,
		`PASS`,
		"{\"ok\":true,\"value\":\"\xff\"}",
		`{"ok":true,"value":"\ud800"}`,
	} {
		f.Add(uint8(0), uint8(0), []byte(s))
	}
	seeds, _ := filepath.Glob(filepath.Join("testdata", "input", "*", "outputs", "*", "files", ValueFile))
	for _, p := range seeds {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(uint8(1), uint8(8), data)
		}
	}
	expected := []string{`[1,2,{"a":null}]`, `0`, `{"x":[1.5,2],"y":"s"}`, `"s"`, `null`, `[[1,2],[3]]`}
	f.Fuzz(func(t *testing.T, which, flags uint8, rec []byte) {
		want := expected[int(which)%len(expected)]
		c := fuzzComparator(kindIndex(KindJSON), flags, 0.5, 1e-6)
		cases := &Cases{Compare: c, Cases: []Case{{ID: "only", Args: []byte(`[]`), Expected: []byte(want)}}}
		in := &Input{
			Meta:    Meta{Verdict: skeleton(schema.KindFunction), Kind: schema.KindFunction},
			Cases:   cases,
			Outputs: []Output{{Result: exited(0), Files: map[string]*Blob{ValueFile: {Data: rec}}}},
		}
		v, err := Judge(in)
		if err != nil {
			t.Fatalf("Judge: %v", err)
		}
		mustValidate(t, v)
		if r := v.Cases[0].Reason; !digestText.MatchString(r) {
			t.Fatalf("the default policy's reason %q quotes text", r)
		}
		if v.Outcome != schema.OutcomePass {
			return
		}
		r, err := parseRecord(rec)
		if err != nil || !r.ok {
			t.Fatalf("PASS for a record that is not a value: %q (%v)", rec, err)
		}
		wv, _ := parseJSON([]byte(want))
		j := &jsonCmp{tol: c.tolerance(), unordered: c.UnorderedArrays}
		if !j.equal(r.value, wv) && !c.UnorderedArrays {
			t.Fatalf("PASS for %q, which does not equal %s", rec, want)
		}
	})
}
