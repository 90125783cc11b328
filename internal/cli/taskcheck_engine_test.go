//go:build engine

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/schema"
)

// TestTaskCheckScaffolds: every strict scaffold task new writes is fit as it
// stands: its reference passes, an empty submission fails.
func TestTaskCheckScaffolds(t *testing.T) {
	for _, kind := range []string{"function", "command", "data"} {
		t.Run(kind, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), kind)
			if code, stdout, stderr := run(t, "task", "new", "--kind", kind, dir); code != ExitOK {
				t.Fatalf("task new: exit %d\n%s\n%s", code, stdout, stderr)
			}
			if code, stdout, stderr := run(t, "task", "check", dir); code != ExitOK {
				t.Fatalf("task check: exit %d\n%s\n%s", code, stdout, stderr)
			}
		})
	}
}

// TestTaskCheckCompat checks the compat example with a wrong reference diff:
// the baseline is fit, the reference fails, so the task is QUARANTINED; both
// signed verdicts are written.
func TestTaskCheckCompat(t *testing.T) {
	task := filepath.Join("..", "..", "examples", "compat-textkit", "task")
	wrong := filepath.Join("..", "..", "examples", "compat-textkit", "diffs", "wrong.diff")
	out := filepath.Join(t.TempDir(), "v.json")
	code, stdout, stderr := run(t, "task", "check", task, "--reference", wrong, "--out", out)
	if code != ExitQuarantined || !strings.Contains(stderr, "QUARANTINED: the reference solution did not pass (FAIL)") {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitQuarantined, stdout, stderr)
	}
	for _, want := range []string{"baseline   FAIL  FAIL  yes", "reference  PASS  FAIL  NO"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{out, out + ".reference", out + ".pub", out + ".reference.pub"} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	code, stdout, stderr = run(t, "verify", "--key", out+".reference.pub", "--bundle", out+".reference", "--submission", out+".reference.submission", "--tier", "compat")
	if code != ExitOK || !strings.HasPrefix(stdout, "outcome: FAIL") {
		t.Errorf("verify the reference's verdict: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestTaskCheckStrict runs task check on examples/sum/task (fit: its
// reference passes, an empty submission fails) and on a copy whose
// reference is the wrong solution (QUARANTINED), and checks that nothing
// this process made is left behind.
func TestTaskCheckStrict(t *testing.T) {
	code, stdout, stderr := run(t, "task", "check", sumTask)
	if code != ExitOK {
		t.Fatalf("fit: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"task sum (function, strict tier): fit", "CHECK", "reference  PASS  PASS  yes", "noop       FAIL  FAIL  yes"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("fit: stdout lacks %q:\n%s", want, stdout)
		}
	}

	wrong := filepath.Join(t.TempDir(), "task")
	if err := os.CopyFS(wrong, os.DirFS(sumTask)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(wrong, referenceDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(wrong, referenceDir), os.DirFS(sumWrong)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(t, "task", "check", wrong, "--json", "--noop=false")
	if code != ExitQuarantined || !strings.Contains(stderr, "QUARANTINED: the reference solution did not pass (FAIL): 4 of 7 cases failed") {
		t.Fatalf("wrong reference: exit %d, want %d\n%s\n%s", code, ExitQuarantined, stdout, stderr)
	}
	var rep struct {
		Fit    bool `json:"fit"`
		Checks []struct {
			Name string         `json:"name"`
			Got  schema.Outcome `json:"got"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("wrong reference: %v\n%s", err, stdout)
	}
	if rep.Fit || len(rep.Checks) != 1 || rep.Checks[0].Name != "reference" || rep.Checks[0].Got != schema.OutcomeFail {
		t.Errorf("wrong reference: %+v", rep)
	}

	assertNothingLeft(t)
}

// TestTaskCheckBaselineFlips: task check records a compat task's
// baseline; grade then uses it, so an honest patch's verdict records the
// baseline and that it flipped; without the record it records none.
func TestTaskCheckBaselineFlips(t *testing.T) {
	t.Setenv(cacheEnv, t.TempDir())
	task := filepath.Join("..", "..", "examples", "compat-textkit", "task")
	honest := filepath.Join("..", "..", "examples", "compat-textkit", "diffs", "honest.diff")
	grade := func() (schema.Verdict, string) {
		t.Helper()
		code, stdout, stderr := run(t, "grade", "--task", task, "--submission", honest, "--json")
		var v schema.Verdict
		if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != ExitOK || v.Compat == nil {
			t.Fatalf("grade: exit %d %v\n%s\n%s", code, err, stdout, stderr)
		}
		return v, stderr
	}
	v, stderr := grade()
	if v.Compat.Flipped || v.Compat.BaselineOutcome != "" || !strings.Contains(stderr, "no baseline is recorded for task") {
		t.Errorf("without a record: flipped %v baseline %q\n%s", v.Compat.Flipped, v.Compat.BaselineOutcome, stderr)
	}
	code, stdout, stderr := run(t, "task", "check", task)
	if code != ExitOK || !strings.Contains(stderr, "task check: baseline FAIL recorded in ") {
		t.Fatalf("task check: exit %d\n%s\n%s", code, stdout, stderr)
	}
	v, stderr = grade()
	if !v.Compat.Flipped || v.Compat.BaselineOutcome != schema.OutcomeFail || strings.Contains(stderr, "no baseline") {
		t.Errorf("with the record: flipped %v baseline %q\n%s", v.Compat.Flipped, v.Compat.BaselineOutcome, stderr)
	}
	assertNothingLeft(t)
}
