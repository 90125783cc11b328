//go:build engine

package cli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/internal/swebenchtest"
	"github.com/strictgrade/strictgrade/schema"
)

// TestTaskImportSWEBench imports a SWE-bench-format instance made from the
// compat example's repository (its test patch adds the example's hidden
// tests to tests/test_core.py, its patch is the example's fix): the task
// is fit, grades its reference as PASS and an empty patch as FAIL. Then
// malformed instances are refused, with the reason and nothing at --out:
// a missing field, a test patch that does not apply and unknown test ids —
// those a look at the files finds before any container runs (exit 2), and
// one that only pytest's collection finds (a parameter the test does not
// have), which quarantines the task (exit 4).
func TestTaskImportSWEBench(t *testing.T) {
	tk := swebenchtest.New(t)
	out := filepath.Join(t.TempDir(), "task")
	code, stdout, stderr := run(t, "task", "import-swebench", "--instance", swebenchtest.Write(t, tk.Instance), "--repo", tk.Repo, "--out", out)
	if code != ExitOK {
		t.Fatalf("import: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"task textkit__textkit-1 (repository, compat tier): fit", "baseline   FAIL  FAIL  yes", "reference  PASS  PASS  yes",
		"imported textkit__textkit-1 into " + out + ": 3 hidden tests in 1 files, 9 existing tests"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("import: stdout lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = run(t, "grade", "--task", out, "--submission", filepath.Join(out, "reference.diff"), "--json")
	if code != ExitOK || !strings.Contains(stdout, `"outcome": "PASS"`) {
		t.Fatalf("grade the reference: exit %d\n%s\n%s", code, stdout, stderr)
	}
	empty := filepath.Join(t.TempDir(), "empty.diff")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(t, "grade", "--task", out, "--submission", empty, "--json")
	if code != ExitFail || !strings.Contains(stdout, `"outcome": "FAIL"`) {
		t.Fatalf("grade an empty patch: exit %d\n%s\n%s", code, stdout, stderr)
	}

	refused := []struct {
		name   string
		change func(map[string]any)
		code   int
		want   string
	}{
		{"missing field", func(m map[string]any) { delete(m, "FAIL_TO_PASS") }, ExitUsage, "missing required field(s): FAIL_TO_PASS"},
		{"test patch does not apply", func(m map[string]any) {
			m["test_patch"] = strings.Replace(m["test_patch"].(string), "def test_truncate_rejects_tiny_width", "def test_truncate_rejects_wide_width", 1)
		}, ExitUsage, "test_patch does not apply at base_commit: error: patch failed: tests/test_core.py"},
		{"unknown test file", func(m map[string]any) { m["PASS_TO_PASS"] = []string{"tests/test_gone.py::test_a"} }, ExitUsage,
			"tests/test_gone.py does not exist at base_commit after the test patch"},
		{"unknown test name", func(m map[string]any) {
			m["FAIL_TO_PASS"] = []string{"tests/test_core.py::test_collapses_runs_of_separators", "tests/test_core.py::test_gone"}
		}, ExitUsage, "tests/test_core.py has nothing named test_gone"},
		{"test id pytest does not collect", func(m map[string]any) {
			m["FAIL_TO_PASS"] = []string{"tests/test_core.py::test_collapses_runs_of_separators[gone]"}
		}, ExitQuarantined, "QUARANTINED: "},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			inst := map[string]any{}
			for k, v := range tk.Instance {
				inst[k] = v
			}
			c.change(inst)
			out := filepath.Join(t.TempDir(), "task")
			code, stdout, stderr := run(t, "task", "import-swebench", "--instance", swebenchtest.Write(t, inst), "--repo", tk.Repo, "--out", out, "--json")
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, want %d with %q\n%s\n%s", code, c.code, c.want, stdout, stderr)
			}
			if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %v", out, err)
			}
			if c.code != ExitQuarantined {
				return
			}
			var rep struct {
				Imported bool `json:"imported"`
				Fit      bool `json:"fit"`
				Checks   []struct {
					Name    string         `json:"name"`
					Got     schema.Outcome `json:"got"`
					Verdict schema.Verdict `json:"verdict"`
				} `json:"checks"`
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("%v\n%s", err, stdout)
			}
			if rep.Imported || rep.Fit || len(rep.Checks) == 0 || rep.Checks[0].Name != "baseline" ||
				rep.Checks[0].Got != schema.OutcomeQuarantined || rep.Checks[0].Verdict.ReasonCode != schema.ReasonTestsMissing {
				t.Errorf("report: %+v\n%s", rep, stdout)
			}
		})
	}
	assertNothingLeft(t)
}
