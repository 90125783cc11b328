//go:build engine

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
)

// TestMatrixGate runs part of the real matrix: it matches the committed
// expectation, and with a judge that does not compare (a defence weakened
// through configuration) it exits 1 naming every probe that regressed.
func TestMatrixGate(t *testing.T) {
	expected, err := filepath.Abs(filepath.Join("..", "..", "proofmatrix", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	md, junit := filepath.Join(dir, "m.md"), filepath.Join(dir, "m.xml")
	code, stdout, stderr := run(t, "matrix", "--tier", "strict", "--run", `^V(2\.2|6\.1|8\.2)-`, "--expected", expected, "--markdown", md, "--junit", junit)
	if code != ExitOK {
		t.Fatalf("genuine matrix: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"V8.2-symlink", "fw-in: symlink", "control-honest"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if data, err := os.ReadFile(md); err != nil || !strings.Contains(string(data), "| `V6.1-forged-stdout` |") {
		t.Errorf("markdown: %v\n%s", err, data)
	}
	if data, err := os.ReadFile(junit); err != nil || !strings.Contains(string(data), `failures="0"`) {
		t.Errorf("junit: %v\n%s", err, data)
	}

	eng, err := engine.NewDocker(t.Context(), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	lenient, err := images.Ensure(t.Context(), eng, images.GoBinaries{ImageName: "testjudge", Packages: []string{"github.com/strictgrade/strictgrade/internal/testjudge"}}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(t, "matrix", "--tier", "strict", "--run", `^V(2\.2|6\.1|8\.2)-`, "--expected", expected,
		"--judge-image", lenient, "--judge-cmd", "/bin/testjudge lenient", "--junit", junit)
	if code != ExitFail {
		t.Fatalf("weakened judge: exit %d, want %d\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	for _, want := range []string{"REGRESSION V2.2-lying-subclass", "REGRESSION V6.1-forged-stdout", "REGRESSION control-wrong", "a control failed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// The firewall still stops the symlink: it is not named.
	if strings.Contains(stderr, "REGRESSION V8.2") {
		t.Errorf("V8.2 reported although the firewall is intact:\n%s", stderr)
	}
	if data, _ := os.ReadFile(junit); !strings.Contains(string(data), "attack that was blocked now succeeds") {
		t.Errorf("junit does not carry the regression:\n%s", data)
	}
}
