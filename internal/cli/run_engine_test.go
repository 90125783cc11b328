//go:build engine

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/attest"
	sgbatch "github.com/strictgrade/strictgrade/batch"
)

// TestRunResumeEngine runs `run` over eight items of both tiers with
// --parallel 2, cancels it part way, resumes it, and checks that every
// item was graded exactly once, that `verify --run` passes, and that
// nothing this process made is left in the engine.
func TestRunResumeEngine(t *testing.T) {
	dir := t.TempDir()
	abs := func(p ...string) string {
		a, err := filepath.Abs(filepath.Join(append([]string{"..", ".."}, p...)...))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var items bytes.Buffer
	enc := json.NewEncoder(&items)
	for _, it := range []struct{ id, task, sub string }{
		{"sum-honest", "sum", abs("examples", "sum", "solutions", "honest")},
		{"sum-wrong", "sum", abs("examples", "sum", "solutions", "wrong")},
		{"wordfreq-honest", "wordfreq", abs("examples", "wordfreq", "solutions", "honest")},
		{"wordfreq-wrong", "wordfreq", abs("examples", "wordfreq", "solutions", "wrong")},
		{"sum-honest-again", "sum", abs("examples", "sum", "solutions", "honest")},
	} {
		enc.Encode(map[string]string{"id": it.id, "task": it.task, "submission": it.sub})
	}
	for _, name := range []string{"honest", "wrong", "does-not-apply"} {
		diff, err := os.ReadFile(abs("examples", "compat-textkit", "diffs", name+".diff"))
		if err != nil {
			t.Fatal(err)
		}
		enc.Encode(map[string]string{"id": "textkit-" + name, "instance_id": "textkit-slugify",
			"model_patch": string(diff), "model_name_or_path": "test/" + name})
	}
	want := map[string]string{"sum-honest": "PASS", "sum-wrong": "FAIL", "wordfreq-honest": "PASS", "wordfreq-wrong": "FAIL",
		"sum-honest-again": "PASS", "textkit-honest": "PASS", "textkit-wrong": "FAIL", "textkit-does-not-apply": "FAIL"}
	itemsFile := filepath.Join(dir, "items.jsonl")
	if err := os.WriteFile(itemsFile, items.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	priv, pub, err := attest.WriteKeyPair(filepath.Join(dir, "key"), attest.KeyECDSAP256, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	tasks := strings.Join([]string{abs("examples", "sum", "task"), abs("examples", "wordfreq", "task"), abs("examples", "compat-textkit", "task")}, ",")
	args := []string{"run", "--items", itemsFile, "--tasks", tasks, "--out", out, "--parallel", "2", "--key", priv}

	// The first run is cancelled once two items are finished.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if data, err := os.ReadFile(filepath.Join(out, sgbatch.ResultsFile)); err == nil && bytes.Count(data, []byte("\n")) >= 2 {
				cancel()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	var stdout, stderr bytes.Buffer
	code := Run(ctx, args, strings.NewReader(""), &stdout, &stderr)
	if code != ExitError || !strings.Contains(stderr.String(), "resume with") {
		t.Fatalf("cancelled run: exit %d, want %d and how to resume\n%s\n%s", code, ExitError, stdout.String(), stderr.String())
	}
	cancelledLog := stderr.String()
	first := results(t, out)
	if len(first) < 2 || len(first) == len(want) {
		t.Fatalf("the cancelled run finished %d items", len(first))
	}

	stdout.Reset()
	stderr.Reset()
	code = Run(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("resume: %s", stdout.String())
	if !regexp.MustCompile(`(?m)^run: \d+ items to grade, \d+ kept from a previous run\n(.|\n)*^run: \d+/\d+ done, 0 ERROR, eta 0s$`).MatchString(stderr.String()) {
		t.Errorf("resume: no plain progress lines on stderr:\n%s", stderr.String())
	}
	all := results(t, out)
	if len(all) != len(want) {
		t.Fatalf("results.jsonl holds %d items, want %d", len(all), len(want))
	}
	for id, o := range want {
		if string(all[id].Outcome) != o {
			t.Errorf("%s: %s (%s %s), want %s", id, all[id].Outcome, all[id].ReasonCode, all[id].Error, o)
		}
	}
	for id, r := range first {
		if all[id] != r {
			t.Errorf("%s was graded again: %+v, then %+v", id, r, all[id])
		}
	}
	var sum sgbatch.Summary
	if data, err := os.ReadFile(filepath.Join(out, sgbatch.SummaryFile)); err != nil || json.Unmarshal(data, &sum) != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if sum.Resumed != len(first) || sum.Graded != len(want)-len(first) {
		t.Errorf("summary: %+v; want %d kept and %d graded", sum, len(first), len(want)-len(first))
	}
	t.Logf("resume: %d items graded in %.1fs, %.2f grades/min at --parallel 2", sum.Graded, sum.WallSeconds, sum.GradesPerMinute)

	stdout.Reset()
	stderr.Reset()
	if code := Run(t.Context(), []string{"verify", "--run", out, "--key", pub}, strings.NewReader(""), &stdout, &stderr); code != ExitOK {
		t.Errorf("verify --run: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}

	assertNothingLeft(t)
	if t.Failed() {
		t.Logf("the cancelled run's standard error:\n%s", cancelledLog)
	}
}

// results reads a run's results.jsonl by item, failing on a duplicate.
func results(t *testing.T, out string) map[string]sgbatch.Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, sgbatch.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]sgbatch.Record{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r sgbatch.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("results.jsonl: %v: %q", err, line)
		}
		if _, dup := recs[r.Item]; dup {
			t.Errorf("%s is in results.jsonl twice", r.Item)
		}
		recs[r.Item] = r
	}
	return recs
}
