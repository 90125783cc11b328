package compat

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/schema"
)

const fakeImage = "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"

// fakeEngine answers Run from a script keyed by phase and tracks volumes,
// so the decisions can be tested without a daemon.
type fakeEngine struct {
	mu      sync.Mutex
	n       int
	volumes map[string]bool
	script  map[string]func(engine.Spec) (*engine.Result, error)
	specs   []engine.Spec
}

func newFakeEngine(script map[string]func(engine.Spec) (*engine.Result, error)) *fakeEngine {
	return &fakeEngine{volumes: map[string]bool{}, script: script}
}

func (f *fakeEngine) NewVolume(ctx context.Context, run, phase string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	name := fmt.Sprintf("%s-%s-%d", run, phase, f.n)
	f.volumes[name] = true
	return name, nil
}

func (f *fakeEngine) CopyIn(ctx context.Context, run, vol string, archive io.Reader, opts engine.CopyInOptions) (*firewall.Manifest, error) {
	return firewall.Filter(ctx, archive, io.Discard, opts.Policy)
}

func (f *fakeEngine) Run(ctx context.Context, s engine.Spec) (*engine.Result, error) {
	f.mu.Lock()
	f.specs = append(f.specs, s)
	answer := f.script[s.Phase]
	f.mu.Unlock()
	if answer == nil {
		return nil, fmt.Errorf("fake: no answer for %s", s.Phase)
	}
	return answer(s)
}

func (f *fakeEngine) RemoveVolume(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.volumes, name)
	return nil
}

// collected is a result whose /out holds the given files.
func collected(code int, files map[string]string) *engine.Result {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "out/", Typeflag: tar.TypeDir, Mode: 0o755})
	for name, data := range files {
		tw.WriteHeader(&tar.Header{Name: "out/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))})
		tw.Write([]byte(data))
	}
	tw.Close()
	return &engine.Result{ImageID: fakeImage, Exit: engine.ExitExited, Code: code, Duration: time.Millisecond,
		Collected: map[string]engine.Collected{OutDir: {Archive: buf.Bytes()}}}
}

func preparedOK(base string) func(engine.Spec) (*engine.Result, error) {
	return func(engine.Spec) (*engine.Result, error) {
		return collected(0, map[string]string{"prepare.json": `{"status":"ok","stage":"","message":"","head":"` + base +
			`","changed":["textkit/core.py"],"steps_ms":{"checkout":1}}`}), nil
	}
}

// junitFor writes a report in which every id passed, except those in
// failed, and adds extra testcases.
func junitFor(ids []string, failed map[string]bool, extra ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">`)
	for _, id := range append(append([]string(nil), ids...), extra...) {
		k := keyOf(id)
		fmt.Fprintf(&b, `<testcase classname="%s" name="%s" time="0.001">`, k.classname, k.name)
		if failed[id] {
			b.WriteString(`<failure message="assert 1 == 2">boom</failure>`)
		}
		b.WriteString(`</testcase>`)
	}
	b.WriteString(`</testsuite></testsuites>`)
	return b.String()
}

func suiteRun(ids []string, code int, failed map[string]bool, extra ...string) func(engine.Spec) (*engine.Result, error) {
	return func(s engine.Spec) (*engine.Result, error) {
		return collected(code, map[string]string{"report.xml": junitFor(ids, failed, extra...)}), nil
	}
}

func TestDecisionsWithFakeEngine(t *testing.T) {
	tk, err := Load(t.Context(), exampleTask)
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
		script   map[string]func(engine.Spec) (*engine.Result, error)
		outcome  schema.Outcome
		code     string
		err      string // Grade or Check returns an error mentioning it
	}{
		{name: "everything passes", outcome: schema.OutcomePass, script: map[string]func(engine.Spec) (*engine.Result, error){
			"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil), "oracle-hidden": suiteRun(H, 0, nil)}},
		{name: "the exit code contradicts a clean report", outcome: schema.OutcomeFail, code: schema.ReasonRuntimeError,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil), "oracle-hidden": suiteRun(H, 1, nil)}},
		{name: "exit code 0 does not rescue a failure", outcome: schema.OutcomeFail, code: schema.ReasonWrongAnswer,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil), "oracle-hidden": suiteRun(H, 0, map[string]bool{H[0]: true})}},
		{name: "a test nobody asked for", outcome: schema.OutcomeFail, code: schema.ReasonTestsMissing,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil), "oracle-hidden": suiteRun(H, 0, nil, "tests/test_x.py::test_planted")}},
		{name: "no report", outcome: schema.OutcomeFail, code: schema.ReasonTestsMissing,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": func(engine.Spec) (*engine.Result, error) { return collected(0, nil), nil }}},
		{name: "a forged unreadable report", outcome: schema.OutcomeFail, code: schema.ReasonTestsMissing,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": func(engine.Spec) (*engine.Result, error) {
					return collected(0, map[string]string{"report.xml": "==== 3 passed ===="}), nil
				}}},
		{name: "output refused by the firewall", outcome: schema.OutcomeFail, code: schema.ReasonRejectedArtifact,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": func(engine.Spec) (*engine.Result, error) {
					return nil, fmt.Errorf("%w: /out: symlink", engine.ErrCollect)
				}}},
		{name: "out of memory", outcome: schema.OutcomeFail, code: schema.ReasonMemoryLimit,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": func(s engine.Spec) (*engine.Result, error) {
					r := collected(137, nil)
					r.Exit = engine.ExitOOM
					return r, nil
				}}},
		{name: "git changed a path the gate did not keep", outcome: schema.OutcomeFail, code: schema.ReasonRejectedArtifact,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": func(engine.Spec) (*engine.Result, error) {
					return collected(0, map[string]string{"prepare.json": `{"status":"gate_mismatch","stage":"verify","message":"git changed conftest.py","head":"","changed":["conftest.py"],"steps_ms":{}}`}), nil
				}}},
		{name: "prepare crashes", outcome: schema.OutcomeError, code: schema.ReasonInfrastructure, err: "prepare ended with exited (code 1)",
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": func(engine.Spec) (*engine.Result, error) { return collected(1, nil), nil }}},
		{name: "prepare reports an error", outcome: schema.OutcomeError, code: schema.ReasonInfrastructure, err: "prepare failed at clone",
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": func(engine.Spec) (*engine.Result, error) {
					return collected(0, map[string]string{"prepare.json": `{"status":"error","stage":"clone","message":"bad bundle","head":"","changed":[],"steps_ms":{}}`}), nil
				}}},
		{name: "daemon failure", outcome: schema.OutcomeError, code: schema.ReasonInfrastructure, err: "connection refused",
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base),
				"oracle-existing": func(engine.Spec) (*engine.Result, error) {
					return nil, errors.New("connection refused")
				}}},
		{name: "another image", outcome: schema.OutcomeError, code: schema.ReasonInfrastructure, err: "expected " + fakeImage,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": func(s engine.Spec) (*engine.Result, error) {
					r, _ := preparedOK(base)(s)
					r.ImageID = "sha256:" + strings.Repeat("0", 64)
					return r, nil
				}}},
		{name: "fit baseline", baseline: true, outcome: schema.OutcomeFail, code: schema.ReasonWrongAnswer,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": suiteRun(H, 1, allFail), "oracle-hidden-2": suiteRun(H, 1, allFail)}},
		{name: "baseline existing suite fails", baseline: true, outcome: schema.OutcomeQuarantined, code: schema.ReasonBaselineSuiteFail,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 1, map[string]bool{S[2]: true}),
				"oracle-hidden": suiteRun(H, 1, allFail), "oracle-hidden-2": suiteRun(H, 1, allFail)}},
		{name: "baseline hidden test passes", baseline: true, outcome: schema.OutcomeQuarantined, code: schema.ReasonBaselinePassed,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": suiteRun(H, 1, map[string]bool{H[0]: true}), "oracle-hidden-2": suiteRun(H, 1, map[string]bool{H[0]: true})}},
		{name: "baseline runs disagree", baseline: true, outcome: schema.OutcomeQuarantined, code: schema.ReasonFlaky,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": suiteRun(H, 1, allFail), "oracle-hidden-2": suiteRun(H, 1, map[string]bool{H[0]: true})}},
		{name: "baseline timeout", baseline: true, outcome: schema.OutcomeQuarantined, code: schema.ReasonTimeout,
			script: map[string]func(engine.Spec) (*engine.Result, error){
				"oracle-prepare": preparedOK(base), "oracle-existing": suiteRun(S, 0, nil),
				"oracle-hidden": func(engine.Spec) (*engine.Result, error) {
					r := collected(137, nil)
					r.Exit = engine.ExitTimeout
					return r, nil
				}, "oracle-hidden-2": suiteRun(H, 1, allFail)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeEngine(tt.script)
			req := Request{Run: "r1", Task: tk, Image: fakeImage, Nonce: "nonce-nonce-nonce-1"}
			var out *Outcome
			var err error
			if tt.baseline {
				out, err = Check(t.Context(), fake, req)
			} else {
				req.Diff = diff
				out, err = Grade(t.Context(), fake, req)
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
			if len(fake.volumes) != 0 {
				t.Fatalf("volumes left: %v", fake.volumes)
			}
		})
	}
}

// TestHardenedSpecs checks what every container is asked for.
func TestHardenedSpecs(t *testing.T) {
	tk, err := Load(t.Context(), exampleTask)
	if err != nil {
		t.Fatal(err)
	}
	fake := newFakeEngine(map[string]func(engine.Spec) (*engine.Result, error){
		"oracle-prepare": preparedOK(tk.Spec.Repo.Base), "oracle-existing": suiteRun(tk.ExistingIDs, 0, nil), "oracle-hidden": suiteRun(tk.HiddenIDs, 0, nil)})
	if _, err := Grade(t.Context(), fake, Request{Task: tk, Image: fakeImage, Diff: []byte(modifyCore)}); err != nil {
		t.Fatal(err)
	}
	if len(fake.specs) != 3 {
		t.Fatalf("%d containers", len(fake.specs))
	}
	for _, s := range fake.specs {
		if s.Limits.Wall != 60*time.Second || s.Limits.MemoryBytes != 512<<20 || !strings.HasPrefix(s.Run, "c") {
			t.Errorf("%s: limits %+v run %q", s.Phase, s.Limits, s.Run)
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
		cmd := strings.Join(s.Cmd, " ")
		for _, want := range []string{"python3 -P -s -B -m pytest -c /work/pytest.ini", "--rootdir=/work/repo", "--confcutdir=/work/repo",
			"-p no:cacheprovider", "-o addopts=", "--junitxml=/out/report.xml", " -- tests/"} {
			if !strings.Contains(cmd, want) {
				t.Errorf("%s: command lacks %q: %s", s.Phase, want, cmd)
			}
		}
	}
}
