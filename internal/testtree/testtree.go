// Package testtree lays out files for tests: a task, a workspace, an items
// file. It is test support shared by the module's packages.
package testtree

import (
	"os"
	"path/filepath"
	"testing"
)

// Write creates each file of files (slash-separated names relative to dir,
// parent directories made as needed) with its content, failing tb on the
// first error.
func Write(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
