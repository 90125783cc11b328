package strictgrade_test

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is this module's path; patterns below are relative to it unless
// they hold a dot in their first element (another module) or are standard
// library paths.
const module = "github.com/strictgrade/strictgrade"

// pkg is what the never-list needs of `go list -deps -json`.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
	Module     *struct{ Path string }
}

// listPackages returns every package the module's packages depend on,
// theirs included, by import path, as the build of the judge image sees
// them (CGO_ENABLED=0). Test files are not part of it: the rules are about
// what ships.
func listPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read the import graph: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", "-json", "./...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	if len(pkgs) < 20 || pkgs[module+"/judge"] == nil {
		t.Fatalf("go list found %d packages and no judge: the listing is broken", len(pkgs))
	}
	return pkgs
}

// full turns a pattern into an import path (or a prefix, for one ending
// in "/..."; "..." alone is the whole module): module-relative unless it
// names another module or the standard library.
func full(pattern string) string {
	if pattern == "..." {
		return module + "/..."
	}
	first, _, _ := strings.Cut(pattern, "/")
	if strings.Contains(first, ".") || std[first] {
		return pattern
	}
	return module + "/" + pattern
}

// std lists the first path elements of the standard library packages the
// rules name.
var std = map[string]bool{"os": true, "plugin": true, "runtime": true, "net": true, "syscall": true, "unsafe": true}

// matches reports whether path is the pattern's package or, for a pattern
// ending in "/...", the package or one below it.
func matches(pattern, path string) bool {
	p := full(pattern)
	if base, ok := strings.CutSuffix(p, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == p
}

func matchesAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, path) })
}

// chain returns the shortest import chain from one package to another, for
// the failure message.
func chain(pkgs map[string]*pkg, from, to string) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var path []string
			for p := cur; p != ""; p = prev[p] {
				path = append(path, strings.TrimPrefix(p, module+"/"))
			}
			slices.Reverse(path)
			return strings.Join(path, " → ")
		}
		if p := pkgs[cur]; p != nil {
			for _, next := range p.Imports {
				if _, seen := prev[next]; !seen {
					prev[next] = cur
					queue = append(queue, next)
				}
			}
		}
	}
	return from + " → … → " + to
}

// never is the never-list: the dependencies that would break the
// architecture (ADR 0001) if they existed.
var never = []struct {
	name string
	from []string // packages the rule applies to
	// except are packages of from the rule leaves out.
	except []string
	// deps are the packages from must never depend on.
	deps []string
	// direct limits the rule to direct imports; by default it covers
	// every dependency, however indirect.
	direct bool
	why    string
}{
	{
		name: "candidate-judge",
		from: []string{"candidate"}, deps: []string{"judge", "task"},
		why: "the candidate phase receives the cases' inputs, never expected values",
	},
	{
		name: "agentbox-judge",
		from: []string{"agentbox"}, deps: []string{"judge", "task"},
		why: "the agent phase receives a task's public view, never its hidden cases",
	},
	{
		name: "pure-runtime",
		from: []string{"firewall/...", "schema", "attest"},
		deps: []string{"internal/engine", "sandbox/...", "sandboxtest", "github.com/docker/docker/..."},
		why:  "the firewall, the verdict schema and the signing code stay pure: they know nothing of the runtime",
	},
	{
		name: "phases-controller",
		from: []string{"candidate", "agentbox", "compat/...", "strict", "grading"}, deps: []string{"controller"},
		why: "the phases know nothing of the controller that orchestrates them",
	},
	{
		name: "phases-seam",
		from: []string{"candidate", "agentbox", "compat/...", "strict", "controller", "proofmatrix"}, deps: []string{"internal/engine"},
		direct: true,
		why:    "the phases and the controller reach a runtime through the public sandbox seam, never the Docker package",
	},
	{
		name: "compat-strict",
		from: []string{"compat/..."}, deps: []string{"task", "candidate", "agentbox", "judge"},
		why: "the compat tier knows nothing of the strict tier",
	},
	{
		name: "pure-parsers",
		from: pureParsers,
		deps: []string{"compat", "controller", "proofmatrix", "internal/...", "sandbox/...", "sandboxtest",
			"github.com/docker/...", "os/exec", "net/http", "plugin", "runtime/cgo"},
		why: "the diff gate and the JUnit reader are pure parsers: bytes in, records out, nothing of the tier that runs them",
	},
	{
		// os and net are below them all the same (archive/tar, the
		// schema's validator), but never theirs to call.
		name: "pure-parsers-std",
		from: pureParsers, deps: []string{"os/...", "net/...", "syscall", "plugin", "unsafe"},
		direct: true,
		why:    "the diff gate and the JUnit reader open no file, run no process and reach no network",
	},
	{
		name: "strict-compat",
		from: []string{"strict"}, deps: []string{"compat/..."},
		why: "the strict tier knows nothing of the compat tier",
	},
	{
		name: "controller-orchestrates",
		from: []string{"controller"}, deps: []string{"candidate", "judge", "firewall", "internal/tarball", "agentbox"},
		direct: true,
		why:    "the controller orchestrates (slots, run ids, binding, signing); admitting, running and judging are the tiers' own",
	},
	{
		name: "batch-through-controller",
		from: []string{"batch"}, deps: []string{"internal/engine", "sandbox/...", "strict", "candidate", "judge", "firewall", "agentbox"},
		direct: true,
		why:    "a run grades every item through the controller, which binds and signs; it never reaches a sandbox or a tier itself",
	},
	{
		name: "grading-shared",
		from: []string{"grading"},
		deps: []string{"sandbox/...", "internal/engine", "task", "compat/...", "strict", "candidate", "judge", "firewall/..."},
		why:  "what the tiers share knows no tier and no runtime",
	},
	{
		name: "docker-client",
		from: []string{"..."}, except: []string{"internal/engine", "sandbox/docker"},
		deps: []string{"github.com/docker/docker/..."}, direct: true,
		why: "Docker is reached through one package, where the hardened profile and the firewall are applied",
	},
	{
		name: "judge-binary",
		from: []string{"judge/cmd/judge"},
		deps: []string{"os/exec", "plugin", "runtime/cgo", "net/http", "os/signal", "github.com/docker/..."},
		why:  "the judge binary never runs a process, loads a plugin, fetches code or executes candidate bytes, and needs no cgo: the only code it runs is a task's checker module, inside wazero",
	},
	{
		name: "judge-go-cmp",
		from: []string{"judge/...", "schema"}, deps: []string{"github.com/google/go-cmp/..."},
		why: "the judge compares JSON with its own walk (judge/jsoncmp.go); go-cmp, with its reflection and randomised diffing, is for tests only",
	},
}

// pureParsers are the compat tier's parsers, which must stay pure.
var pureParsers = []string{"compat/diffgate", "compat/junit"}

// pureAllowed is everything outside the standard library each pure parser
// may import directly: the verdict schema for its records and, for the
// gate, the firewall, whose name rules and globs it applies.
var pureAllowed = map[string][]string{
	"compat/diffgate": {"schema", "firewall"},
	"compat/junit":    {"schema"},
}

// judgeAllowed is everything outside the standard library the judge binary
// may contain: its own packages, the verdict schema, and the modules they
// use (jsonschema for verdict validation; wazero, a pure-Go WebAssembly
// runtime without cgo, to run a task's checker comparator, with the two
// packages of golang.org/x/sys it needs). go-cmp is not
// among them: the judge compares JSON without it.
var judgeAllowed = []string{
	"judge", "judge/cmd/judge", "schema",
	"github.com/santhosh-tekuri/jsonschema/...",
	"github.com/tetratelabs/wazero/...",
	// wazero's own dependency: CPU feature detection and mmap for its
	// compiler.
	"golang.org/x/sys/cpu", "golang.org/x/sys/unix",
}

// TestNeverList encodes the dependencies the architecture forbids, for
// every package of the module as it ships (test files aside).
func TestNeverList(t *testing.T) {
	pkgs := listPackages(t)
	var ours []*pkg
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Path == module {
			ours = append(ours, p)
		}
	}
	slices.SortFunc(ours, func(a, b *pkg) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	for _, rule := range never {
		t.Run(rule.name, func(t *testing.T) {
			checked := 0
			for _, p := range ours {
				if !matchesAny(rule.from, p.ImportPath) || matchesAny(rule.except, p.ImportPath) {
					continue
				}
				checked++
				deps := p.Deps
				if rule.direct {
					deps = p.Imports
				}
				for _, d := range deps {
					if matchesAny(rule.deps, d) {
						t.Errorf("%s must not depend on %s: %s (%s)",
							strings.TrimPrefix(p.ImportPath, module+"/"), strings.TrimPrefix(d, module+"/"), chain(pkgs, p.ImportPath, d), rule.why)
					}
				}
			}
			if checked == 0 {
				t.Fatalf("the rule applies to no package: %v", rule.from)
			}
		})
	}
	t.Run("pure-parsers-imports", func(t *testing.T) {
		for _, name := range pureParsers {
			p := pkgs[full(name)]
			if p == nil {
				t.Fatalf("%s is not in the listing", name)
			}
			for _, d := range p.Imports {
				if dp := pkgs[d]; dp != nil && dp.Standard {
					continue
				}
				if !matchesAny(pureAllowed[name], d) {
					t.Errorf("%s must not import %s (outside the standard library it may import only %s)",
						name, strings.TrimPrefix(d, module+"/"), strings.Join(pureAllowed[name], ", "))
				}
			}
		}
	})
	t.Run("judge-binary-contents", func(t *testing.T) {
		p := pkgs[module+"/judge/cmd/judge"]
		if p == nil {
			t.Fatal("judge/cmd/judge is not in the listing")
		}
		for _, d := range p.Deps {
			if dp := pkgs[d]; dp != nil && dp.Standard {
				continue
			}
			if strings.HasPrefix(d, "vendor/") { // the standard library's own
				continue
			}
			if !matchesAny(judgeAllowed, d) {
				t.Errorf("the judge binary must not contain %s: %s (only the standard library and %s)",
					strings.TrimPrefix(d, module+"/"), chain(pkgs, p.ImportPath, d), strings.Join(judgeAllowed, ", "))
			}
		}
	})
}

// copyAPI are the Docker client calls that move files into or out of a
// container.
var copyAPI = []string{"CopyToContainer", "CopyFromContainer", "ContainerExport", "ContainerArchivePath", "ContainerStatPath"}

// TestCopyAPIConfined: only internal/engine/transfer.go moves files into or
// out of a container, so no path across the boundary bypasses the
// firewall. Test files count too.
func TestCopyAPIConfined(t *testing.T) {
	allowed := filepath.Join("internal", "engine", "transfer.go")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || (strings.HasPrefix(d.Name(), ".") && path != ".")) {
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
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && slices.Contains(copyAPI, sel.Sel.Name) && path != allowed {
				t.Errorf("%s: %s outside %s: every crossing must pass the firewall there", fset.Position(sel.Pos()), sel.Sel.Name, allowed)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: the walk is broken", checked)
	}
}
