package strictgrade_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPublicAPINamesNoInternalType: a package a harness author can import
// must not name, in anything it exports, a type that only this module can
// import. Another module could not write the call, hold the result or
// implement the interface. The types are read from the compiler's export
// data, so the check sees exactly what a caller sees.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read the export data: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-export", "-deps", "-json", "./...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -export: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	var public []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath, Export, Name string
			Module                   *struct{ Path string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == module && p.Export != "" && p.Name != "main" && !internal(p.ImportPath) {
			public = append(public, p.ImportPath)
		}
	}
	if len(public) < 10 {
		t.Fatalf("found only %d public packages: the listing is broken", len(public))
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, path := range public {
		p, err := imp.Import(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, leak := range internalNames(p) {
			t.Errorf("%s exports %s", path, leak)
		}
	}
}

// internal reports whether an import path has an "internal" element.
func internal(path string) bool {
	return strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/")
}

// internalNames lists the exported objects of p whose types name a type of
// an internal package, with the type they name.
func internalNames(p *types.Package) []string {
	var leaks []string
	seen := map[types.Type]bool{}
	var visit func(where string, t types.Type)
	visit = func(where string, t types.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Named:
			if o := t.Obj(); o.Pkg() != nil && internal(o.Pkg().Path()) {
				leaks = append(leaks, where+" (names "+o.Pkg().Path()+"."+o.Name()+")")
				return
			}
			for i := range t.TypeArgs().Len() {
				visit(where, t.TypeArgs().At(i))
			}
		case *types.Alias:
			visit(where, types.Unalias(t))
		case *types.Pointer:
			visit(where, t.Elem())
		case *types.Slice:
			visit(where, t.Elem())
		case *types.Array:
			visit(where, t.Elem())
		case *types.Map:
			visit(where, t.Key())
			visit(where, t.Elem())
		case *types.Chan:
			visit(where, t.Elem())
		case *types.Signature:
			for i := range t.Params().Len() {
				visit(where, t.Params().At(i).Type())
			}
			for i := range t.Results().Len() {
				visit(where, t.Results().At(i).Type())
			}
		case *types.Struct:
			for i := range t.NumFields() {
				if f := t.Field(i); f.Exported() {
					visit(where+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for i := range t.NumMethods() {
				if m := t.Method(i); m.Exported() {
					visit(where+"."+m.Name(), m.Type())
				}
			}
		}
	}
	scope := p.Scope()
	for _, name := range scope.Names() {
		o := scope.Lookup(name)
		if !o.Exported() {
			continue
		}
		visit(name, o.Type())
		if tn, ok := o.(*types.TypeName); ok {
			// The declared type's underlying type and its methods, which
			// visiting the named type itself stops short of.
			if named, ok := tn.Type().(*types.Named); ok {
				visit(name, named.Underlying())
				for i := range named.NumMethods() {
					if m := named.Method(i); m.Exported() {
						visit(name+"."+m.Name(), m.Type())
					}
				}
			}
		}
	}
	return leaks
}
