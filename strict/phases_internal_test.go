package strict

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/candidate"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// writeTask lays out a task of one kind whose expected values, expected
// file names and expected file contents all carry the marker "EXPECTED".
func writeTask(t *testing.T, kind schema.TaskKind) string {
	t.Helper()
	files := map[string]string{"public/README.md": "inputs in, outputs out\n"}
	switch kind {
	case schema.KindFunction:
		files["task.json"] = `{"schema":"strictgrade.task/v1","id":"f","version":"1","kind":"function","runtime":"python",
			"function":{"module":"solution","name":"solve"},"artifacts":["solution.py"]}`
		files["hidden/cases.json"] = `{"cases":[{"id":"a","args":[1,"in"],"expected":"EXPECTED-value"},
			{"id":"b","args":[],"expected":{"EXPECTED-key":1}}]}`
	case schema.KindCommand:
		files["task.json"] = `{"schema":"strictgrade.task/v1","id":"c","version":"1","kind":"command","runtime":"python",
			"command":{"path":"run"},"artifacts":["run"]}`
		files["hidden/cases.json"] = `{"cases":[{"id":"a","argv":["-x"],"stdin":"in","expected_stdout":"EXPECTED-stdout\n","expected_exit":3}]}`
	case schema.KindData:
		files["task.json"] = `{"schema":"strictgrade.task/v1","id":"d","version":"1","kind":"data","runtime":"python",
			"data":{"argv":["python3","solution.py"]},"artifacts":["solution.py"]}`
		files["hidden/cases.json"] = `{"cases":[{"id":"a","input_files":{"in.csv":"inputs/a.csv"},
			"expected_files":{"EXPECTED-out.json":"EXPECTED-dir/a.json"}}]}`
		files["hidden/inputs/a.csv"] = "x\n1\n"
		files["hidden/EXPECTED-dir/a.json"] = "EXPECTED-content"
	}
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// dump writes every string and byte slice a value holds, map keys
// included.
func dump(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			dump(b, v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			dump(b, v.Field(i))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b.Write(v.Bytes())
			b.WriteByte(0)
			return
		}
		for i := range v.Len() {
			dump(b, v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			dump(b, it.Key())
			dump(b, it.Value())
		}
	case reflect.String:
		b.WriteString(v.String())
		b.WriteByte(0)
	}
}

// TestCandidateSeesInputsOnly: the candidate phase's request carries each
// case's inputs and nothing of what the case expects, for every kind.
func TestCandidateSeesInputsOnly(t *testing.T) {
	for _, kind := range []schema.TaskKind{schema.KindFunction, schema.KindCommand, schema.KindData} {
		t.Run(string(kind), func(t *testing.T) {
			tk, err := task.Load(t.Context(), writeTask(t, kind))
			if err != nil {
				t.Fatal(err)
			}
			req, err := candidateRequest(tk)
			if err != nil {
				t.Fatal(err)
			}
			var all strings.Builder
			dump(&all, reflect.ValueOf(req))
			if strings.Contains(all.String(), "EXPECTED") {
				t.Errorf("an expected value or file reached the request: %q", all.String())
			}
			if len(req.Cases) != len(tk.Cases.Cases) {
				t.Fatalf("%d inputs for %d cases", len(req.Cases), len(tk.Cases.Cases))
			}
			for i, c := range tk.Cases.Cases {
				in := req.Cases[i]
				got := fmt.Sprint(string(in.Args), in.Argv, string(in.Stdin), len(in.Files))
				want := fmt.Sprint(string(c.Args), c.Argv, c.Stdin, len(c.InputFiles))
				if got != want {
					t.Errorf("case %s: inputs %s, want %s", c.ID, got, want)
				}
			}
			if kind == schema.KindData && string(req.Cases[0].Files["in.csv"]) != "x\n1\n" {
				t.Errorf("input file %q", req.Cases[0].Files["in.csv"])
			}
		})
	}
}

// TestRequestTypesHoldNoTask: by type, nothing the candidate phase receives
// can hold a task or a hidden case.
func TestRequestTypesHoldNoTask(t *testing.T) {
	forbidden := []string{"github.com/strictgrade/strictgrade/task", "github.com/strictgrade/strictgrade/judge"}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		if slices.Contains(forbidden, typ.PkgPath()) {
			t.Errorf("candidate.Request reaches %s", typ)
		}
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(typ.Elem())
		case reflect.Map:
			walk(typ.Key())
			walk(typ.Elem())
		case reflect.Struct:
			for f := range typ.Fields() {
				walk(f.Type)
			}
		case reflect.Interface, reflect.Func, reflect.Chan:
			t.Errorf("candidate.Request holds %s, which could carry anything", typ)
		}
	}
	walk(reflect.TypeFor[candidate.Request]())
}
