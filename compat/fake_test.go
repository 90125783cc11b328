package compat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/compat/diffgate"
	"github.com/strictgrade/strictgrade/compat/junit"
	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
)

// oracle is a fake backend whose oracle image answers each container by
// its phase, from a script of Programs, and records the spec of every run.
type oracle struct {
	f     *sandboxtest.Fake
	image string // the oracle image's ID
	// reap names a phase whose container is removed while it runs, as a
	// "strictgrade gc --all" elsewhere would remove it: the backend fails
	// that run.
	reap string

	mu    sync.Mutex
	specs []sandbox.Spec
}

func newOracle(t *testing.T, script map[string]sandboxtest.Program) *oracle {
	t.Helper()
	o := &oracle{f: sandboxtest.NewFake()}
	t.Cleanup(func() { _ = o.f.Close() })
	o.image = o.f.Image("strictgrade/oracle", func(p *sandboxtest.Proc) int {
		s := p.Spec()
		o.mu.Lock()
		o.specs = append(o.specs, s)
		o.mu.Unlock()
		if s.Phase == o.reap {
			_, _ = o.f.GC(context.WithoutCancel(p.Context()), sandbox.GCOptions{Run: s.Run, All: true})
			p.Errorf("still running") // never arrives: the sandbox is gone
			return 0
		}
		prog := script[s.Phase]
		if prog == nil {
			p.Errorf("fake: no script for %s", s.Phase)
			return 127
		}
		return prog(p)
	})
	return o
}

// noLeftovers fails t when the backend still holds an object of run.
func (o *oracle) noLeftovers(t *testing.T, run string) {
	t.Helper()
	left, err := o.f.Leftovers(t.Context(), run)
	if err != nil || len(left) != 0 {
		t.Fatalf("left after run %s: %v (%v)", run, left, err)
	}
}

// collected leaves the given files in the output directory and exits
// with code.
func collected(code int, files map[string]string) sandboxtest.Program {
	return func(p *sandboxtest.Proc) int {
		for name, data := range files {
			if err := p.WriteFile(OutDir+"/"+name, []byte(data), 0o644); err != nil {
				p.Errorf("%v", err)
				return 125
			}
		}
		return code
	}
}

func preparedOK(base string) sandboxtest.Program {
	return prepareRun(sandbox.ExitExited, 0, []string{"clone", "checkout", "apply_check", "apply", "verify", "inject", "report"},
		map[string]string{"prepare.json": `{"status":"ok","stage":"","message":"","head":"` + base +
			`","changed":["textkit/core.py"],"changed_count":1,"steps_ms":{"checkout":1}}`})
}

// prepareRun is a preparation container that announces stages on
// standard error, leaves files in /out, and then exits with code, runs
// out of memory, or waits for its wall clock, as exit says.
func prepareRun(exit sandbox.ExitKind, code int, stages []string, files map[string]string) sandboxtest.Program {
	return func(p *sandboxtest.Proc) int {
		for _, s := range stages {
			fmt.Fprintf(p.Stderr, "prepare: stage %s\n", s)
		}
		if code := collected(code, files)(p); code == 125 {
			return code
		}
		return ending(exit, code)(p)
	}
}

// ending ends a container as exit says: with code, out of memory, or at
// its wall clock.
func ending(exit sandbox.ExitKind, code int) sandboxtest.Program {
	return func(p *sandboxtest.Proc) int {
		switch exit {
		case sandbox.ExitOOM:
			p.Alloc(1 << 40)
		case sandbox.ExitTimeout:
			<-p.Context().Done()
		}
		return code
	}
}

// The stages prepare.py announces up to the one it failed in.
var (
	untilClone = []string{"clone"}
	untilApply = []string{"clone", "checkout", "apply_check", "apply"}
	untilCheck = []string{"clone", "checkout", "apply_check"}
	allStages  = []string{"clone", "checkout", "apply_check", "apply", "verify", "inject", "report"}
	noDiff     = []string{"clone", "checkout", "verify", "inject", "report"}
)

// prepareReport is a prepare.json with the given status, stage and message.
func prepareReport(status, stage, message string) map[string]string {
	return map[string]string{"prepare.json": fmt.Sprintf(`{"status":%q,"stage":%q,"message":%q,"head":"","changed":[],"changed_count":0,"steps_ms":{}}`,
		status, stage, message)}
}

// junitFor writes a report in which every id passed, except those in
// failed, and adds extra testcases.
func junitFor(ids []string, failed map[string]bool, extra ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">`)
	for _, id := range append(append([]string(nil), ids...), extra...) {
		k := junit.KeyOf(id)
		fmt.Fprintf(&b, `<testcase classname="%s" name="%s" time="0.001">`, k.Classname, k.Name)
		if failed[id] {
			b.WriteString(`<failure message="assert 1 == 2">boom</failure>`)
		}
		b.WriteString(`</testcase>`)
	}
	b.WriteString(`</testsuite></testsuites>`)
	return b.String()
}

func suiteRun(ids []string, code int, failed map[string]bool, extra ...string) sandboxtest.Program {
	return collected(code, map[string]string{"report.xml": junitFor(ids, failed, extra...)})
}

func TestDecisionsWithFakeEngine(t *testing.T) {
	tk, err := Load(t.Context(), exampleTask)
	if err != nil {
		t.Fatal(err)
	}
	dir := copyTask(t)
	editSpec(t, dir, func(m map[string]any) { m["limits"].(map[string]any)["wall_seconds"] = 2 })
	short, err := Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	S, H := tk.ExistingIDs, tk.HiddenIDs
	base := tk.Spec.Repo.Base
	allFail := map[string]bool{}
	for _, id := range H {
		allFail[id] = true
	}
	diff := []byte(modifyCore)
	tests := []struct {
		name     string
		baseline bool
		// waits says a container waits for its wall clock: the task
		// then allows two seconds rather than sixty.
		waits   bool
		reap    string // a phase whose container the backend loses
		script  map[string]sandboxtest.Program
		outcome schema.Outcome
		code    string
		err     string // Grade or Check returns an error mentioning it
	}{
		{name: "everything passes", outcome: schema.OutcomePass, script: map[string]sandboxtest.Program{
			"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil), "oracle-hidden": suiteRun(H, 0, nil)}},
		{name: "the exit code contradicts a clean report", outcome: schema.OutcomeFail, code: schema.ReasonRuntimeError,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil), "oracle-hidden": suiteRun(H, 1, nil)}},
		{name: "exit code 0 does not rescue a failure", outcome: schema.OutcomeFail, code: schema.ReasonWrongAnswer,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil), "oracle-hidden": suiteRun(H, 0, map[string]bool{H[0]: true})}},
		{name: "a test nobody asked for", outcome: schema.OutcomeFail, code: schema.ReasonTestsMissing,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil), "oracle-hidden": suiteRun(H, 0, nil, "tests/test_x.py::test_planted")}},
		{name: "no report", outcome: schema.OutcomeFail, code: schema.ReasonTestsMissing,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": collected(0, nil)}},
		{name: "a forged unreadable report", outcome: schema.OutcomeFail, code: schema.ReasonTestsMissing,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": collected(0, map[string]string{"report.xml": "==== 3 passed ===="})}},
		{name: "output refused by the firewall", outcome: schema.OutcomeFail, code: schema.ReasonRejectedArtifact,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": func(p *sandboxtest.Proc) int {
					if err := p.Symlink("/etc/passwd", OutDir+"/report.xml"); err != nil {
						p.Errorf("%v", err)
						return 125
					}
					return 0
				}}},
		{name: "out of memory", outcome: schema.OutcomeFail, code: schema.ReasonMemoryLimit,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": ending(sandbox.ExitOOM, 0)}},
		{name: "git changed a path the gate did not keep", outcome: schema.OutcomeFail, code: schema.ReasonRejectedArtifact,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitExited, 0, allStages, prepareReport("gate_mismatch", "verify", "git changed conftest.py"))}},
		{name: "the diff does not apply", outcome: schema.OutcomeFail, code: schema.ReasonDiffDoesNotApply,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitExited, 0, allStages, prepareReport("apply_failed", "apply_check", "patch does not apply"))}},
		// From the stage that reads the diff on, whatever stops the
		// preparation is the candidate's doing.
		{name: "git apply runs into the wall clock", waits: true, outcome: schema.OutcomeFail, code: schema.ReasonTimeout,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitTimeout, 137, untilCheck, nil)}},
		{name: "git apply runs out of memory", outcome: schema.OutcomeFail, code: schema.ReasonMemoryLimit,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitOOM, 137, untilApply, nil)}},
		{name: "prepare crashes after reading the diff", outcome: schema.OutcomeFail, code: schema.ReasonRejectedArtifact,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitExited, 1, untilApply, nil)}},
		{name: "no report after the diff", outcome: schema.OutcomeFail, code: schema.ReasonRejectedArtifact,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitExited, 0, allStages, nil)}},
		{name: "a report over its cap after the diff", outcome: schema.OutcomeFail, code: schema.ReasonRejectedArtifact,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitExited, 0, allStages, map[string]string{"prepare.json": strings.Repeat(" ", maxPrepareReport+1)})}},
		{name: "the diff leaves no room for the hidden tests", outcome: schema.OutcomeFail, code: schema.ReasonRejectedArtifact,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitExited, 0, allStages, prepareReport("error", "inject", "tests is not a directory"))}},
		// Before it, the grader's.
		{name: "prepare crashes before the diff", outcome: schema.OutcomeError, code: schema.ReasonInfrastructure, err: "stage clone ended with code 1",
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitExited, 1, untilClone, nil)}},
		{name: "prepare crashes before any stage", outcome: schema.OutcomeError, code: schema.ReasonInfrastructure, err: "the start ended with code 1",
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitExited, 1, nil, nil)}},
		{name: "the clone runs into the wall clock", waits: true, outcome: schema.OutcomeError, code: schema.ReasonInfrastructure, err: "stage clone exceeded the time limit of",
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitTimeout, 137, untilClone, nil)}},
		{name: "prepare reports an error", outcome: schema.OutcomeError, code: schema.ReasonInfrastructure, err: "stage clone failed: bad bundle",
			script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitExited, 0, []string{"clone", "report"}, prepareReport("error", "clone", "bad bundle"))}},
		{name: "baseline: no diff, so a failed preparation is the grader's", baseline: true, outcome: schema.OutcomeError, code: schema.ReasonInfrastructure,
			err: "stage inject failed", script: map[string]sandboxtest.Program{
				"oracle-prepare": prepareRun(sandbox.ExitExited, 0, noDiff, prepareReport("error", "inject", "tests is not a directory"))}},
		{name: "a backend failure", outcome: schema.OutcomeError, code: schema.ReasonInfrastructure, err: "removed while it ran",
			reap: "oracle-existing", script: map[string]sandboxtest.Program{"oracle-prepare": preparedOK(base)}},
		{name: "fit baseline", baseline: true, outcome: schema.OutcomeFail, code: schema.ReasonWrongAnswer,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": suiteRun(H, 1, allFail), "oracle-hidden-2": suiteRun(H, 1, allFail)}},
		{name: "baseline existing suite fails", baseline: true, outcome: schema.OutcomeQuarantined, code: schema.ReasonBaselineSuiteFail,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 1, map[string]bool{S[2]: true}),
				"oracle-hidden": suiteRun(H, 1, allFail), "oracle-hidden-2": suiteRun(H, 1, allFail)}},
		{name: "baseline hidden test passes", baseline: true, outcome: schema.OutcomeQuarantined, code: schema.ReasonBaselinePassed,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": suiteRun(H, 1, map[string]bool{H[0]: true}), "oracle-hidden-2": suiteRun(H, 1, map[string]bool{H[0]: true})}},
		{name: "baseline runs disagree", baseline: true, outcome: schema.OutcomeQuarantined, code: schema.ReasonFlaky,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": suiteRun(H, 1, allFail), "oracle-hidden-2": suiteRun(H, 1, map[string]bool{H[0]: true})}},
		{name: "baseline timeout", baseline: true, waits: true, outcome: schema.OutcomeQuarantined, code: schema.ReasonTimeout,
			script: map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": ending(sandbox.ExitTimeout, 0), "oracle-hidden-2": suiteRun(H, 1, allFail)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOracle(t, tt.script)
			o.reap = tt.reap
			req := Request{Header: grading.Header{Run: "r1", Nonce: "nonce-nonce-nonce-1"}, Task: tk, Image: o.image}
			if tt.waits {
				req.Task = short
			}
			var out *Outcome
			var err error
			if tt.baseline {
				out, err = Check(t.Context(), o.f, req)
			} else {
				req.Diff = diff
				out, err = Grade(t.Context(), o.f, req)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if out == nil {
				t.Fatal("no outcome")
			}
			v := out.Verdict
			if v.Outcome != tt.outcome || v.ReasonCode != tt.code {
				t.Fatalf("got %s %s (%s), want %s %s", v.Outcome, v.ReasonCode, v.Reason, tt.outcome, tt.code)
			}
			if _, err := schema.Marshal(v); err != nil {
				t.Fatalf("verdict fails the schema: %v", err)
			}
			if v.Nonce != req.Nonce || v.RunID != "r1" || len(v.Cases) != len(S)+len(H) {
				t.Fatalf("verdict not bound: nonce %q run %q cases %d", v.Nonce, v.RunID, len(v.Cases))
			}
			o.noLeftovers(t, "r1")
		})
	}
}

// TestCheckImage: a container that ran another image than the one asked
// for by ID, or than an earlier container, is the grader's error. A
// backend runs an image asked for by ID exactly, so only a unit test
// reaches this check.
func TestCheckImage(t *testing.T) {
	want, other := "sha256:"+strings.Repeat("ab", 32), "sha256:"+strings.Repeat("0", 64)
	g := &grader{req: Request{Image: want}}
	if err := g.checkImage(&sandbox.Result{}); err == nil {
		t.Error("no image reported, and no error")
	}
	if err := g.checkImage(&sandbox.Result{ImageID: other}); err == nil || !strings.Contains(err.Error(), "expected "+want) {
		t.Errorf("another image than asked for: %v", err)
	}
	g = &grader{req: Request{Image: "strictgrade/oracle"}}
	if err := g.checkImage(&sandbox.Result{ImageID: want}); err != nil {
		t.Fatal(err)
	}
	if err := g.checkImage(&sandbox.Result{ImageID: other}); err == nil || !strings.Contains(err.Error(), "different images") {
		t.Errorf("two containers, two images: %v", err)
	}
}

// TestHardenedSpecs checks what every container is asked for.
func TestHardenedSpecs(t *testing.T) {
	tk, err := Load(t.Context(), exampleTask)
	if err != nil {
		t.Fatal(err)
	}
	o := newOracle(t, map[string]sandboxtest.Program{
		"oracle-prepare": preparedOK(tk.Spec.Repo.Base), "oracle-existing": suiteRun(tk.ExistingIDs, 0, nil), "oracle-hidden": suiteRun(tk.HiddenIDs, 0, nil)})
	out, err := Grade(t.Context(), o.f, Request{Task: tk, Image: o.image, Diff: []byte(modifyCore)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict.Outcome != schema.OutcomePass {
		t.Fatalf("%s: %s", out.Verdict.Outcome, out.Verdict.Reason)
	}
	o.noLeftovers(t, out.Verdict.RunID)
	if len(o.specs) != 3 {
		t.Fatalf("%d containers", len(o.specs))
	}
	for _, s := range o.specs {
		// 512 MiB of memory: at most 128 processes, however many the task allows.
		if s.Limits.CPU != 60*time.Second || s.Limits.Wall != 0 || s.Limits.MemoryBytes != 512<<20 || s.Limits.PIDs != 128 || !strings.HasPrefix(s.Run, "g") {
			t.Errorf("%s: limits %+v run %q", s.Phase, s.Limits, s.Run)
		}
		// Nothing a container writes but the checkout (prepare only)
		// lands on the host's disk: its output directory is a tmpfs.
		if s.StreamOut == nil || s.StreamOut.Dir != OutDir || len(s.Collect) != 0 {
			t.Errorf("%s: output %+v, collect %v", s.Phase, s.StreamOut, s.Collect)
		}
		for _, m := range s.Mounts {
			if !m.ReadOnly && (s.Phase != "oracle-prepare" || m.Target != WorkDir) {
				t.Errorf("%s mounts %s writable", s.Phase, m.Target)
			}
		}
		for _, e := range s.Env {
			if strings.HasPrefix(e, "PYTHONPATH=") || strings.HasPrefix(e, "PYTEST_ADDOPTS=") {
				t.Errorf("%s: %s", s.Phase, e)
			}
		}
		if s.Phase == "oracle-prepare" {
			continue
		}
		// The test runs see the checkout read-only and never the inputs.
		for _, m := range s.Mounts {
			if m.Target == InputsDir || m.Target == WorkDir && !m.ReadOnly {
				t.Errorf("%s mounts %s (read-only %v)", s.Phase, m.Target, m.ReadOnly)
			}
		}
		if len(s.Cmd) < 6 || s.Cmd[2] != "-c" || s.Cmd[3] != runnerScript || s.Cmd[4] != fmt.Sprint(testOutput) {
			t.Errorf("%s: not run under runner.py with its output capped", s.Phase)
		}
		cmd := strings.Join(s.Cmd, " ")
		for _, want := range []string{"python3 -P -s -B -m pytest -c /work/pytest.ini", "--rootdir=/work/repo", "--confcutdir=/work/repo",
			"-p no:cacheprovider", "-o addopts=", "--junitxml=/out/report.xml", " -- tests/"} {
			if !strings.Contains(cmd, want) {
				t.Errorf("%s: command lacks %q: %s", s.Phase, want, cmd)
			}
		}
	}
}

// bigDrop is a diff at the default limits that the gate mostly drops:
// files whose paths are nearly the firewall's longest (1024 bytes), one of
// them (a setup.py) with as many hunks as the remaining bytes hold, and the
// fix of modifyCore. The hunks of that one file alone, each recorded with
// its path, would make a verdict larger than schema.MaxSize.
func bigDrop() string {
	c := strings.Repeat("é", 125) // 250 bytes: a path component may have 255
	long := func(i int, name string) string { return fmt.Sprintf("docs/%04d/%s/%s/%s/%s/%s", i, c, c, c, c, name) }
	var b strings.Builder
	for i := range diffgate.DefaultDiffFiles - 2 {
		if i == 400 {
			p := long(i, "setup.py")
			b.WriteString("diff --git a/" + p + " b/" + p + "\n--- a/" + p + "\n+++ b/" + p + "\n")
			rest := (diffgate.DefaultDiffFiles-3-i)*len(newFile(long(i, "a.md"))) + len(modifyCore)
			for b.Len()+20 <= diffgate.DefaultDiffBytes-rest {
				b.WriteString("@@ -1 +1 @@\n-a\n+b\n")
			}
			continue
		}
		b.WriteString(newFile(long(i, "a.md")))
	}
	b.WriteString(modifyCore)
	return b.String()
}

// TestDroppedHunksInVerdict grades the largest diff the gate accepts,
// nearly all of it dropped, and checks that the verdict stays small: the
// first hunks with their paths cut, and the counts in the reason.
func TestDroppedHunksInVerdict(t *testing.T) {
	tk, err := Load(t.Context(), exampleTask)
	if err != nil {
		t.Fatal(err)
	}
	diff := []byte(bigDrop())
	if len(diff) > diffgate.DefaultDiffBytes {
		t.Fatalf("the diff is %d bytes", len(diff))
	}
	S, H := tk.ExistingIDs, tk.HiddenIDs
	for _, tt := range []struct {
		name    string
		hidden  map[string]bool // failing hidden tests
		outcome schema.Outcome
	}{
		{name: "pass", outcome: schema.OutcomePass},
		{name: "fail", hidden: map[string]bool{H[0]: true}, outcome: schema.OutcomeFail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOracle(t, map[string]sandboxtest.Program{
				"oracle-prepare": preparedOK(tk.Spec.Repo.Base), "oracle-existing": suiteRun(S, 0, nil), "oracle-hidden": suiteRun(H, 0, tt.hidden)})
			out, err := Grade(t.Context(), o.f, Request{Task: tk, Image: o.image, Diff: diff})
			if err != nil {
				t.Fatal(err)
			}
			v := out.Verdict
			data, err := schema.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if v.Outcome != tt.outcome || len(data) > 512<<10 {
				t.Fatalf("%s, %d bytes", v.Outcome, len(data))
			}
			f := out.Filtered
			if f == nil {
				t.Fatalf("the gate refused the diff: %s", v.Reason)
			}
			if f.Sections != diffgate.DefaultDiffFiles-1 || f.DroppedTotal < 50_000 || len(v.Compat.DroppedHunks) != maxVerdictHunks {
				t.Fatalf("sections %d, dropped %d, in the verdict %d", f.Sections, f.DroppedTotal, len(v.Compat.DroppedHunks))
			}
			for _, d := range v.Compat.DroppedHunks {
				if n := len([]rune(d.Path)); n > maxVerdictPath {
					t.Fatalf("a path of %d characters", n)
				}
			}
			note := fmt.Sprintf("the diff gate dropped %d hunks (denylist:setup.py %d, not_allowlisted %d); the verdict lists the first %d",
				f.DroppedTotal, f.DroppedByRule["denylist:setup.py"], diffgate.DefaultDiffFiles-3, maxVerdictHunks)
			if !strings.HasSuffix(v.Reason, note) {
				t.Fatalf("reason %q does not end with %q", v.Reason, note)
			}
			// Every record the gate keeps, each with its whole path, is
			// more than a verdict can hold.
			whole := *v
			whole.Compat = &schema.Compat{Mode: schema.ModeFinal, DroppedHunks: f.Dropped}
			if _, err := schema.Marshal(&whole); !errors.Is(err, schema.ErrTooLarge) {
				t.Fatalf("a verdict with every record: %v, want ErrTooLarge", err)
			}
			var entries int
			for _, e := range out.Log {
				if e.Phase == "gate" && strings.Contains(e.Message, "dropped") {
					entries++
				}
			}
			if entries > maxLoggedDrops+1 {
				t.Fatalf("%d log entries about dropped hunks", entries)
			}
		})
	}
}

// TestCaseReasonsBounded grades a task with as many tests as a task may
// have, all failing with long messages in two-byte characters: the
// reasons share a budget, and the verdict stays signable.
func TestCaseReasonsBounded(t *testing.T) {
	dir := copyTask(t)
	var S, H []string
	for i := range maxTests {
		S = append(S, fmt.Sprintf("tests/test_core.py::test_existing_%04d", i))
		H = append(H, fmt.Sprintf("tests/test_slugify_hidden.py::test_hidden_%04d", i))
	}
	writeList(t, dir, strings.Join(S, "\n")+"\n")
	editSpec(t, dir, func(m map[string]any) { m["hidden"].(map[string]any)["tests"] = H })
	tk, err := Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	message := strings.Repeat("é", 1000)
	failAll := func(ids []string) sandboxtest.Program {
		var b strings.Builder
		b.WriteString(`<testsuites><testsuite name="pytest">`)
		for _, id := range ids {
			k := junit.KeyOf(id)
			fmt.Fprintf(&b, `<testcase classname="%s" name="%s"><failure message="%s"/></testcase>`, k.Classname, k.Name, message)
		}
		b.WriteString(`</testsuite></testsuites>`)
		return collected(1, map[string]string{"report.xml": b.String()})
	}
	o := newOracle(t, map[string]sandboxtest.Program{
		"oracle-prepare": preparedOK(tk.Spec.Repo.Base), "oracle-existing": failAll(S), "oracle-hidden": failAll(H)})
	out, err := Grade(t.Context(), o.f, Request{Task: tk, Image: o.image, Diff: []byte(modifyCore)})
	if err != nil {
		t.Fatal(err)
	}
	v := out.Verdict
	if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonWrongAnswer || len(v.Cases) != 2*maxTests {
		t.Fatalf("%s %s, %d cases", v.Outcome, v.ReasonCode, len(v.Cases))
	}
	data, err := schema.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > schema.MaxSize*3/4 {
		t.Fatalf("a verdict of %d bytes leaves little room", len(data))
	}
}

// modifyCore is a diff the textkit task's gate keeps whole.
const modifyCore = `diff --git a/textkit/core.py b/textkit/core.py
index 9e7c120..962e910 100644
--- a/textkit/core.py
+++ b/textkit/core.py
@@ -1,3 +1,3 @@
 import re
-x = 1
+x = 2
 y = 3
`

// newFile is a git section adding path with one line.
func newFile(path string) string {
	return "diff --git a/" + path + " b/" + path + "\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n+++ b/" + path +
		"\n@@ -0,0 +1 @@\n+pass\n"
}
