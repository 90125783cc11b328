package controller_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// TestLoadTaskTellsTiersApart: one loader for both tiers, and a clear
// error for a directory that holds neither.
func TestLoadTaskTellsTiersApart(t *testing.T) {
	strictTask, err := controller.LoadTask(t.Context(), filepath.Join("..", "examples", "sum", "task"))
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := strictTask.(*task.Task); !ok || st.Tier() != schema.TierStrict {
		t.Fatalf("the sum task loaded as %T", strictTask)
	}
	compatTask, err := controller.LoadTask(t.Context(), filepath.Join("..", "examples", "compat-textkit", "task"))
	if err != nil {
		t.Fatal(err)
	}
	if ct, ok := compatTask.(*compat.Task); !ok || ct.Tier() != schema.TierCompat {
		t.Fatalf("the textkit task loaded as %T", compatTask)
	}

	outside := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(outside, []byte(`{"schema":"strictgrade.task/v1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, setup := range map[string]func(dir string) error{
		"no task.json": func(string) error { return nil },
		"another schema": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "task.json"), []byte(`{"schema":"strictgrade.task/v9"}`), 0o644)
		},
		"not JSON": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "task.json"), []byte("schema: strictgrade.task/v1"), 0o644)
		},
		"a link out of the task": func(dir string) error { return os.Symlink(outside, filepath.Join(dir, "task.json")) },
	} {
		dir := t.TempDir()
		if err := setup(dir); err != nil {
			t.Fatal(err)
		}
		if got, err := controller.LoadTask(t.Context(), dir); err == nil || got != nil {
			t.Errorf("%s: loaded %T", name, got)
		} else if !errors.Is(err, controller.ErrUnknownTask) {
			t.Errorf("%s: %v, want ErrUnknownTask", name, err)
		}
	}
	// A task of a known schema that is malformed is its loader's error.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "task.json"), []byte(`{"schema":"strictgrade.task/v1","id":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := controller.LoadTask(t.Context(), dir); !errors.Is(err, task.ErrInvalid) {
		t.Errorf("a malformed strict task: %v, want task.ErrInvalid", err)
	}
}

// otherTask is a Task of neither tier.
type otherTask struct{}

func (otherTask) Tier() schema.Tier { return "other" }

// TestGradeRefusesTheOtherTiersForm: each tier takes its own form of
// submission; anything else is the caller's error, with nothing run.
func TestGradeRefusesTheOtherTiersForm(t *testing.T) {
	ctrl, _ := fakeController(t)
	strictTask := loadCopyTask(t)
	compatTask, err := compat.Load(t.Context(), filepath.Join("..", "examples", "compat-textkit", "task"))
	if err != nil {
		t.Fatal(err)
	}
	var nilStrict *task.Task
	for name, tt := range map[string]struct {
		task controller.Task
		sub  controller.Submission
	}{
		"a diff to a strict task":            {strictTask, controller.Submission{Diff: []byte("")}},
		"a baseline to a strict task":        {strictTask, controller.Submission{Dir: t.TempDir(), Baseline: schema.OutcomeFail}},
		"a workspace to a compat task":       {compatTask, controller.Submission{Dir: t.TempDir()}},
		"an archive to a compat task":        {compatTask, controller.Submission{Archive: strings.NewReader("")}},
		"no diff to a compat task":           {compatTask, controller.Submission{}},
		"a baseline that is no outcome":      {compatTask, controller.Submission{Diff: []byte(""), Baseline: "MAYBE"}},
		"both a workspace and an archive":    {strictTask, controller.Submission{Dir: t.TempDir(), Archive: strings.NewReader("")}},
		"neither a workspace nor an archive": {strictTask, controller.Submission{}},
		"no task":                            {nil, controller.Submission{Dir: t.TempDir()}},
		"a nil strict task":                  {nilStrict, controller.Submission{Dir: t.TempDir()}},
		"a task of neither tier":             {otherTask{}, controller.Submission{Dir: t.TempDir()}},
	} {
		res, err := ctrl.Grade(t.Context(), tt.task, tt.sub)
		if res != nil || !errors.Is(err, controller.ErrBadRequest) || errors.Is(err, controller.ErrCouldNotGrade) {
			t.Errorf("%s: %v, %v; want ErrBadRequest alone", name, res, err)
		}
	}
}

// TestCompatGradeTakesTheCallersNonce: a compat grade goes through the
// same entry, takes the caller's nonce, and its signed FAIL verifies
// against the diff returned. The diff is malformed, so the gate decides
// before any container runs.
func TestCompatGradeTakesTheCallersNonce(t *testing.T) {
	ctrl, signer := fakeController(t)
	tk, err := controller.LoadTask(t.Context(), filepath.Join("..", "examples", "compat-textkit", "task"))
	if err != nil {
		t.Fatal(err)
	}
	nonce := schema.NewNonce()
	diff := []byte("diff --git a/x\nnot a diff\n")
	res, err := ctrl.Grade(t.Context(), tk, controller.Submission{Diff: diff, Nonce: nonce})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verdict
	if v.Tier != schema.TierCompat || v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonRejectedArtifact || v.Nonce != nonce {
		t.Fatalf("%s %s %s nonce %q: %s", v.Tier, v.Outcome, v.ReasonCode, v.Nonce, v.Reason)
	}
	if string(res.Archive) != string(diff) {
		t.Fatal("Result.Archive is not the diff graded")
	}
	if _, err := attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
		SubmissionSHA256: sha256Hex(diff), Tier: schema.TierCompat, Nonce: nonce,
	}); err != nil {
		t.Fatalf("the signed FAIL does not verify: %v", err)
	}
	if _, err := ctrl.Grade(t.Context(), tk, controller.Submission{Diff: diff, Nonce: "short"}); !errors.Is(err, controller.ErrBadRequest) {
		t.Fatalf("a malformed nonce: %v", err)
	}
}
