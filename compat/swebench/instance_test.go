package swebench

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// validInstance is a well-formed instance, as a map the cases change.
func validInstance() map[string]any {
	return map[string]any{
		"repo":              "textkit/textkit",
		"instance_id":       "textkit__textkit-1",
		"base_commit":       strings.Repeat("ab", 20),
		"patch":             "diff --git a/x.py b/x.py\n",
		"test_patch":        "diff --git a/tests/test_x.py b/tests/test_x.py\n",
		"problem_statement": "Fix it.\n",
		"FAIL_TO_PASS":      []string{"tests/test_x.py::test_a", "tests/test_x.py::TestB::test_c[1-2]"},
		"PASS_TO_PASS":      `["tests/test_y.py::test_d"]`,
		"hints_text":        "",
		"created_at":        "2024-01-01T00:00:00Z",
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseInstance(t *testing.T) {
	in, err := ParseInstance(marshal(t, validInstance()))
	if err != nil {
		t.Fatal(err)
	}
	want := &Instance{
		Repo: "textkit/textkit", InstanceID: "textkit__textkit-1", BaseCommit: strings.Repeat("ab", 20),
		Patch: "diff --git a/x.py b/x.py\n", TestPatch: "diff --git a/tests/test_x.py b/tests/test_x.py\n",
		ProblemStatement: "Fix it.\n",
		FailToPass:       []string{"tests/test_x.py::test_a", "tests/test_x.py::TestB::test_c[1-2]"},
		PassToPass:       []string{"tests/test_y.py::test_d"},
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("instance (-want +got):\n%s", diff)
	}
}

func TestParseInstanceIgnored(t *testing.T) {
	inst := validInstance()
	inst["image_name"] = "x"
	inst["difficulty"] = 3
	inst["version"] = "1.0" // known, not listed
	in, err := ParseInstance(marshal(t, inst))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"difficulty", "image_name"}, in.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
}

func TestParseInstanceEmptyPassToPass(t *testing.T) {
	inst := validInstance()
	inst["PASS_TO_PASS"] = "[]"
	in, err := ParseInstance(marshal(t, inst))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.PassToPass) != 0 {
		t.Errorf("PassToPass = %q", in.PassToPass)
	}
}

func TestParseInstanceRefused(t *testing.T) {
	cases := []struct {
		name   string
		change func(map[string]any)
		raw    string // used instead of the changed instance when set
		want   []string
	}{
		{name: "missing fields", change: func(m map[string]any) { delete(m, "patch"); delete(m, "FAIL_TO_PASS") },
			want: []string{"missing required field(s): patch, FAIL_TO_PASS"}},
		{name: "missing problem statement", change: func(m map[string]any) { delete(m, "problem_statement") },
			want: []string{"missing required field(s): problem_statement"}},
		{name: "not a string", change: func(m map[string]any) { m["test_patch"] = 7 },
			want: []string{"test_patch must be a string"}},
		{name: "empty string", change: func(m map[string]any) { m["patch"] = "" },
			want: []string{"patch is empty"}},
		{name: "bad repo", change: func(m map[string]any) { m["repo"] = "https://github.com/a/b" },
			want: []string{"must be of the form owner/name"}},
		{name: "bad instance id", change: func(m map[string]any) { m["instance_id"] = "-x y" },
			want: []string{"instance_id: task id"}},
		{name: "short base commit", change: func(m map[string]any) { m["base_commit"] = "abc123" },
			want: []string{"base_commit \"abc123\" must be a full commit id"}},
		{name: "ids not a list", change: func(m map[string]any) { m["FAIL_TO_PASS"] = 3 },
			want: []string{"FAIL_TO_PASS: must be an array of strings"}},
		{name: "ids string not JSON", change: func(m map[string]any) { m["PASS_TO_PASS"] = "tests/test_y.py::test_d" },
			want: []string{"PASS_TO_PASS: the string does not hold strict JSON"}},
		{name: "ids string of a non-list", change: func(m map[string]any) { m["PASS_TO_PASS"] = `{"a": 1}` },
			want: []string{"PASS_TO_PASS: must be an array of strings"}},
		{name: "no hidden tests", change: func(m map[string]any) { m["FAIL_TO_PASS"] = "[]" },
			want: []string{"FAIL_TO_PASS is empty"}},
		{name: "django ids", change: func(m map[string]any) {
			m["FAIL_TO_PASS"] = []string{"test_lookup (lookup.tests.LookupTests)"}
		}, want: []string{"FAIL_TO_PASS: entry 1", "only instances whose tests are pytest node ids"}},
		{name: "sympy ids", change: func(m map[string]any) { m["PASS_TO_PASS"] = []string{"test_sqrt"} },
			want: []string{"PASS_TO_PASS: entry 1", "pytest node ids"}},
		{name: "option-like id", change: func(m map[string]any) { m["FAIL_TO_PASS"] = []string{"--co"} },
			want: []string{"starts with '-'"}},
		{name: "duplicate id", change: func(m map[string]any) {
			m["FAIL_TO_PASS"] = []string{"tests/test_x.py::test_a", "tests/test_x.py::test_a"}
		}, want: []string{"listed twice"}},
		{name: "both suites", change: func(m map[string]any) {
			m["PASS_TO_PASS"] = []string{"tests/test_x.py::test_a"}
		}, want: []string{"tests/test_x.py::test_a is in both FAIL_TO_PASS and PASS_TO_PASS"}},
		{name: "several problems", change: func(m map[string]any) { m["repo"] = 1; m["base_commit"] = "x" },
			want: []string{"repo must be a string", "base_commit \"x\""}},
		{name: "duplicate key", raw: `{"repo": "a/b", "repo": "c/d"}`, want: []string{"not strict JSON"}},
		{name: "not an object", raw: `["a"]`, want: []string{"not a JSON object"}},
		{name: "null", raw: `null`, want: []string{"not a JSON object"}},
		{name: "trailing data", raw: `{} {}`, want: []string{"not strict JSON"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(c.raw)
			if c.raw == "" {
				inst := validInstance()
				c.change(inst)
				data = marshal(t, inst)
			}
			in, err := ParseInstance(data)
			if err == nil {
				t.Fatalf("accepted: %+v", in)
			}
			if !errors.Is(err, ErrRefused) {
				t.Errorf("%v does not wrap ErrRefused", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestMentions(t *testing.T) {
	src := []byte("import pytest\n\nclass TestB:\n    def test_c(self): pass\n\ndef test_a():\n    pass\ntest_gen = make()\n")
	cases := []struct {
		id   string
		want bool
	}{
		{"t.py::test_a", true},
		{"t.py::TestB::test_c", true},
		{"t.py::TestB::test_inherited", true}, // only the first name is looked for
		{"t.py::test_a[1-2]", true},
		{"t.py::test_gen", true},
		{"t.py::test", false}, // a prefix of test_a is not a mention
		{"t.py::est_a", false},
		{"t.py::test_zz", false},
		{"t.py::TestC::test_c", false},
	}
	for _, c := range cases {
		if got := mentions(src, firstName(c.id)); got != c.want {
			t.Errorf("%s: mentions = %v, want %v", c.id, got, c.want)
		}
	}
}

func TestPythonPath(t *testing.T) {
	cases := []struct {
		files []string
		want  []string
	}{
		{[]string{"pkg/__init__.py", "tests/test_a.py"}, []string{"."}},
		{[]string{"src/pkg/__init__.py", "src/pkg/a.py"}, []string{".", "src"}},
		{[]string{"src/mod.py"}, []string{".", "src"}},
		{[]string{"src/__init__.py", "src/a/b/c.py"}, []string{"."}},
		{[]string{"docs/src/pkg/__init__.py"}, []string{"."}},
	}
	for _, c := range cases {
		m := map[string]treeEntry{}
		for _, f := range c.files {
			m[f] = treeEntry{mode: "100644", typ: "blob"}
		}
		if diff := cmp.Diff(c.want, pythonPath(m)); diff != "" {
			t.Errorf("%v (-want +got):\n%s", c.files, diff)
		}
	}
}

func TestTitle(t *testing.T) {
	in := &Instance{Repo: "a/b", InstanceID: "a__b-1", ProblemStatement: "\n\n  Fix\tthe \u202ething\u0007 please  \nmore\n"}
	if got, want := title(in), "a/b a__b-1: Fix the  thing  please"; got != want {
		t.Errorf("title = %q, want %q", got, want)
	}
	in.ProblemStatement = strings.Repeat("é", 300)
	if got := title(in); len(got) > 200 || !strings.HasPrefix(got, "a/b a__b-1: éé") {
		t.Errorf("long title = %q (%d bytes)", got, len(got))
	}
}
