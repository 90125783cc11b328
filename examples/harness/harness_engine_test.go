//go:build engine

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOutsideModuleOnDocker runs the outside module's harness against the
// Docker daemon: a missing daemon fails it.
func TestOutsideModuleOnDocker(t *testing.T) {
	dir := outsideModule(t)
	out := goCmd(t, dir, "run", ".", "-task", filepath.Join(repoRoot(t), "examples", "sum", "task"))
	if !strings.Contains(out, "sum on docker/") || !strings.Contains(out, ": PASS, verified") {
		t.Errorf("harness on Docker:\n%s", out)
	}
}
