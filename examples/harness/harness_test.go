package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the root of this module.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// outsideModule writes main.go into a module of its own, in a temporary
// directory, that requires strictgrade through a replace directive: a
// harness author's module. The go command then refuses any import of an
// internal package of strictgrade.
func outsideModule(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "examples", "harness", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "strictgrade/internal") {
		t.Fatal("the harness names an internal package")
	}
	dir := t.TempDir()
	gomod := "module example.com/harness\n\ngo 1.26.8\n\nrequire github.com/strictgrade/strictgrade v0.0.0\n\nreplace github.com/strictgrade/strictgrade => " + root + "\n"
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "main.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// goCmd runs the go command in dir with the module proxy of the
// environment and a go.mod that may be completed.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestOutsideModule builds and vets the harness as a module outside this
// repository, and runs it on the in-process fake backend: the library's
// agent, grading and verification flow, written with public packages only.
func TestOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	dir := outsideModule(t)
	goCmd(t, dir, "build", "-o", filepath.Join(dir, "harness"), ".")
	goCmd(t, dir, "vet", ".")
	out := goCmd(t, dir, "run", ".", "-fake", "-task", filepath.Join(repoRoot(t), "examples", "sum", "task"))
	if !strings.Contains(out, "sum on fake: PASS, verified") {
		t.Errorf("harness on the fake:\n%s", out)
	}
}
