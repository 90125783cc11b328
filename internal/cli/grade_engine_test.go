//go:build engine

package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGradeAndVerify grades the sum example through the CLI against the
// real engine and verifies the written bundle with the CLI's verifier.
func TestGradeAndVerify(t *testing.T) {
	ex := filepath.Join("..", "..", "examples", "sum")
	dir := t.TempDir()
	out := filepath.Join(dir, "verdict.json")
	code, stdout, stderr := run(t, "grade", "--task", filepath.Join(ex, "task"), "--submission", filepath.Join(ex, "solutions", "honest"), "--out", out)
	if code != ExitOK || !strings.HasPrefix(stdout, "PASS") {
		t.Fatalf("honest: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = run(t, "verify", "--key", out+".pub", "--bundle", out, "--submission", out+".submission", "--tier", "strict")
	if code != ExitOK {
		t.Fatalf("verify: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = run(t, "grade", "--task", filepath.Join(ex, "task"), "--submission", filepath.Join(ex, "solutions", "wrong"), "--json")
	if code != ExitFail || !strings.Contains(stdout, `"outcome": "FAIL"`) || !strings.Contains(stdout, `"disclosure": "digest"`) {
		t.Fatalf("wrong: exit %d\n%s", code, stdout)
	}
	// A harness may ask for detailed reasons; the verdict records it.
	code, stdout, _ = run(t, "grade", "--task", filepath.Join(ex, "task"), "--submission", filepath.Join(ex, "solutions", "wrong"), "--json", "--disclosure", "detailed")
	if code != ExitFail || !strings.Contains(stdout, `"disclosure": "detailed"`) {
		t.Fatalf("wrong, detailed: exit %d\n%s", code, stdout)
	}
	// The honest bundle does not verify for the wrong submission.
	code, _, _ = run(t, "verify", "--key", out+".pub", "--bundle", out, "--submission", filepath.Join(ex, "solutions", "wrong", "solution.py"))
	if code != ExitFail {
		t.Fatalf("verify against another submission: exit %d", code)
	}
}
