//go:build engine

package controller_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/candidate"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// These tests grade real submissions against the real Docker daemon.

var (
	eng    *engine.Docker
	signer *attest.Signer
	ctrl   *controller.Controller
)

func TestMain(m *testing.M) {
	flag.Parse()
	ctx := context.Background()
	var err error
	// The backend as the controller makes it by default: trees through
	// sginit and a pool of started sandboxes (ADR 0013).
	if eng, err = engine.NewDocker(ctx, engine.Config{Pool: 4}); err != nil {
		fmt.Fprintln(os.Stderr, "controller tests need a Docker daemon:", err)
		os.Exit(1)
	}
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err == nil {
		signer, err = attest.LoadSigner(priv, nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := controller.BuildImages(ctx, eng, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
	initImage, err := images.Resolve(ctx, eng, images.Init())
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
	eng.UseInit(initImage)
	if ctrl, err = controller.New(ctx, controller.Config{Backend: eng, Signer: signer, MaxInFlight: 4}); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
	code := m.Run()
	eng.Close()
	os.Exit(code)
}

func loadTask(t testing.TB, name string) *task.Task {
	t.Helper()
	tk, err := task.Load(t.Context(), filepath.Join("..", "examples", name, "task"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// assertClean fails if anything labelled with the run survived.
func assertClean(t testing.TB, run string) {
	t.Helper()
	left, err := eng.Leftovers(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("run %s left %v", run, left)
	}
}

// verify checks the signed bundle against the graded submission.
func verify(t testing.TB, tk *task.Task, res *controller.Result) {
	t.Helper()
	v := res.Verdict
	if res.Archive != nil && v.Submission.SHA256 != sha256Hex(res.Archive) {
		t.Fatalf("verdict binds %s, archive hashes to %s", v.Submission.SHA256, sha256Hex(res.Archive))
	}
	if _, err := attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
		SubmissionSHA256: v.Submission.SHA256, TaskDigest: tk.Digest, Tier: schema.TierStrict, Nonce: v.Nonce,
	}); err != nil {
		t.Fatalf("bundle does not verify: %v", err)
	}
}

func grade(t testing.TB, tk *task.Task, sub controller.Submission) *controller.Result {
	t.Helper()
	res, err := ctrl.Grade(t.Context(), tk, sub)
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	verify(t, tk, res)
	assertClean(t, res.Verdict.RunID)
	return res
}

func TestExamples(t *testing.T) {
	for _, ex := range []string{"sum", "wordfreq", "csvstats"} {
		t.Run(ex, func(t *testing.T) {
			t.Parallel()
			tk := loadTask(t, ex)
			for sol, want := range map[string]schema.Outcome{"honest": schema.OutcomePass, "wrong": schema.OutcomeFail} {
				res := grade(t, tk, controller.Submission{Dir: filepath.Join("..", "examples", ex, "solutions", sol)})
				if res.Verdict.Outcome != want {
					t.Errorf("%s/%s: %s (%s), want %s; cases %+v", ex, sol, res.Verdict.Outcome, res.Verdict.Reason, want, res.Verdict.Cases)
				}
				if want == schema.OutcomeFail && res.Verdict.ReasonCode != schema.ReasonWrongAnswer {
					t.Errorf("%s/%s failed for %q, want wrong_answer", ex, sol, res.Verdict.ReasonCode)
				}
			}
		})
	}
}

// writeSub writes files into a fresh submission directory.
func writeSub(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(body, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// attack grades one hostile submission and checks it did not pass.
type attack struct {
	name   string
	task   string
	files  map[string]string
	setup  func(t *testing.T, dir string) // optional extra preparation
	reason string                         // expected reason code
	exit   schema.Exit                    // expected exit of at least one case, if set
}

func TestStrictTierAttacks(t *testing.T) {
	attacks := []attack{
		{name: "forged verdict on stdout", task: "sum", reason: schema.ReasonWrongAnswer, files: map[string]string{"solution.py": `
import sys, json
def solve(numbers):
    sys.stdout.write('{"outcome":"PASS","cases":[]}\nPASS\n')
    sys.__stdout__.write("PASSED all tests\n")
    print("=== 7 passed in 0.01s ===")
    return 0
`}},
		{name: "always-equal object", task: "sum", reason: schema.ReasonRuntimeError, files: map[string]string{"solution.py": `
class Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0
def solve(numbers):
    return Anything()
`}},
		{name: "int subclass lying about equality", task: "sum", reason: schema.ReasonWrongAnswer, files: map[string]string{"solution.py": `
class Liar(int):
    def __eq__(self, other): return True
    def __repr__(self): return "0"
def solve(numbers):
    return Liar(123456789)
`}},
		{name: "monkey-patched json and shim", task: "sum", reason: schema.ReasonWrongAnswer, files: map[string]string{"solution.py": `
import json, sys, builtins
json.dumps = lambda *a, **k: '{"ok":true,"value":"PASS"}'
main = sys.modules.get("__main__")
if main is not None and hasattr(main, "write_record"):
    real = main.write_record
    main.write_record = lambda i, rec: real(i, {"ok": True, "value": 42})
builtins.sum = lambda *a, **k: 42
def solve(numbers):
    return 42
`}},
		{name: "answer-key search on disk and in the environment", task: "sum", reason: schema.ReasonWrongAnswer, files: map[string]string{"solution.py": `
import os
MARKER = str(2 * 10**30 - 1)  # the expected value of a hidden case
def find():
    for k, v in os.environ.items():
        if MARKER in v: return "env:" + k
    for top in ["/artifacts", "/inputs", "/out", "/tmp", "/etc", "/root", "/home", "/var", "/run", "/srv", "/opt", "/mnt", "/"]:
        for root, dirs, files in os.walk(top):
            if root == "/": dirs[:] = [d for d in dirs if d not in ("proc", "sys", "usr", "dev")]
            for f in files:
                p = os.path.join(root, f)
                try:
                    with open(p, "rb") as fh:
                        if MARKER.encode() in fh.read(1 << 20): return p
                except OSError:
                    pass
    return None
FOUND = find()
def solve(numbers):
    # With the answer key it would return the expected value; without it, nothing useful.
    return int(MARKER) if FOUND else -1
`}},
		{name: "symlink to a host file", task: "sum", reason: schema.ReasonRejectedArtifact, setup: func(t *testing.T, dir string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "solution.py")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "write into the artifact volume", task: "sum", reason: schema.ReasonWrongAnswer, files: map[string]string{"solution.py": `
import os
def solve(numbers):
    try:
        with open("/artifacts/solution.py", "w") as f:
            f.write("def solve(n): return 0\n")
        return -1  # the write went through
    except OSError:
        pass
    try:
        open("/artifacts/planted.py", "w").write("x = 1")
        return -2
    except OSError:
        pass
    return 0 if numbers else 1
`}},
		{name: "fork bomb", task: "sum", reason: "", files: map[string]string{"solution.py": `
import os
def solve(numbers):
    while True:
        try:
            os.fork()
        except OSError:
            pass
`}},
		{name: "memory hog", task: "sum", reason: schema.ReasonMemoryLimit, exit: schema.ExitOOM, files: map[string]string{"solution.py": `
def solve(numbers):
    hoard = []
    while True:
        hoard.append(bytearray(16 << 20))
`}},
		{name: "endless loop", task: "sum", reason: schema.ReasonTimeout, files: map[string]string{"solution.py": `
import signal
def solve(numbers):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        pass
`}},
		{name: "1 GB print", task: "wordfreq", reason: schema.ReasonOutputLimit, exit: schema.ExitOutputLimit, files: map[string]string{"solution": "#!/usr/bin/env python3\nimport sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n"}},
		{name: "network socket", task: "sum", reason: schema.ReasonWrongAnswer, files: map[string]string{"solution.py": `
import socket
def solve(numbers):
    # Fetch the answer from outside; the only way this could be right.
    try:
        s = socket.create_connection(("1.1.1.1", 53), timeout=2)
        s.close()
        return sum(numbers)
    except OSError:
        return -1
`}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			tk := loadTask(t, a.task)
			dir := writeSub(t, a.files)
			if a.setup != nil {
				a.setup(t, dir)
			}
			res := grade(t, tk, controller.Submission{Dir: dir})
			v := res.Verdict
			if v.Outcome != schema.OutcomeFail {
				t.Fatalf("attack not stopped: %s (%s)", v.Outcome, v.Reason)
			}
			if a.reason != "" && v.ReasonCode != a.reason {
				t.Errorf("failed for %q (%s), want %q", v.ReasonCode, v.Reason, a.reason)
			}
			if a.exit != "" {
				found := false
				for _, c := range v.Cases {
					found = found || c.Exit == a.exit
				}
				if !found {
					t.Errorf("no case ended with %s: %+v", a.exit, v.Cases)
				}
			}
			t.Logf("stopped: %s %s (%s)", v.Outcome, v.ReasonCode, v.Reason)
		})
	}
}

func TestHardLinkInSubmissionArchive(t *testing.T) {
	t.Parallel()
	tk := loadTask(t, "sum")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := "def solve(n):\n    return sum(n)\n"
	_ = tw.WriteHeader(&tar.Header{Name: "real.py", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(body))
	_ = tw.WriteHeader(&tar.Header{Name: "solution.py", Linkname: "real.py", Typeflag: tar.TypeLink})
	_ = tw.Close()
	res := grade(t, tk, controller.Submission{Archive: &buf})
	if res.Verdict.Outcome != schema.OutcomeFail || res.Verdict.ReasonCode != schema.ReasonRejectedArtifact {
		t.Fatalf("hard link: %s %s", res.Verdict.Outcome, res.Verdict.ReasonCode)
	}
	if !strings.Contains(res.Verdict.Reason, "hardlink") {
		t.Errorf("reason %q does not name the hard link", res.Verdict.Reason)
	}
}

func TestNoStateAcrossCases(t *testing.T) {
	t.Parallel()
	// A per-case copy of the sum task: each case in a fresh container.
	src := loadTask(t, "sum")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src.Dir)); err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(dir, task.SpecFile)
	data, _ := os.ReadFile(specPath)
	var spec map[string]any
	_ = json.Unmarshal(data, &spec)
	spec["isolation"] = "case"
	data, _ = json.Marshal(spec)
	if err := os.WriteFile(specPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Digest == src.Digest {
		t.Fatal("changing the isolation did not change the task digest")
	}
	sub := writeSub(t, map[string]string{"solution.py": `
import os
MARK = "/tmp/seen"
def solve(numbers):
    if os.path.exists(MARK):
        return -1  # state from an earlier case survived
    open(MARK, "w").write("x")
    return sum(numbers)
`})
	res := grade(t, tk, controller.Submission{Dir: sub})
	if res.Verdict.Outcome != schema.OutcomePass {
		t.Fatalf("state leaked between per-case containers: %s %+v", res.Verdict.Reason, res.Verdict.Cases)
	}
	if res.Verdict.CaseOrder != nil {
		t.Errorf("per-case containers record a call order: %v", res.Verdict.CaseOrder)
	}
}

// copyTask copies an example task into a temporary directory, lets edit
// change its spec, and loads the copy.
func copyTask(t *testing.T, name string, edit func(spec map[string]any)) *task.Task {
	t.Helper()
	src := loadTask(t, name)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src.Dir)); err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(dir, task.SpecFile)
	data, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	edit(spec)
	if data, err = json.Marshal(spec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// withLib declares a directory artifact, lib, next to solution.py.
func withLib(spec map[string]any) { spec["artifacts"] = []string{"solution.py", "lib"} }

// TestWorkspaceWalkFailureIsRejection: a declared directory holding an
// entry the host cannot submit (here a sub-directory whose name is not
// valid UTF-8) is the submission's FAIL, signed, and never an ERROR; under
// the default policy the reason does not quote the name.
func TestWorkspaceWalkFailureIsRejection(t *testing.T) {
	t.Parallel()
	tk := copyTask(t, "sum", withLib)
	dir := writeSub(t, map[string]string{"solution.py": "def solve(n):\n    return sum(n)\n", "lib/util.py": "X = 1\n"})
	bad := filepath.Join(dir, "lib", "chosen-Zx81-\xff\xfe")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "inner.py"), []byte("Y = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := grade(t, tk, controller.Submission{Dir: dir})
	v := res.Verdict
	if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonRejectedArtifact {
		t.Fatalf("verdict %s %s (%s), want FAIL rejected_artifact", v.Outcome, v.ReasonCode, v.Reason)
	}
	if v.Images != (schema.Images{}) {
		t.Errorf("a rejected submission ran: images %+v", v.Images)
	}
	if sha256Hex(res.Archive) != v.Submission.SHA256 {
		t.Errorf("Result.Archive is not the bytes the verdict binds")
	}
	for _, c := range v.Cases {
		if c.Outcome != schema.OutcomeFail || c.DecidedBy != schema.DecidedByFirewall || c.Exit != schema.ExitNotRun {
			t.Errorf("case %+v", c)
		}
	}
	if strings.Contains(v.Reason, "Zx81") || !strings.Contains(v.Reason, "not valid UTF-8") {
		t.Errorf("reason %q: want the problem without the name", v.Reason)
	}
}

// TestDisclosureOfVerdicts grades one wrong solution whose workspace also
// holds a link the firewall refuses, under each combination of the
// harness's and the task's disclosure policy.
func TestDisclosureOfVerdicts(t *testing.T) {
	t.Parallel()
	detailedCtrl, err := controller.New(t.Context(), controller.Config{Backend: eng, Signer: signer, Disclosure: schema.DisclosureDetailed})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controller.New(t.Context(), controller.Config{Backend: eng, Signer: signer, Disclosure: "verbose"}); err == nil {
		t.Error("New accepted an unknown disclosure policy")
	}
	wrong := filepath.Join("..", "examples", "sum", "solutions", "wrong")
	taskDigest := copyTask(t, "sum", func(spec map[string]any) { spec["disclosure"] = "digest" })
	taskDetailed := copyTask(t, "sum", func(spec map[string]any) { spec["disclosure"] = "detailed" })
	plain := loadTask(t, "sum")
	for _, tt := range []struct {
		name string
		ctrl *controller.Controller
		tk   *task.Task
		want schema.Disclosure
	}{
		{"defaults", ctrl, plain, schema.DisclosureDigest},
		{"task opts in", ctrl, taskDetailed, schema.DisclosureDetailed},
		{"harness opts in", detailedCtrl, plain, schema.DisclosureDetailed},
		{"task insists on digest", detailedCtrl, taskDigest, schema.DisclosureDigest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.ctrl.Grade(t.Context(), tt.tk, controller.Submission{Dir: wrong})
			if err != nil {
				t.Fatal(err)
			}
			verify(t, tt.tk, res)
			assertClean(t, res.Verdict.RunID)
			v := res.Verdict
			if v.Outcome != schema.OutcomeFail || v.Disclosure != tt.want {
				t.Fatalf("verdict %s under %q, want FAIL under %q", v.Outcome, v.Disclosure, tt.want)
			}
			for _, c := range v.Cases {
				if c.Outcome != schema.OutcomeFail {
					continue
				}
				quotes := strings.Contains(c.Reason, `got "`)
				if quotes != (tt.want == schema.DisclosureDetailed) {
					t.Errorf("case %s under %s: %q", c.ID, tt.want, c.Reason)
				}
			}
		})
	}
	t.Run("firewall rejection", func(t *testing.T) {
		tk := copyTask(t, "sum", withLib)
		for _, c := range []*controller.Controller{ctrl, detailedCtrl} {
			dir := writeSub(t, map[string]string{"solution.py": "def solve(n):\n    return sum(n)\n", "lib/util.py": "X = 1\n"})
			if err := os.Symlink("/etc/hostname", filepath.Join(dir, "lib", "chosen-Zx81")); err != nil {
				t.Fatal(err)
			}
			res, err := c.Grade(t.Context(), tk, controller.Submission{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			verify(t, tk, res)
			v := res.Verdict
			if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonRejectedArtifact || !strings.Contains(v.Reason, "firewall: symlink") {
				t.Fatalf("verdict %s %s (%s)", v.Outcome, v.ReasonCode, v.Reason)
			}
			if named := strings.Contains(v.Reason, "Zx81"); named != (v.Disclosure == schema.DisclosureDetailed) {
				t.Errorf("under %s the reason is %q", v.Disclosure, v.Reason)
			}
		}
	})
}

// TestCallOrderRecorded: a function task whose cases share one process
// records the order they were called in, derived from the nonce.
func TestCallOrderRecorded(t *testing.T) {
	t.Parallel()
	tk := loadTask(t, "sum")
	res := grade(t, tk, controller.Submission{Dir: filepath.Join("..", "examples", "sum", "solutions", "honest")})
	v := res.Verdict
	if v.Outcome != schema.OutcomePass {
		t.Fatalf("honest grade: %s %s", v.Outcome, v.Reason)
	}
	if want := candidate.CallOrder(v.Nonce, len(tk.Cases.Cases)); !slices.Equal(v.CaseOrder, want) {
		t.Errorf("case_order %v, want %v", v.CaseOrder, want)
	}
}

func TestControllerUnharmedAfterAttacks(t *testing.T) {
	// Runs after the attacks in the same process: an honest grade still
	// passes and nothing of theirs is left.
	tk := loadTask(t, "sum")
	res := grade(t, tk, controller.Submission{Dir: filepath.Join("..", "examples", "sum", "solutions", "honest")})
	if res.Verdict.Outcome != schema.OutcomePass {
		t.Fatalf("honest grade: %s", res.Verdict.Outcome)
	}
}

// failingEngine injects a daemon error into one phase.
type failingEngine struct {
	*engine.Docker
	phase string
}

func (f failingEngine) Run(ctx context.Context, s engine.Spec) (*engine.Result, error) {
	if s.Phase == f.phase {
		return nil, errors.New("injected: Error response from daemon: device or resource busy")
	}
	return f.Docker.Run(ctx, s)
}

func (f failingEngine) Prepare(ctx context.Context, s engine.Spec) (sandbox.Prepared, error) {
	if s.Phase == f.phase {
		return nil, errors.New("injected: Error response from daemon: no space left on device")
	}
	return f.Docker.Prepare(ctx, s)
}

func TestFaultInjection(t *testing.T) {
	testJudge, err := images.Ensure(t.Context(), eng, images.GoBinaries{ImageName: "testjudge", Packages: []string{"github.com/strictgrade/strictgrade/internal/testjudge"}}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	tk := loadTask(t, "sum")
	honest := filepath.Join("..", "examples", "sum", "solutions", "honest")
	newCtrl := func(t *testing.T, cfg controller.Config) *controller.Controller {
		cfg.Signer = signer
		if cfg.Backend == nil {
			cfg.Backend = eng
		}
		c, err := controller.New(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cases := []struct {
		name string
		cfg  controller.Config
		code string
	}{
		{"judge crashes", controller.Config{JudgeImage: testJudge, JudgeCmd: []string{"/bin/testjudge", "crash"}}, schema.ReasonJudgeCrashed},
		{"judge prints garbage", controller.Config{JudgeImage: testJudge, JudgeCmd: []string{"/bin/testjudge", "garbage"}}, schema.ReasonInvalidVerdict},
		{"judge verdict fails the schema", controller.Config{JudgeImage: testJudge, JudgeCmd: []string{"/bin/testjudge", "schema"}}, schema.ReasonInvalidVerdict},
		{"judge answers another run", controller.Config{JudgeImage: testJudge, JudgeCmd: []string{"/bin/testjudge", "mismatch"}}, schema.ReasonInvalidVerdict},
		{"daemon error in the judge phase", controller.Config{Backend: failingEngine{eng, "judge"}}, schema.ReasonInfrastructure},
		{"daemon error in the candidate phase", controller.Config{Backend: failingEngine{eng, "candidate"}}, schema.ReasonInfrastructure},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ct := newCtrl(t, c.cfg)
			res, err := ct.Grade(t.Context(), tk, controller.Submission{Dir: honest})
			if !errors.Is(err, controller.ErrCouldNotGrade) {
				t.Fatalf("err = %v, want ErrCouldNotGrade", err)
			}
			if res == nil || res.Verdict.Outcome != schema.OutcomeError || res.Verdict.ReasonCode != c.code {
				t.Fatalf("verdict %+v", res)
			}
			verify(t, tk, res)
			assertClean(t, res.Verdict.RunID)
		})
	}
}

func TestCandidateRemovedMidRun(t *testing.T) {
	tk := loadTask(t, "sum")
	sub := writeSub(t, map[string]string{"solution.py": "import time\ndef solve(n):\n    time.sleep(2)\n    return sum(n)\n"})
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	var removed atomic.Int64
	go func() {
		defer wg.Done()
		// Only this process's containers: other processes share the
		// daemon, and no other test of this one runs meanwhile. Every
		// running candidate container goes, the pooled ones waiting for
		// work (labelled with the pool's run) and the one in use alike,
		// until the grade ends.
		pidns, _ := os.Readlink("/proc/self/ns/pid")
		f := filters.NewArgs(filters.Arg("label", engine.LabelPhase+"=candidate"), filters.Arg("status", "running"),
			filters.Arg("label", engine.LabelOwnerPID+"="+strconv.Itoa(os.Getpid())),
			filters.Arg("label", engine.LabelOwnerPIDNS+"="+pidns))
		for ctx.Err() == nil {
			cs, err := cli.ContainerList(ctx, container.ListOptions{Filters: f})
			for _, c := range cs {
				// Counted as seen, whatever the removal answers: the
				// engine may be removing the killed container by then.
				if err == nil {
					_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
					removed.Add(1)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	res, err := ctrl.Grade(t.Context(), tk, controller.Submission{Dir: sub})
	cancel()
	wg.Wait()
	if removed.Load() == 0 {
		t.Fatalf("no candidate container was ever seen running (grade: %v %+v)", err, res.Verdict)
	}
	if !errors.Is(err, controller.ErrCouldNotGrade) || res.Verdict.Outcome != schema.OutcomeError {
		t.Fatalf("grade after removal: %v %+v", err, res.Verdict)
	}
	verify(t, tk, res)
	assertClean(t, res.Verdict.RunID)
}
