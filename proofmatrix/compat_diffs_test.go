package proofmatrix

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompatDiffsApply checks the diff builders against the textkit task's
// real base commit with git apply --check, the gate the oracle uses.
func TestCompatDiffsApply(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to check the compat diffs")
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	bundle, err := filepath.Abs(filepath.Join("tasks", "textkit", "repo.bundle"))
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := exec.Command("git", "clone", "-q", bundle, repo).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v %s", err, out)
	}
	if out, err := git("checkout", "-q", compatBase); err != nil {
		t.Fatalf("checkout: %v %s", err, out)
	}
	diffs := map[string]string{
		"honest":          compatHonest,
		"wrong":           compatWrong,
		"prelude+body":    coreEdit([]string{"import os", "X = 1"}, []string{"    return 'x'"}),
		"prelude only":    coreEdit([]string{"import sys"}, nil),
		"new file":        newFile("textkit/extra.py", "A = 1\nB = 2\n"),
		"new file + edit": newFile("textkit/extra.py", "A = 1\n") + coreEdit(nil, honestBody),
	}
	for name, d := range diffs {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".diff")
		if err := os.WriteFile(p, []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := git("apply", "--check", p); err != nil {
			t.Errorf("%s does not apply: %v %s\n%s", name, err, out, d)
		}
	}
}
