package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCopyAPIConfined guards the firewall wiring: only transfer.go may call
// the Docker copy API, and only this package may import the Docker client.
// Any other path into or out of a container would bypass the firewall.
func TestCopyAPIConfined(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s", root)
	}
	engineDir := filepath.Join(root, "internal", "engine")
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		inEngine := filepath.Dir(path) == engineDir
		rel, _ := filepath.Rel(root, path)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			// Tests elsewhere may inspect the daemon (to look for
			// leftovers); production code may not talk to it at all.
			if strings.HasPrefix(p, "github.com/docker/docker") && !inEngine && !strings.HasSuffix(path, "_test.go") {
				t.Errorf("%s imports %s: only internal/engine may talk to Docker", rel, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch sel.Sel.Name {
			case "CopyToContainer", "CopyFromContainer", "ContainerExport", "ContainerArchivePath", "ContainerStatPath":
				if rel != filepath.Join("internal", "engine", "transfer.go") {
					t.Errorf("%s: %s calls %s outside transfer.go", fset.Position(sel.Pos()), rel, sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("checked only %d files: the walk is broken", checked)
	}
}
