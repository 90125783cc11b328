package compat

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDependencies keeps the package's dependencies one-way: it reaches
// Docker only through internal/engine and knows nothing of the strict
// tier or the controller, which builds on it.
func TestDependencies(t *testing.T) {
	allowed := map[string]bool{
		"github.com/strictgrade/strictgrade/firewall":         true,
		"github.com/strictgrade/strictgrade/schema":           true,
		"github.com/strictgrade/strictgrade/internal/engine":  true,
		"github.com/strictgrade/strictgrade/internal/tarball": true,
		"github.com/strictgrade/strictgrade/internal/version": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(p, ".") && !allowed[p] {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
}
