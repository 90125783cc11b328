package judge

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strictgrade/strictgrade/schema"
)

func TestLoadCasesValid(t *testing.T) {
	tests := []struct {
		name string
		kind schema.TaskKind
		data string
		want *Cases
	}{
		{
			name: "function with default comparator",
			kind: schema.KindFunction,
			data: `{"cases":[{"id":"empty","args":[[]],"expected":0},{"id":"neg-1","args":[[-1,-2]],"expected":-3}]}`,
			want: &Cases{Compare: Comparator{Kind: KindJSON}, Cases: []Case{
				{ID: "empty", Args: []byte(`[[]]`), Expected: []byte(`0`)},
				{ID: "neg-1", Args: []byte(`[[-1,-2]]`), Expected: []byte(`-3`)},
			}},
		},
		{
			name: "function with tolerance and null expected",
			kind: schema.KindFunction,
			data: `{"compare":{"kind":"json","rel_tol":1e-9},"cases":[{"id":"a","args":[],"expected":null}]}`,
			want: &Cases{Compare: Comparator{Kind: KindJSON, RelTol: 1e-9}, Cases: []Case{
				{ID: "a", Args: []byte(`[]`), Expected: []byte(`null`)},
			}},
		},
		{
			name: "command",
			kind: schema.KindCommand,
			data: `{"cases":[{"id":"t1","argv":["-n","3"],"stdin":"a b\n","expected_stdout":"b 1\n"},` +
				`{"id":"usage","argv":["--bad"],"expected_exit":2},` +
				`{"id":"nums","stdin":"1 2","expected_stdout":"3","compare":{"kind":"numbers","abs_tol":0.5}}]}`,
			want: &Cases{Compare: Comparator{Kind: KindLines}, Cases: []Case{
				{ID: "t1", Argv: []string{"-n", "3"}, Stdin: "a b\n", ExpectedStdout: ptr("b 1\n")},
				{ID: "usage", Argv: []string{"--bad"}, ExpectedExit: ptr(2)},
				{ID: "nums", Stdin: "1 2", ExpectedStdout: ptr("3"), Compare: &Comparator{Kind: KindNumbers, AbsTol: 0.5}},
			}},
		},
		{
			name: "data",
			kind: schema.KindData,
			data: `{"compare":{"kind":"json","rel_tol":1e-9},"cases":[{"id":"small","input_files":{"data.csv":"in/small.csv"},"expected_files":{"stats.json":"out/small.json"}}]}`,
			want: &Cases{Compare: Comparator{Kind: KindJSON, RelTol: 1e-9}, Cases: []Case{
				{ID: "small", InputFiles: map[string]string{"data.csv": "in/small.csv"}, ExpectedFiles: map[string]string{"stats.json": "out/small.json"}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadCases([]byte(tt.data), tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LoadCases (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestLoadCasesErrors(t *testing.T) {
	fn, cmd, data := schema.KindFunction, schema.KindCommand, schema.KindData
	tests := []struct {
		name string
		kind schema.TaskKind
		data string
		want string
	}{
		{"repository kind", schema.KindRepository, `{"cases":[]}`, `task kind "repository" has no hidden cases`},
		{"not json", fn, `{`, "unexpected end of input"},
		{"trailing data", fn, `{"cases":[]} x`, "data after the JSON value"},
		{"duplicate key", fn, `{"cases":[],"cases":[]}`, `duplicate object key "cases"`},
		{"duplicate key in a case", fn, `{"cases":[{"id":"a","id":"b","args":[],"expected":1}]}`, `duplicate object key "id"`},
		{"unknown top-level field", fn, `{"cases":[],"extra":1}`, `unknown field "extra"`},
		{"field in another case", fn, `{"Cases":[]}`, `unknown field "Cases"`},
		{"cases missing", fn, `{}`, "the cases field is missing"},
		{"no cases", fn, `{"cases":[]}`, "there are no cases"},
		{"not an object", fn, `[]`, "cannot unmarshal array"},
		{"case not an object", fn, `{"cases":[1]}`, "cases[0]"},
		{"unknown case field", fn, `{"cases":[{"id":"a","args":[],"expected":1,"hint":2}]}`, `cases[0]: $: unknown field "hint"`},
		{"case field in another case", fn, `{"cases":[{"ID":"a","args":[],"expected":1}]}`, `unknown field "ID"`},
		{"empty id", fn, `{"cases":[{"id":"","args":[],"expected":1}]}`, `cases[0]: id: "" must be 1 to 64 characters`},
		{"missing id", fn, `{"cases":[{"args":[],"expected":1}]}`, "cases[0]: id"},
		{"long id", fn, `{"cases":[{"id":"` + strings.Repeat("a", 65) + `","args":[],"expected":1}]}`, "must be 1 to 64 characters"},
		{"id with slash", fn, `{"cases":[{"id":"a/b","args":[],"expected":1}]}`, `"a/b" may only hold`},
		{"id with space", fn, `{"cases":[{"id":"a b","args":[],"expected":1}]}`, "may only hold"},
		{"duplicate id", fn, `{"cases":[{"id":"a","args":[],"expected":1},{"id":"a","args":[],"expected":2}]}`, `cases[1] (id "a"): id already used by cases[0]`},
		{"id of wrong type", fn, `{"cases":[{"id":5,"args":[],"expected":1}]}`, "cases[0]: json: cannot unmarshal number"},
		{"function without expected", fn, `{"cases":[{"id":"a","args":[]}]}`, `cases[0] (id "a"): function cases need args and expected`},
		{"function args not array", fn, `{"cases":[{"id":"a","args":{"x":1},"expected":1}]}`, "args must be a JSON array"},
		{"function with argv", fn, `{"cases":[{"id":"a","args":[],"expected":1,"argv":["x"]}]}`, "field argv does not apply to function tasks"},
		{"function with other comparator", fn, `{"compare":{"kind":"lines"},"cases":[{"id":"a","args":[],"expected":1}]}`, "compare: function tasks compare return values with kind json or checker, not lines"},
		{"function case comparator", fn, `{"cases":[{"id":"a","args":[],"expected":1,"compare":{"kind":"exact"}}]}`, `cases[0] (id "a"): compare: function tasks compare`},
		{"function expected NaN", fn, `{"cases":[{"id":"a","args":[],"expected":NaN}]}`, "syntax error"},
		{"comparator without kind", fn, `{"compare":{"rel_tol":0.1},"cases":[{"id":"a","args":[],"expected":1}]}`, `compare: judge: invalid comparator: kind ""`},
		{"case comparator without kind", cmd, `{"cases":[{"id":"a","expected_exit":0,"compare":{}}]}`, "compare: kind is missing"},
		{"comparator unknown field", cmd, `{"compare":{"kind":"lines","tolerance":1},"cases":[{"id":"a","expected_exit":0}]}`, `unknown field "tolerance"`},
		{"comparator option for another kind", cmd, `{"compare":{"kind":"lines","abs_tol":1},"cases":[{"id":"a","expected_exit":0}]}`, "abs_tol does not apply to kind lines"},
		{"command without expectation", cmd, `{"cases":[{"id":"a","argv":["x"]}]}`, "command cases need expected_stdout, expected_exit or both"},
		{"command null stdout", cmd, `{"cases":[{"id":"a","expected_stdout":null}]}`, "expected_stdout must be a string"},
		{"command exit out of range", cmd, `{"cases":[{"id":"a","expected_exit":256}]}`, "expected_exit 256 is not in 0..255"},
		{"command negative exit", cmd, `{"cases":[{"id":"a","expected_exit":-1}]}`, "expected_exit -1 is not in 0..255"},
		{"command NUL in argv", cmd, `{"cases":[{"id":"a","argv":["a\u0000b"],"expected_exit":0}]}`, "argv[0] holds a NUL byte"},
		{"command with args", cmd, `{"cases":[{"id":"a","args":[],"expected_exit":0}]}`, "field args does not apply to command tasks"},
		{"command with expected_files", cmd, `{"cases":[{"id":"a","expected_exit":0,"expected_files":{"a":"b"}}]}`, "field expected_files does not apply"},
		{"command unusable expected stdout", cmd, `{"compare":{"kind":"numbers"},"cases":[{"id":"a","expected_stdout":"1 two"}]}`, "expected_stdout: judge: unusable expected value: numbers: token 2"},
		{"data without expected files", data, `{"cases":[{"id":"a","input_files":{"x":"y"}}]}`, "data cases need at least one expected_files entry"},
		{"data with stdin", data, `{"cases":[{"id":"a","stdin":"x","expected_files":{"o":"o"}}]}`, "field stdin does not apply to data tasks"},
		{"data absolute path", data, `{"cases":[{"id":"a","expected_files":{"o":"/etc/passwd"}}]}`, `expected_files["o"]: path "/etc/passwd" is not a clean relative path`},
		{"data traversal", data, `{"cases":[{"id":"a","expected_files":{"o":"../x"}}]}`, "is not a clean relative path"},
		{"data traversal in name", data, `{"cases":[{"id":"a","expected_files":{"a/../../x":"o"}}]}`, "expected_files: name"},
		{"data dot path", data, `{"cases":[{"id":"a","expected_files":{"o":"."}}]}`, "is empty"},
		{"data backslash", data, `{"cases":[{"id":"a","input_files":{"a\\b":"x"},"expected_files":{"o":"o"}}]}`, "backslash"},
		{"data control char", data, `{"cases":[{"id":"a","expected_files":{"o\n":"o"}}]}`, "control character"},
		{"data empty element", data, `{"cases":[{"id":"a","expected_files":{"a//b":"o"}}]}`, "not a clean relative path"},
		{"data trailing slash", data, `{"cases":[{"id":"a","expected_files":{"a/":"o"}}]}`, "not a clean relative path"},
		{"data file map of numbers", data, `{"cases":[{"id":"a","expected_files":{"o":1}}]}`, "cannot unmarshal number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadCases([]byte(tt.data), tt.kind)
			if err == nil {
				t.Fatalf("LoadCases = %+v, want an error", got)
			}
			if !errors.Is(err, ErrCases) {
				t.Errorf("error %v does not match ErrCases", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadCasesTooMany(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"cases":[`)
	for i := 0; i <= MaxCases; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"id":"c` + strconv.Itoa(i) + `","expected_exit":0}`)
	}
	b.WriteString(`]}`)
	_, err := LoadCases([]byte(b.String()), schema.KindCommand)
	if !errors.Is(err, ErrCases) || !strings.Contains(err.Error(), "more than the limit of "+strconv.Itoa(MaxCases)) {
		t.Fatalf("err = %v", err)
	}
}

// TestCaseFieldsCoverCase keeps caseFields in step with the Case type.
func TestCaseFieldsCoverCase(t *testing.T) {
	var listed []string
	for _, fields := range caseFields {
		listed = append(listed, fields...)
	}
	listed = append(listed, "id", "compare")
	slices.Sort(listed)
	listed = slices.Compact(listed)
	var declared []string
	for name := range jsonFields(reflect.TypeFor[Case]()) {
		declared = append(declared, name)
	}
	slices.Sort(declared)
	if diff := cmp.Diff(declared, listed); diff != "" {
		t.Errorf("caseFields and Case disagree (-Case +caseFields):\n%s", diff)
	}
}
