package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sgbatch "github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

// TestBaselineRecord: task check's record is used for its task digest and
// runtime image only; a missing, corrupt or foreign record is not used.
func TestBaselineRecord(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(cacheEnv, cache)
	loaded, err := controller.LoadTask(t.Context(), filepath.Join("..", "..", "examples", "compat-textkit", "task"))
	if err != nil {
		t.Fatal(err)
	}
	ct := loaded.(*compat.Task)
	verdict := func(o schema.Outcome) *schema.Verdict {
		return &schema.Verdict{RunID: "r1", Outcome: o, Task: schema.Task{ID: ct.Spec.ID, Digest: ct.Digest}}
	}
	if o, why := lookupBaseline(ct, "sha256:img"); o != "" || !strings.Contains(why, "no baseline is recorded for task "+ct.Spec.ID) {
		t.Errorf("none: %q %q", o, why)
	}
	// An ERROR is no fact about the task: nothing is written.
	if p, err := recordBaseline(ct, verdict(schema.OutcomeError), "sha256:img"); p != "" || err != nil {
		t.Errorf("ERROR recorded: %q %v", p, err)
	}
	if o, _ := lookupBaseline(ct, "sha256:img"); o != "" {
		t.Errorf("ERROR used: %q", o)
	}
	p, err := recordBaseline(ct, verdict(schema.OutcomeFail), "sha256:img")
	if err != nil || p != filepath.Join(cache, "baselines", ct.Digest+".json") {
		t.Fatalf("%q %v", p, err)
	}
	if o, why := lookupBaseline(ct, "sha256:img"); o != schema.OutcomeFail || why != "" {
		t.Errorf("recorded: %q %q", o, why)
	}
	if o, why := lookupBaseline(ct, "sha256:other"); o != "" || !strings.Contains(why, "recorded with runtime image sha256:img, not sha256:other") {
		t.Errorf("another image: %q %q", o, why)
	}
	// A verdict of another task digest is refused.
	other := verdict(schema.OutcomeFail)
	other.Task.Digest = strings.Repeat("0", 64)
	if _, err := recordBaseline(ct, other, "sha256:img"); err == nil {
		t.Error("a verdict of another digest was recorded")
	}
	// A record whose content names another digest, or that is not a
	// record, is not used.
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), ct.Digest, strings.Repeat("1", 64), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if o, why := lookupBaseline(ct, "sha256:img"); o != "" || !strings.Contains(why, "is of task digest 1111") {
		t.Errorf("foreign record: %q %q", o, why)
	}
	if err := os.WriteFile(p, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o, why := lookupBaseline(ct, "sha256:img"); o != "" || !strings.Contains(why, "is not a baseline record") {
		t.Errorf("corrupt record: %q %q", o, why)
	}
	// Recording again replaces it.
	if _, err := recordBaseline(ct, verdict(schema.OutcomeQuarantined), "sha256:img"); err != nil {
		t.Fatal(err)
	}
	if o, _ := lookupBaseline(ct, "sha256:img"); o != schema.OutcomeQuarantined {
		t.Errorf("re-recorded: %q", o)
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("the cache holds %d files, want the record alone", len(ents))
	}
}

// TestBaselineDir: the cache directory is $STRICTGRADE_CACHE_DIR, else
// the user's cache directory.
func TestBaselineDir(t *testing.T) {
	t.Setenv(cacheEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/somewhere")
	if d, err := baselineDir(); err != nil || d != "/somewhere/strictgrade/baselines" {
		t.Errorf("%q %v", d, err)
	}
	t.Setenv(cacheEnv, "/else")
	if d, err := baselineDir(); err != nil || d != "/else/baselines" {
		t.Errorf("%q %v", d, err)
	}
	if _, err := baselinePath("../../etc/passwd"); err == nil {
		t.Error("a path was taken for a digest")
	}
}

// TestRunBaselines: run hands the batch the recorded baselines of its
// compat tasks, by digest, and says how many lack one.
func TestRunBaselines(t *testing.T) {
	t.Setenv(cacheEnv, t.TempDir())
	tasks, err := sgbatch.LoadTasks(t.Context(), []string{filepath.Join("..", "..", "examples", "compat-textkit", "task"), sumTask})
	if err != nil {
		t.Fatal(err)
	}
	ct := tasks["textkit-slugify"].(*compat.Task)
	var stderr strings.Builder
	stdio := IO{Stderr: &stderr}
	if got := runBaselines(stdio, tasks, "sha256:img"); len(got) != 0 || !strings.Contains(stderr.String(), "run: 0 of 1 compat tasks have a recorded baseline") {
		t.Errorf("none: %v\n%s", got, stderr.String())
	}
	if _, err := recordBaseline(ct, &schema.Verdict{Outcome: schema.OutcomeFail, Task: schema.Task{Digest: ct.Digest}}, "sha256:img"); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if got := runBaselines(stdio, tasks, "sha256:img"); len(got) != 1 || got[ct.Digest] != schema.OutcomeFail || stderr.Len() != 0 {
		t.Errorf("recorded: %v\n%s", got, stderr.String())
	}
	if got := runBaselines(stdio, tasks, "sha256:another"); len(got) != 0 {
		t.Errorf("another image: %v", got)
	}
}
