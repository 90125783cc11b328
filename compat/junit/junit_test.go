package junit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/schema"
)

// The reports under testdata were written by pytest 7.2.1 (the
// oracle image's) for tests/test_a.py and tests/test_b.py of a small
// package; see the node ids below.

func readReport(t *testing.T, name string) *Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

type want struct {
	kind  Kind
	flags []schema.Flag
	text  string // a substring of the reason
}

func checkOutcomes(t *testing.T, sr Result, wants map[string]want) {
	t.Helper()
	for id, w := range wants {
		o, ok := sr.Outcomes[id]
		if !ok {
			t.Errorf("%s: no outcome", id)
			continue
		}
		if o.Kind != w.kind || !cmp.Equal(o.Flags, w.flags) || !strings.Contains(o.Reason, w.text) {
			t.Errorf("%s: got %s %v %q, want %s %v containing %q", id, o.Kind, o.Flags, o.Reason, w.kind, w.flags, w.text)
		}
	}
}

func TestClassifyMixed(t *testing.T) {
	ids := []string{
		"tests/test_a.py::test_ok", "tests/test_a.py::test_bad", "tests/test_a.py::test_imp",
		"tests/test_a.py::test_fix", "tests/test_a.py::test_xpass", "tests/test_a.py::test_xfail",
		"tests/test_a.py::test_p[x::y]", "tests/test_a.py::test_p[p.q/r]", "tests/test_a.py::TestC::test_m",
		"tests/test_a.py::test_never_reported",
	}
	sr := Classify(readReport(t, "mixed.xml"), ids, "")
	checkOutcomes(t, sr, map[string]want{
		"tests/test_a.py::test_ok":             {KindPass, nil, ""},
		"tests/test_a.py::test_bad":            {KindFail, nil, "failure: assert 1 == 2"},
		"tests/test_a.py::test_imp":            {KindFail, []schema.Flag{schema.FlagImportError}, "ImportError: cannot import name 'nothere'"},
		"tests/test_a.py::test_fix":            {KindFail, []schema.Flag{schema.FlagMissingFixture}, "fixture 'nofixture' not found"},
		"tests/test_a.py::test_xpass":          {KindXfail, []schema.Flag{schema.FlagXfail}, "xpass"},
		"tests/test_a.py::test_xfail":          {KindXfail, []schema.Flag{schema.FlagXfail}, "xfail"},
		"tests/test_a.py::test_p[x::y]":        {KindPass, nil, ""},
		"tests/test_a.py::test_p[p.q/r]":       {KindPass, nil, ""},
		"tests/test_a.py::TestC::test_m":       {KindPass, nil, ""},
		"tests/test_a.py::test_never_reported": {KindMissing, []schema.Flag{schema.FlagMissing}, "not in the report"},
	})
	if sr.Extra != 0 || sr.Duplicates != 0 || sr.CollectProblems != 0 {
		t.Fatalf("extra %d, duplicates %d, collection problems %d", sr.Extra, sr.Duplicates, sr.CollectProblems)
	}
	// Asking for fewer tests turns the others into extras.
	if sr := Classify(readReport(t, "mixed.xml"), ids[:1], ""); sr.Extra != 8 {
		t.Fatalf("extra %d, want 8", sr.Extra)
	}
}

func TestClassifyCollection(t *testing.T) {
	tests := []struct {
		report string
		ids    []string
		wants  map[string]want
	}{
		{"collect-error.xml", []string{"tests/test_a.py::test_ok", "tests/test_b.py::test_b"}, map[string]want{
			// pytest stops at the first module that cannot be collected
			// when it is given node ids: test_a never ran.
			"tests/test_a.py::test_ok": {KindMissing, []schema.Flag{schema.FlagMissing}, "collection problem in another module"},
			"tests/test_b.py::test_b":  {KindFail, []schema.Flag{schema.FlagMissing, schema.FlagImportError}, "ImportError: cannot import name 'missing'"},
		}},
		{"sys-exit.xml", []string{"tests/test_a.py::test_ok", "tests/test_b.py::test_b"}, map[string]want{
			"tests/test_a.py::test_ok": {KindFail, []schema.Flag{schema.FlagMissing, schema.FlagImportError}, "SystemExit: 0"},
			"tests/test_b.py::test_b":  {KindFail, []schema.Flag{schema.FlagMissing, schema.FlagImportError}, "SystemExit: 0"},
		}},
		{"module-skip.xml", []string{"tests/test_a.py::test_ok"}, map[string]want{
			"tests/test_a.py::test_ok": {KindSkipped, []schema.Flag{schema.FlagMissing, schema.FlagSkipped}, "Skipped: nope"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.report, func(t *testing.T) {
			sr := Classify(readReport(t, tt.report), tt.ids, "")
			checkOutcomes(t, sr, tt.wants)
			if sr.CollectProblems == 0 {
				t.Fatal("no collection problem counted")
			}
		})
	}
	// A collection report for a module nobody asked about is an extra.
	if sr := Classify(readReport(t, "sys-exit.xml"), []string{"tests/test_a.py::test_ok"}, ""); sr.Extra != 1 {
		t.Fatalf("extra %d, want 1", sr.Extra)
	}
}

func TestClassifyNoReport(t *testing.T) {
	sr := Classify(nil, []string{"t/test_x.py::test_a"}, "no report: pytest exited with code 0")
	checkOutcomes(t, sr, map[string]want{
		"t/test_x.py::test_a": {KindMissing, []schema.Flag{schema.FlagMissing}, "exited with code 0"},
	})
}

func TestClassifyDuplicate(t *testing.T) {
	rep, err := Parse([]byte(`<testsuites><testsuite><testcase classname="t.test_x" name="test_a"/><testcase classname="t.test_x" name="test_a"/></testsuite></testsuites>`))
	if err != nil {
		t.Fatal(err)
	}
	sr := Classify(rep, []string{"t/test_x.py::test_a"}, "")
	checkOutcomes(t, sr, map[string]want{"t/test_x.py::test_a": {KindFail, nil, "reported 2 times"}})
}

func TestKeyOf(t *testing.T) {
	tests := []struct {
		id   string
		want Key
	}{
		{"tests/test_a.py::test_ok", Key{"tests.test_a", "test_ok"}},
		{"test_a.py::TestC::test_m", Key{"test_a.TestC", "test_m"}},
		{"tests/test_a.py::test_p[x::y/z.py]", Key{"tests.test_a", "test_p[x::y/z.py]"}},
		{"a/b.py/c.py::t", Key{"a.b.py.c", "t"}},
	}
	for _, tt := range tests {
		if got := KeyOf(tt.id); got != tt.want {
			t.Errorf("KeyOf(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct{ name, xml, want string }{
		{"empty", "", "empty"},
		{"not xml", "PASSED everything", "empty"},
		{"broken", "<testsuites><testsuite>", "well-formed"},
		{"dtd", `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><testsuites/>`, "DTD"},
		{"unknown entity", `<testsuites><testsuite><testcase name="&a;"/></testsuite></testsuites>`, "well-formed"},
		{"other encoding", `<?xml version="1.0" encoding="latin-1"?><testsuites/>`, "well-formed"},
		{"unknown element", `<testsuites><testsuite><testcase name="a"><passed/></testcase></testsuite></testsuites>`, "unexpected element <passed>"},
		{"testcase at the root", `<testcase name="a"/>`, "unexpected element <testcase>"},
		{"failure outside a testcase", `<testsuites><testsuite><failure/></testsuite></testsuites>`, "unexpected element <failure>"},
		{"namespaced", `<testsuites xmlns="urn:x"/>`, "unexpected element"},
		{"two roots", `<testsuites/><testsuites/>`, "more than one root"},
		{"nameless testcase", `<testsuites><testsuite><testcase classname="a"/></testsuite></testsuites>`, "without a name"},
		{"bad time", `<testsuites><testsuite><testcase name="a" time="NaN"/></testsuite></testsuites>`, "bad time"},
		{"negative time", `<testsuites><testsuite><testcase name="a" time="-1"/></testsuite></testsuites>`, "bad time"},
		{"late processing instruction", `<testsuites><?evil x?></testsuites>`, "processing instruction"},
		{"too large", "<testsuites>" + strings.Repeat(" ", MaxReportBytes) + "</testsuites>", "larger than"},
		{"too deep", strings.Repeat("<testsuites>", 1) + "<testsuite><testcase name='a'><properties><property><x/></property></properties></testcase></testsuite></testsuites>", "unexpected element <x>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.xml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestParseKeepsTextBounded(t *testing.T) {
	long := strings.Repeat("é", 3*keepText)
	rep, err := Parse([]byte(`<testsuites><testsuite><testcase name="a"><failure message="` + long + `">` + long + `</failure></testcase></testsuite></testsuites>`))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.cases[0].results[0]
	if len(r.message) > keepText || len(r.text) > keepText || !strings.HasPrefix(long, r.message) || !strings.HasPrefix(long, r.text) {
		t.Fatalf("kept %d and %d bytes", len(r.message), len(r.text))
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.xml"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Parse(data)
		if err != nil {
			return
		}
		sr := Classify(rep, []string{"tests/test_a.py::test_ok", "tests/test_b.py::test_b"}, "")
		if len(sr.Outcomes) != 2 {
			t.Fatalf("%d outcomes for 2 ids", len(sr.Outcomes))
		}
	})
}
