package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/internal/testtree"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
)

const (
	copySource  = "import shutil\nshutil.copy('/input/in.txt', '/output/out.txt')\n"
	wrongSource = "open('/output/out.txt', 'w').write('y\\n')\n"
)

// graded counts the grades the fake ran, by source.
var graded = map[string]*atomic.Int64{copySource: {}, wrongSource: {}}

func writeFiles(t testing.TB, dir string, files map[string]string) { testtree.Write(t, dir, files) }

// copyTask writes a one-case data task "copy" under root/copy.
func copyTask(t testing.TB, root, id string) string {
	t.Helper()
	dir := filepath.Join(root, id)
	writeFiles(t, dir, map[string]string{
		"task.json": `{"schema":"strictgrade.task/v1","id":"` + id + `","version":"1","kind":"data","runtime":"python",
			"data":{"argv":["python3","solution.py"]},"artifacts":["solution.py"]}`,
		"public/README.md":  "copy /input/in.txt to /output/out.txt\n",
		"hidden/cases.json": `{"cases":[{"id":"a","input_files":{"in.txt":"in/a.txt"},"expected_files":{"out.txt":"want/a.txt"}}]}`,
		"hidden/in/a.txt":   "x\n",
		"hidden/want/a.txt": "x\n",
	})
	return dir
}

func newSigner(t testing.TB) *attest.Signer {
	t.Helper()
	priv, _, err := attest.GenerateKey(attest.KeyEd25519, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := attest.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fakeController is controller/submission_test.go's, with a judge that
// fails every grade when broken is set.
func fakeController(t testing.TB, signer *attest.Signer, parallel int, broken bool) *controller.Controller {
	t.Helper()
	fake := sandboxtest.NewFake()
	count := func(src string, prog sandboxtest.Program) sandboxtest.Python {
		return sandboxtest.Python{Main: func(p *sandboxtest.Proc) int { graded[src].Add(1); return prog(p) }}
	}
	fake.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(map[string]sandboxtest.Python{
		copySource: count(copySource, copyMain),
		wrongSource: count(wrongSource, func(p *sandboxtest.Proc) int {
			if p.WriteFile("/output/out.txt", []byte("y\n"), 0o644) != nil {
				return 1
			}
			return 0
		}),
	}))
	if broken {
		fake.Image(sandboxtest.JudgeImage, func(p *sandboxtest.Proc) int { p.Errorf("judge broken"); return 3 })
	} else {
		fake.Image(sandboxtest.JudgeImage, sandboxtest.Judge)
	}
	ctrl, err := controller.New(t.Context(), controller.Config{Backend: fake, Signer: signer, MaxInFlight: parallel,
		RuntimeImage: sandboxtest.RuntimeImage, JudgeImage: sandboxtest.JudgeImage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close() })
	return ctrl
}

// copyMain is the honest copy program: its input file to its output.
func copyMain(p *sandboxtest.Proc) int {
	data, err := p.ReadFile("/input/in.txt")
	if err == nil {
		err = p.WriteFile("/output/out.txt", data, 0o644)
	}
	if err != nil {
		return 1
	}
	return 0
}

// fixture lays out a task and n items (honest and wrong in turn).
type fixture struct {
	items []batch.Item
	tasks batch.Tasks
	out   string
}

func newFixture(t *testing.T, n int) fixture {
	t.Helper()
	root := t.TempDir()
	copyTask(t, filepath.Join(root, "tasks"), "copy")
	writeFiles(t, root, map[string]string{"honest/solution.py": copySource, "wrong/solution.py": wrongSource})
	var lines []string
	for i := range n {
		sub := "honest"
		if i%2 == 1 {
			sub = "wrong"
		}
		lines = append(lines, `{"id":"item `+string(rune('a'+i))+`","task":"copy","submission":"`+sub+`"}`)
	}
	writeFiles(t, root, map[string]string{"items.jsonl": strings.Join(lines, "\n") + "\n"})
	items, err := batch.ReadItems(filepath.Join(root, "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := batch.LoadTasks(t.Context(), []string{filepath.Join(root, "tasks")})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{items: items, tasks: tasks, out: filepath.Join(root, "out")}
}

func readRecords(t *testing.T, out string) []batch.Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, batch.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var recs []batch.Record
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var r batch.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("results.jsonl: %v: %q", err, line)
		}
		recs = append(recs, r)
	}
	return recs
}

func byItem(t *testing.T, recs []batch.Record) map[string]batch.Record {
	t.Helper()
	m := map[string]batch.Record{}
	for _, r := range recs {
		if _, dup := m[r.Item]; dup {
			t.Errorf("item %q appears twice in results.jsonl", r.Item)
		}
		m[r.Item] = r
	}
	return m
}

func grades() int64 { return graded[copySource].Load() + graded[wrongSource].Load() }

// TestRunResumeAfterCancel: a run cancelled part way keeps what finished;
// the resume grades only the rest, every item exactly once, and the run
// verifies.
func TestRunResumeAfterCancel(t *testing.T) {
	f := newFixture(t, 8)
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 1, false)
	before := grades()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sum, err := batch.Run(ctx, batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out, Parallel: 1,
		Progress: func(p batch.Progress) {
			if p.Done == 3 {
				cancel()
			}
		}})
	if !errors.Is(err, batch.ErrInterrupted) {
		t.Fatalf("cancelled run: %v, want ErrInterrupted", err)
	}
	if sum.Graded != 3 || sum.Pending != 5 || sum.Stopped != "interrupted" {
		t.Fatalf("cancelled run: %+v", sum)
	}
	first := byItem(t, readRecords(t, f.out))
	if len(first) != 3 {
		t.Fatalf("results.jsonl has %d items after the cancelled run, want 3", len(first))
	}

	sum, err = batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Graded != 5 || sum.Resumed != 3 || sum.Pending != 0 || sum.Outcomes[schema.OutcomePass] != 4 || sum.Outcomes[schema.OutcomeFail] != 4 {
		t.Fatalf("resumed run: %+v", sum)
	}
	if n := grades() - before; n != 8 {
		t.Errorf("%d grades ran for 8 items", n)
	}
	all := byItem(t, readRecords(t, f.out))
	if len(all) != 8 {
		t.Fatalf("results.jsonl has %d items, want 8", len(all))
	}
	for id, r := range first {
		if all[id] != r {
			t.Errorf("item %s: the resume changed its record:\n%+v\n%+v", id, r, all[id])
		}
	}
	var s batch.Summary
	data, err := os.ReadFile(filepath.Join(f.out, batch.SummaryFile))
	if err != nil || json.Unmarshal(data, &s) != nil || s.Items != 8 || s.Outcomes[schema.OutcomeError] != 0 {
		t.Errorf("summary.json: %v %s", err, data)
	}

	// A third run grades nothing.
	sum, err = batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out})
	if err != nil || sum.Graded != 0 || sum.Resumed != 8 {
		t.Fatalf("third run: %+v, %v", sum, err)
	}
	if len(readRecords(t, f.out)) != 8 {
		t.Errorf("results.jsonl grew on a run that graded nothing")
	}

	checks, err := batch.VerifyRun(f.out, signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !c.Verified() {
			t.Errorf("%s: %v", c.Record.Item, c.Err)
		}
	}

	// Another key may not resume the run.
	other := newSigner(t)
	if _, err := batch.Run(t.Context(), batch.Options{Controller: fakeController(t, other, 1, false), Signer: other,
		Items: f.items, Tasks: f.tasks, Out: f.out}); !errors.Is(err, batch.ErrKeyMismatch) {
		t.Errorf("another key: %v, want ErrKeyMismatch", err)
	}
}

// TestVerifyRunDetectsTampering: a changed bundle or submission fails its
// item's check, and a resume grades that item again.
func TestVerifyRunDetectsTampering(t *testing.T) {
	f := newFixture(t, 4)
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 2, false)
	if _, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out}); err != nil {
		t.Fatal(err)
	}
	recs := byItem(t, readRecords(t, f.out))
	sub := filepath.Join(f.out, filepath.FromSlash(recs["item a"].Submission))
	data, err := os.ReadFile(sub)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(sub, data, 0o644); err != nil {
		t.Fatal(err)
	}
	bundlePath := filepath.Join(f.out, filepath.FromSlash(recs["item b"].Bundle))
	// Swap item c's bundle in: a valid signature over another item's bytes.
	other, err := os.ReadFile(filepath.Join(f.out, filepath.FromSlash(recs["item c"].Bundle)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bundlePath, other, 0o644); err != nil {
		t.Fatal(err)
	}

	checks, err := batch.VerifyRun(f.out, signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, c := range checks {
		if !c.Verified() {
			failed[c.Record.Item] = true
			if !errors.Is(c.Err, attest.ErrVerificationFailed) {
				t.Errorf("%s: %v, want a verification failure", c.Record.Item, c.Err)
			}
		}
	}
	if len(checks) != 4 || !failed["item a"] || !failed["item b"] || len(failed) != 2 {
		t.Fatalf("failed %v of %d checks; want items a and b", failed, len(checks))
	}

	before := grades()
	sum, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out})
	if err != nil || sum.Graded != 2 || sum.Resumed != 2 || grades()-before != 2 {
		t.Fatalf("resume after tampering: %+v, %v; want items a and b graded again", sum, err)
	}
	checks, _ = batch.VerifyRun(f.out, signer.PublicKey())
	for _, c := range checks {
		if !c.Verified() {
			t.Errorf("%s after the resume: %v", c.Record.Item, c.Err)
		}
	}
}

// TestRunErrorThreshold: a grader that errors stops the run after the
// threshold; the ERRORs are kept on resume unless RetryErrors.
func TestRunErrorThreshold(t *testing.T) {
	f := newFixture(t, 8)
	signer := newSigner(t)
	broken := fakeController(t, signer, 1, true)
	sum, err := batch.Run(t.Context(), batch.Options{Controller: broken, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out,
		Parallel: 1, MaxErrors: &batch.Threshold{Count: 1}})
	if !errors.Is(err, batch.ErrTooManyErrors) {
		t.Fatalf("broken grader: %v, want ErrTooManyErrors (%+v)", err, sum)
	}
	if sum.Graded != batch.MinItems || sum.Outcomes[schema.OutcomeError] != batch.MinItems || sum.Stopped != "too many errors" {
		t.Fatalf("broken grader: %+v", sum)
	}
	good := fakeController(t, signer, 2, false)
	sum, err = batch.Run(t.Context(), batch.Options{Controller: good, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out})
	if err != nil || sum.Resumed != 5 || sum.Graded != 3 || sum.Outcomes[schema.OutcomeError] != 5 {
		t.Fatalf("resume without --retry-errors: %+v, %v", sum, err)
	}
	sum, err = batch.Run(t.Context(), batch.Options{Controller: good, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out, RetryErrors: true})
	if err != nil || sum.Resumed != 3 || sum.Graded != 5 || sum.Outcomes[schema.OutcomeError] != 0 {
		t.Fatalf("resume with RetryErrors: %+v, %v", sum, err)
	}
	if n := len(byItem(t, readRecords(t, f.out))); n != 8 {
		t.Errorf("results.jsonl holds %d items, want 8", n)
	}
}

func TestThreshold(t *testing.T) {
	for _, tt := range []struct {
		th          batch.Threshold
		errs, done  int
		wantExceeds bool
	}{
		{batch.DefaultMaxErrors, 4, 4, false}, // fewer than MinItems done
		{batch.DefaultMaxErrors, 10, 10, false},
		{batch.DefaultMaxErrors, 11, 11, true},
		{batch.DefaultMaxErrors, 20, 100, false},
		{batch.DefaultMaxErrors, 21, 100, true},
		{batch.Threshold{Count: 0}, 1, 5, true},
		{batch.Threshold{Count: 0}, 1, 4, false},
		{batch.Threshold{Fraction: 0.2}, 1, 5, false},
		{batch.Threshold{Fraction: 0.2}, 2, 5, true},
	} {
		if got := tt.th.Exceeded(tt.errs, tt.done); got != tt.wantExceeds {
			t.Errorf("%+v.Exceeded(%d, %d) = %v", tt.th, tt.errs, tt.done, got)
		}
	}
	for in, want := range map[string]batch.Threshold{"3": {Count: 3}, "0": {}, "0.25": {Fraction: 0.25}, "30%": {Fraction: 0.3}} {
		if got, err := batch.ParseThreshold(in); err != nil || got != want {
			t.Errorf("ParseThreshold(%q) = %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "-1", "1.5", "x", "200%"} {
		if _, err := batch.ParseThreshold(in); err == nil {
			t.Errorf("ParseThreshold(%q) accepted", in)
		}
	}
}

func TestParseItems(t *testing.T) {
	good := `{"instance_id":"textkit-slugify","model_patch":"diff --git a/x b/x\n","model_name_or_path":"m1"}

{"task":"sum","submission":"solutions/honest"}
{"id":"w","task":"sum","submission":"/abs/wrong.tar"}
{"id":"p2","instance_id":"textkit-slugify","model_patch":"","model_name_or_path":"m2"}
`
	items, err := batch.ParseItems(strings.NewReader(good), "/base")
	if err != nil {
		t.Fatal(err)
	}
	want := []batch.Item{
		{ID: "textkit-slugify", Task: "textkit-slugify", Patch: []byte("diff --git a/x b/x\n"), Model: "m1", Line: 1},
		{ID: "sum:solutions/honest", Task: "sum", Submission: "/base/solutions/honest", Line: 3},
		{ID: "w", Task: "sum", Submission: "/abs/wrong.tar", Line: 4},
		{ID: "p2", Task: "textkit-slugify", Patch: []byte{}, Model: "m2", Line: 5},
	}
	if len(items) != len(want) {
		t.Fatalf("got %d items", len(items))
	}
	for i := range want {
		g, w := items[i], want[i]
		if g.ID != w.ID || g.Task != w.Task || g.Submission != w.Submission || !bytes.Equal(g.Patch, w.Patch) ||
			g.Compat() != w.Compat() || g.Model != w.Model || g.Line != w.Line {
			t.Errorf("item %d: %+v, want %+v", i, g, w)
		}
	}
	for name, tt := range map[string]struct {
		in   string
		line int
	}{
		"not JSON":          {"{\"task\":\"a\",\"submission\":\"b\"}\nnot json\n", 2},
		"an array":          {"[1]\n", 1},
		"trailing data":     {"{\"task\":\"a\",\"submission\":\"b\"} {}\n", 1},
		"no patch":          {"{\"instance_id\":\"x\"}\n", 1},
		"no submission":     {"\n\n{\"task\":\"a\"}\n", 3},
		"mixed":             {"{\"instance_id\":\"x\",\"model_patch\":\"\",\"task\":\"a\"}\n", 1},
		"neither":           {"{\"foo\":1}\n", 1},
		"duplicate id":      {"{\"id\":\"a\",\"task\":\"t\",\"submission\":\"s\"}\n{\"id\":\"a\",\"task\":\"t\",\"submission\":\"u\"}\n", 2},
		"wrong type":        {"{\"task\":1,\"submission\":\"s\"}\n", 1},
		"control character": {"{\"id\":\"a\\u0001\",\"task\":\"t\",\"submission\":\"s\"}\n", 1},
	} {
		_, err := batch.ParseItems(strings.NewReader(tt.in), "/base")
		var le *batch.LineError
		if !errors.As(err, &le) || le.Line != tt.line || !errors.Is(err, batch.ErrBadItem) {
			t.Errorf("%s: %v, want a LineError at line %d", name, err, tt.line)
		}
	}
	if _, err := batch.ParseItems(strings.NewReader("\n\n"), ""); !errors.Is(err, batch.ErrBadItem) {
		t.Errorf("no items: %v", err)
	}
}

func TestSafeID(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"plain-id_1.2", "sum:solutions/honest", "sum:solutions_honest", "..", ".hidden", "a/../../b", strings.Repeat("x", 300)} {
		s := batch.SafeID(id)
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\:") || strings.HasPrefix(s, ".") || len(s) > 120 {
			t.Errorf("SafeID(%q) = %q", id, s)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("SafeID(%q) = SafeID(%q) = %q", id, prev, s)
		}
		seen[s] = id
	}
	// Every name ends in a digest of the whole id, so that no id is
	// another's name (f7459a3 kept a safe id as it was).
	for _, id := range []string{"plain-id_1.2", "a", "sum:agents/victim"} {
		named := batch.SafeID(id)
		if !strings.HasPrefix(named, strings.NewReplacer(":", "_", "/", "_").Replace(id)+"-") || len(named) != len(id)+33 {
			t.Errorf("SafeID(%q) = %q: want the id's characters, '-' and 32 hex digits", id, named)
		}
		if again := batch.SafeID(named); again == named {
			t.Errorf("SafeID(%q) = the id itself", named)
		}
	}
}

// TestRunRefusesBadItems: an unknown task or a submission of the other
// tier's form is refused before anything is graded.
func TestRunRefusesBadItems(t *testing.T) {
	f := newFixture(t, 2)
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 1, false)
	for name, it := range map[string]batch.Item{
		"unknown task":   {ID: "x", Task: "nope", Submission: "/", Line: 7},
		"patch x strict": {ID: "x", Task: "copy", Patch: []byte{}, Line: 7},
		"missing sub":    {ID: "x", Task: "copy", Submission: filepath.Join(t.TempDir(), "missing"), Line: 7},
		// Items built in Go skip ParseItems's check: two with one id
		// would share a directory.
		"same id": {ID: f.items[0].ID, Task: "copy", Submission: f.items[0].Submission, Line: 7},
	} {
		before := grades()
		_, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: append(f.items, it), Tasks: f.tasks, Out: f.out})
		var le *batch.LineError
		if !errors.As(err, &le) || le.Line != 7 || grades() != before {
			t.Errorf("%s: %v, want a LineError at line 7 and nothing graded", name, err)
		}
	}
	// Two tasks with one id.
	root := t.TempDir()
	copyTask(t, filepath.Join(root, "a"), "copy")
	copyTask(t, filepath.Join(root, "b"), "copy")
	if _, err := batch.LoadTasks(t.Context(), []string{filepath.Join(root, "a"), filepath.Join(root, "b", "copy")}); !errors.Is(err, batch.ErrBadTasks) {
		t.Errorf("duplicate task ids: %v", err)
	}
}

// TestKilledRunResumes: what a run killed mid-write leaves — a
// half-written results line, an item directory without its bundle, a
// temporary file — is taken up by the resume: the item is graded again
// and results.jsonl ends with one line per item.
func TestKilledRunResumes(t *testing.T) {
	f := newFixture(t, 3)
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 1, false)
	if _, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out}); err != nil {
		t.Fatal(err)
	}
	recs := byItem(t, readRecords(t, f.out))
	// Item b's bundle was never renamed into place; its line is half there.
	b := recs["item b"]
	if err := os.Rename(filepath.Join(f.out, filepath.FromSlash(b.Bundle)),
		filepath.Join(f.out, filepath.FromSlash(b.Bundle))+".tmp-123"); err != nil {
		t.Fatal(err)
	}
	res, err := os.OpenFile(filepath.Join(f.out, batch.ResultsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	res.WriteString(`{"item":"item c","outc`)
	res.Close()
	// Item c's line is gone, its bundle there: it is resumed all the same.
	before := grades()
	sum, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out})
	if err != nil || sum.Graded != 1 || sum.Resumed != 2 || grades()-before != 1 {
		t.Fatalf("resume: %+v, %v; want item b graded again", sum, err)
	}
	after := byItem(t, readRecords(t, f.out))
	if len(after) != 3 || after["item b"].Nonce == b.Nonce || after["item a"] != recs["item a"] {
		t.Errorf("results.jsonl after the resume: %+v", after)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, data := range []string{"one", "two, longer"} {
		if err := batch.WriteFileAtomic(p, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(p); string(got) != data {
			t.Errorf("got %q, want %q", got, data)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files left in the directory, want 1", len(ents))
	}
	if err := batch.WriteFileAtomic(filepath.Join(dir, "missing", "f"), nil); err == nil {
		t.Error("wrote into a missing directory")
	}
}

// TestRunCancelledBeforeGrading: a run whose context ends before it
// grades anything leaves results.jsonl as it was.
func TestRunCancelledBeforeGrading(t *testing.T) {
	f := newFixture(t, 2)
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 1, false)
	if _, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(f.out, batch.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	sum, err := batch.Run(ctx, batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out})
	if !errors.Is(err, batch.ErrInterrupted) || sum != nil {
		t.Fatalf("got %+v, %v; want ErrInterrupted and no summary", sum, err)
	}
	if after, _ := os.ReadFile(filepath.Join(f.out, batch.ResultsFile)); !bytes.Equal(before, after) {
		t.Errorf("results.jsonl changed:\n%s\n%s", before, after)
	}
}

// TestErrorWithoutVerdict: a grade that ends without any verdict is an
// ERROR line with no bundle; verify has nothing to check; a resume keeps
// it unless RetryErrors.
func TestErrorWithoutVerdict(t *testing.T) {
	f := newFixture(t, 2) // item a honest, item b wrong
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 1, false)
	wrong := f.items[1].Submission
	hidden := wrong + ".away"
	sum, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out, Parallel: 1,
		Progress: func(p batch.Progress) {
			if p.Done == 1 {
				if err := os.Rename(wrong, hidden); err != nil {
					t.Error(err)
				}
			}
		}})
	if err != nil || sum.ErrorsWithoutVerdict != 1 || sum.Outcomes[schema.OutcomeError] != 1 {
		t.Fatalf("got %+v, %v", sum, err)
	}
	b := byItem(t, readRecords(t, f.out))["item b"]
	if b.Outcome != schema.OutcomeError || b.Bundle != "" || b.Error == "" {
		t.Fatalf("item b: %+v", b)
	}
	checks, err := batch.VerifyRun(f.out, signer.PublicKey())
	if err != nil || len(checks) != 2 || !checks[0].Verified() || !errors.Is(checks[1].Err, batch.ErrNoVerdict) {
		t.Fatalf("verify: %+v, %v", checks, err)
	}
	if err := os.Rename(hidden, wrong); err != nil {
		t.Fatal(err)
	}
	sum, err = batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out})
	if err != nil || sum.Resumed != 2 || sum.Graded != 0 {
		t.Fatalf("resume: %+v, %v; want the ERROR kept", sum, err)
	}
	sum, err = batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out, RetryErrors: true})
	if err != nil || sum.Resumed != 1 || sum.Graded != 1 || sum.Outcomes[schema.OutcomeFail] != 1 {
		t.Fatalf("retry: %+v, %v", sum, err)
	}
}
