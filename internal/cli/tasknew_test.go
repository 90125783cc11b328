package cli

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// schemaProperties walks task-v1.json and returns every property name, at
// every depth.
func schemaProperties(t *testing.T) []string {
	t.Helper()
	var root any
	if err := json.Unmarshal(task.SpecSchemaJSON(), &root); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for name := range props {
					seen[name] = true
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(root)
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 20 {
		t.Fatalf("the walk found only %v", names)
	}
	return names
}

// TestTaskNewStrict scaffolds each strict kind; controller.LoadTask must load
// it, and its README must mention every property of the task schema, every
// comparator and option, and every default limit.
func TestTaskNewStrict(t *testing.T) {
	props := schemaProperties(t)
	for _, kind := range []schema.TaskKind{schema.KindFunction, schema.KindCommand, schema.KindData} {
		t.Run(string(kind), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "My Task")
			code, stdout, stderr := run(t, "task", "new", "--kind", string(kind), dir)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "task check") {
				t.Errorf("the output does not say how to check the task:\n%s", stdout)
			}
			loaded, err := controller.LoadTask(t.Context(), dir)
			if err != nil {
				t.Fatalf("LoadTask: %v", err)
			}
			tk := loaded.(*task.Task)
			if tk.Spec.Kind != kind || tk.Spec.ID != "my-task" || len(tk.Cases.Cases) != 2 {
				t.Errorf("loaded %s %q with %d cases", tk.Spec.Kind, tk.Spec.ID, len(tk.Cases.Cases))
			}
			if tk.Spec.Limits != task.DefaultLimits {
				t.Errorf("limits %+v, want the defaults %+v", tk.Spec.Limits, task.DefaultLimits)
			}
			for _, a := range tk.Spec.Artifacts {
				st, err := os.Stat(filepath.Join(dir, referenceDir, a))
				if err != nil {
					t.Errorf("the reference lacks artifact %s: %v", a, err)
				} else if kind == schema.KindCommand && st.Mode()&0o111 == 0 {
					t.Errorf("the command's reference %s is not executable", a)
				}
			}
			for _, p := range []string{"public/README.md", "hidden/cases.json"} {
				if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
					t.Error(err)
				}
			}
			data, err := os.ReadFile(filepath.Join(dir, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			readme := string(data)
			for _, p := range props {
				if !strings.Contains(readme, "`"+p+"`") {
					t.Errorf("README.md does not mention the field %s", p)
				}
			}
			for _, c := range comparatorKinds {
				if !strings.Contains(readme, "`"+c+"`") {
					t.Errorf("README.md does not mention the comparator %s", c)
				}
			}
			for _, o := range jsonFields(reflect.TypeFor[judge.Comparator]()) {
				if !strings.Contains(readme, "`"+o+"`") {
					t.Errorf("README.md does not mention the comparator option %s", o)
				}
			}
			for name, v := range jsonValues(task.DefaultLimits) {
				if !strings.Contains(readme, "`"+name+"`") || !strings.Contains(readme, "Default: "+jsonText(t, v)+".") {
					t.Errorf("README.md does not give the default of %s (%v)", name, v)
				}
			}
			if strings.Contains(readme, "see `task/task-v1.json`.") {
				t.Errorf("README.md has a field without its own description:\n%s", readme)
			}
		})
	}
}

func jsonText(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestTaskNewCompat scaffolds a compat task: it does not load until the
// bundle is added, the output says so, and the README names every field of
// compat.Spec and every default limit.
func TestTaskNewCompat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fix-it")
	code, stdout, stderr := run(t, "task", "new", dir, "--kind", "compat")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "does not load yet") || !strings.Contains(stdout, "repo.bundle") || !strings.Contains(stdout, "git bundle create") {
		t.Errorf("the output does not say that the bundle must be added:\n%s", stdout)
	}
	if _, err := controller.LoadTask(t.Context(), dir); !errors.Is(err, compat.ErrInvalid) {
		t.Errorf("LoadTask without a bundle: %v, want compat.ErrInvalid", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	var fields func(reflect.Type)
	fields = func(typ reflect.Type) {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !strings.Contains(readme, "`"+name+"`") {
				t.Errorf("README.md does not mention %s", name)
			}
			if f.Type.Kind() == reflect.Struct {
				fields(f.Type)
			}
		}
	}
	fields(reflect.TypeFor[compat.Spec]())
	for name, v := range jsonValues(compat.DefaultLimits) {
		if !strings.Contains(readme, "Default: "+jsonText(t, v)+".") {
			t.Errorf("README.md does not give the default of %s (%v)", name, v)
		}
	}
	if strings.Contains(readme, "see the compat package's documentation.") {
		t.Errorf("README.md has a field without its own description")
	}
	for _, want := range []string{"git bundle create", "reference.diff", "sha256sum"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not explain %s", want)
		}
	}
	var spec compat.Spec
	data, err = os.ReadFile(filepath.Join(dir, "task.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &spec); err != nil || spec.Schema != compat.SpecSchema || spec.Limits != compat.DefaultLimits {
		t.Errorf("task.json: %v %+v", err, spec)
	}
}

// TestTaskNewCompatLoads follows the scaffold's README: a repository with
// the package and the existing test, bundled with git bundle create, its
// HEAD as repo.base; then the task loads.
func TestTaskNewCompatLoads(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir := filepath.Join(t.TempDir(), "fix-it")
	if code, stdout, stderr := run(t, "task", "new", "--kind", "compat", dir); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	repo := t.TempDir()
	for name, body := range map[string]string{
		"mypackage/__init__.py":  "def answer():\n    return 41\n",
		"tests/test_existing.py": "def test_still_works():\n    assert True\n",
	} {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command(gitBin, append([]string{"-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgSign=false"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	git("bundle", "create", filepath.Join(dir, "repo.bundle"), "HEAD", "--all")
	p := filepath.Join(dir, "task.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "REPLACE-WITH-THE-40-HEX-BASE-COMMIT", base, 1))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := controller.LoadTask(t.Context(), dir)
	if err != nil {
		t.Fatalf("LoadTask with the bundle: %v", err)
	}
	if ct := loaded.(*compat.Task); ct.Spec.Repo.Base != base || len(ct.HiddenIDs) != 1 || len(ct.ExistingIDs) != 1 {
		t.Errorf("loaded %+v", ct)
	}
}

func TestTaskNewUsage(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"task", "new", "--kind", "function"}, "takes one directory"},
		{[]string{"task", "new", filepath.Join(t.TempDir(), "a")}, "--kind must be one of"},
		{[]string{"task", "new", "--kind", "repository", filepath.Join(t.TempDir(), "a")}, "--kind must be one of"},
		{[]string{"task", "new", "--kind", "function", full}, "is not empty"},
		{[]string{"task", "new", "--kind", "function", "a", "b"}, "takes one directory"},
		{[]string{"task", "frob"}, "the subcommands are new, import-swebench and check"},
	} {
		code, _, stderr := run(t, tt.args...)
		if code != ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", tt.args, code, ExitUsage, tt.want, stderr)
		}
	}
	// An existing empty directory is fine.
	if code, _, stderr := run(t, "task", "new", "--kind", "data", t.TempDir()); code != ExitOK {
		t.Errorf("an empty directory: exit %d\n%s", code, stderr)
	}
}

// TestComparatorKinds: the kinds task new documents are the judge's, all of
// them: its error for an unknown kind lists them.
func TestComparatorKinds(t *testing.T) {
	err := judge.Comparator{Kind: "no-such-kind"}.Validate()
	if err == nil || !strings.HasSuffix(err.Error(), "is not one of "+strings.Join(comparatorKinds, ", ")) {
		t.Errorf("the judge says %v; task new documents %v", err, comparatorKinds)
	}
	for _, k := range comparatorKinds {
		c := judge.Comparator{Kind: k}
		if k == judge.KindChecker {
			c.Module = "checker.wasm" // the one kind with a required option
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
}
