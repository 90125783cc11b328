//go:build engine

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// TestSolutionsOnDocker grades the three solutions through the controller
// and the real judge image, whose wazero runs hidden/checker.wasm: the
// honest and the alternative order PASS (an exact comparison would fail
// the alternative), the wrong one FAILs, each case decided by the checker.
func TestSolutionsOnDocker(t *testing.T) {
	ctx := t.Context()
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.BuildImages(ctx, nil, os.Stderr); err != nil {
		t.Fatal(err)
	}
	ctrl, err := controller.New(ctx, controller.Config{Signer: signer, Disclosure: schema.DisclosureDetailed})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	tk, err := task.Load(ctx, "task")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		solution string
		want     schema.Outcome
	}{{"honest", schema.OutcomePass}, {"alternative", schema.OutcomePass}, {"wrong", schema.OutcomeFail}} {
		res, err := ctrl.Grade(ctx, tk, controller.Submission{Dir: filepath.Join("solutions", tc.solution)})
		if err != nil {
			t.Fatalf("%s: %v", tc.solution, err)
		}
		v := res.Verdict
		if v.Outcome != tc.want {
			t.Errorf("%s: %s %s %q, want %s", tc.solution, v.Outcome, v.ReasonCode, v.Reason, tc.want)
			continue
		}
		for _, c := range v.Cases {
			if c.DecidedBy != schema.DecidedByChecker {
				t.Errorf("%s: case %s decided by %s (%s)", tc.solution, c.ID, c.DecidedBy, c.Reason)
			}
		}
		if tc.want == schema.OutcomeFail && !strings.Contains(v.Reason, "the checker rejected the output") {
			t.Errorf("%s: reason %q", tc.solution, v.Reason)
		}
		if _, err := attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
			SubmissionSHA256: v.Submission.SHA256, TaskDigest: tk.Digest, Tier: v.Tier, Nonce: v.Nonce,
		}); err != nil {
			t.Errorf("%s: %v", tc.solution, err)
		}
		t.Logf("%s: %s in %d ms (judge %d ms)", tc.solution, v.Outcome, v.Timings.TotalMS, v.Timings.JudgeMS)
	}

	// The same task with a checker that traps: the real judge exits 4
	// and the grade is a signed ERROR, checker_failed.
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("task")); err != nil {
		t.Fatal(err)
	}
	// (module (memory 1) (func (export "_start") unreachable))
	trap := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x05, 0x03, 0x01, 0x00, 0x01,
		0x07, 0x13, 0x02, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
		0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b}
	if err := os.WriteFile(filepath.Join(dir, "hidden", "checker.wasm"), trap, 0o644); err != nil {
		t.Fatal(err)
	}
	broken, err := task.Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ctrl.Grade(ctx, broken, controller.Submission{Dir: filepath.Join("solutions", "honest")})
	if res == nil {
		t.Fatalf("broken checker: no result: %v", err)
	}
	v := res.Verdict
	if v.Outcome != schema.OutcomeError || v.ReasonCode != schema.ReasonCheckerFailed || !strings.Contains(v.Reason, "checker failed: module checker.wasm sha256 ") {
		t.Errorf("broken checker: %s %s %q, want ERROR checker_failed naming the module", v.Outcome, v.ReasonCode, v.Reason)
	}
	t.Logf("broken checker: %s %s %s", v.Outcome, v.ReasonCode, v.Reason)
}

// TestBrokenCheckersOnDocker grades through the controller and the real
// judge image a task whose checker misbehaves: it loops, grabs memory, or
// writes to standard output without end. Each grade is a signed ERROR,
// checker_failed, naming the module's sha256 and what went wrong, reached
// within the task's checker limits, and leaves no container or volume.
func TestBrokenCheckersOnDocker(t *testing.T) {
	ctx := t.Context()
	build := t.TempDir()
	wasm := filepath.Join(build, "checker.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-o", wasm, "../../judge/testdata/checker")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the test checker: %v\n%s", err, out)
	}
	module, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(module)
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := controller.New(ctx, controller.Config{Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	solution := t.TempDir()
	if err := os.WriteFile(filepath.Join(solution, "solution.py"), []byte("def f(*args):\n    return [1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each case is decided by one limit, the others far from it: the
	// memory grab has the longest deadline, so that a loaded machine
	// cannot make time win.
	for _, tc := range []struct{ mode, limits, want string }{
		{"loop", `"timeout_ms":300`, "ran past its deadline of 300 ms"},
		// Go's runtime, refused more memory, dies: in the verdict's
		// reason, cut short, a trap (its stderr says out of memory).
		{"oom", `"timeout_ms":10000,"memory_pages":512`, "trapped: wasm error: "},
		{"spam", `"output_bytes":4096`, "wrote more than its output cap of 4096 bytes"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string][]byte{
				"task.json": []byte(`{"schema":"strictgrade.task/v1","id":"broken-checker","version":"1","kind":"function","runtime":"python",
					"function":{"module":"solution","name":"f"},"artifacts":["solution.py"]}`),
				"public/README.md":    []byte("any list\n"),
				"hidden/checker.wasm": module,
				"hidden/cases.json": []byte(`{"compare":{"kind":"checker","module":"checker.wasm",` + tc.limits + `},
					"cases":[{"id":"c","args":["` + tc.mode + `"],"expected":[1]}]}`),
			}
			for name, data := range files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tk, err := task.Load(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, _ := ctrl.Grade(ctx, tk, controller.Submission{Dir: solution})
			took := time.Since(start)
			if res == nil {
				t.Fatal("no verdict")
			}
			v := res.Verdict
			if v.Outcome != schema.OutcomeError || v.ReasonCode != schema.ReasonCheckerFailed ||
				!strings.Contains(v.Reason, "sha256 "+hex.EncodeToString(sum[:])) || !strings.Contains(v.Reason, tc.want) {
				t.Errorf("%s %s %q, want ERROR checker_failed naming the module and %q", v.Outcome, v.ReasonCode, v.Reason, tc.want)
			}
			if _, err := attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
				SubmissionSHA256: v.Submission.SHA256, TaskDigest: tk.Digest, Tier: v.Tier, Nonce: v.Nonce,
			}); err != nil {
				t.Error(err)
			}
			left, err := ctrl.Backend().Leftovers(context.Background(), v.RunID)
			if err != nil || len(left) > 0 {
				t.Errorf("left behind: %v %v", left, err)
			}
			t.Logf("%s in %v: %s", tc.mode, took, v.Reason)
		})
	}
}
