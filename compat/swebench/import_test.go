package swebench_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/compat/swebench"
	"github.com/strictgrade/strictgrade/internal/swebenchtest"
)

func parse(t *testing.T, inst map[string]any) *swebench.Instance {
	t.Helper()
	data, err := json.Marshal(inst)
	if err != nil {
		t.Fatal(err)
	}
	in, err := swebench.ParseInstance(data)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// snapshot hashes every file under dir (names, modes and contents), to
// show that Import left the clone as it was.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Write([]byte(p + "\x00" + info.Mode().String() + "\x00"))
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// assertNoLeftovers fails when dir holds anything but the names in keep.
func assertNoLeftovers(t *testing.T, dir string, keep ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.Contains(strings.Join(keep, "\x00")+"\x00", e.Name()+"\x00") {
			t.Errorf("left behind in %s: %s", dir, e.Name())
		}
	}
}

func TestImport(t *testing.T) {
	tk := swebenchtest.New(t)
	in := parse(t, tk.Instance)
	before := snapshot(t, tk.Repo)
	parent := t.TempDir()
	out := filepath.Join(parent, "task")
	if err := os.Mkdir(out, 0o755); err != nil { // an empty directory gives way
		t.Fatal(err)
	}
	var checked *compat.Task
	res, err := swebench.Import(t.Context(), in, swebench.Options{Repo: tk.Repo, Out: out,
		Check: func(ctx context.Context, task *compat.Task, ref []byte) error {
			checked = task
			if string(ref) != in.Patch {
				t.Errorf("the check got a reference that is not the patch")
			}
			if task.Dir == out {
				t.Errorf("the check ran on the final directory, not a temporary one")
			}
			if _, err := os.Stat(filepath.Join(out, compat.SpecFile)); err == nil {
				t.Errorf("the task is in place before the check accepted it")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if checked == nil {
		t.Fatal("the check was not called")
	}
	if snapshot(t, tk.Repo) != before {
		t.Error("Import changed the clone")
	}
	assertNoLeftovers(t, parent, "task")

	task, err := compat.Load(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	if task.Digest != res.Digest || task.Digest != checked.Digest {
		t.Errorf("digests: loaded %s, result %s, checked %s", task.Digest, res.Digest, checked.Digest)
	}
	if diff := cmp.Diff(swebenchtest.HiddenTests, task.HiddenIDs); diff != "" {
		t.Errorf("hidden ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(in.PassToPass, task.ExistingIDs); diff != "" {
		t.Errorf("existing ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tests/test_core.py"}, task.HiddenFiles); diff != "" {
		t.Errorf("hidden files (-want +got):\n%s", diff)
	}
	if task.Spec.ID != "textkit__textkit-1" || !strings.HasPrefix(task.Spec.Title, "textkit/textkit textkit__textkit-1: Fix `textkit.slugify`") {
		t.Errorf("id %q, title %q", task.Spec.ID, task.Spec.Title)
	}
	if diff := cmp.Diff([]string{"**"}, task.Spec.Allow); diff != "" {
		t.Errorf("allow (-want +got):\n%s", diff)
	}
	// The base is a one-commit copy of base_commit's tree.
	tree := strings.TrimSpace(swebenchtest.Git(t, tk.Repo, "rev-parse", tk.Base+"^{tree}"))
	if res.BaseTree != tree || res.Base == tk.Base || task.Spec.Repo.Base != res.Base {
		t.Errorf("base %s (spec %s), tree %s; the clone's tree is %s", res.Base, task.Spec.Repo.Base, res.BaseTree, tree)
	}
	bundle := t.TempDir()
	swebenchtest.Git(t, bundle, "clone", "-q", filepath.Join(out, "repo.bundle"), "x")
	if got := strings.TrimSpace(swebenchtest.Git(t, filepath.Join(bundle, "x"), "rev-parse", res.Base+"^{tree}")); got != tree {
		t.Errorf("the bundle's base has tree %s, want %s", got, tree)
	}
	if n := strings.TrimSpace(swebenchtest.Git(t, filepath.Join(bundle, "x"), "rev-list", "--count", "--all")); n != "1" {
		t.Errorf("the bundle holds %s commits, want 1", n)
	}
	// The files an agent and the oracle see.
	for name, want := range map[string]string{
		"description.md":     in.ProblemStatement,
		"reference.diff":     in.Patch,
		"existing-tests.txt": strings.Join(in.PassToPass, "\n") + "\n",
	} {
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(got) != want {
			t.Errorf("%s: %v\n%s", name, err, got)
		}
	}
	hidden, err := os.ReadFile(filepath.Join(out, "hidden", "tests", "test_core.py"))
	if err != nil || !strings.Contains(string(hidden), "def test_collapses_runs_of_separators") || !strings.Contains(string(hidden), "def test_word_count") {
		t.Errorf("hidden/tests/test_core.py is not the file after the test patch: %v\n%s", err, hidden)
	}
	var src swebench.Source
	data, err := os.ReadFile(filepath.Join(out, swebench.SourceFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &src); err != nil {
		t.Fatal(err)
	}
	want := swebench.Source{Format: "swebench", Repo: "textkit/textkit", InstanceID: "textkit__textkit-1", BaseCommit: tk.Base, BaseTree: tree, Base: res.Base}
	if diff := cmp.Diff(want, src); diff != "" {
		t.Errorf("%s (-want +got):\n%s", swebench.SourceFile, diff)
	}

	// The same instance gives the same task, and relative paths are
	// relative to the working directory.
	t.Chdir(filepath.Dir(tk.Repo))
	again, err := swebench.Import(t.Context(), in, swebench.Options{Repo: filepath.Base(tk.Repo), Out: filepath.Join(parent, "again"),
		Check: func(context.Context, *compat.Task, []byte) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != res.Digest || again.Base != res.Base {
		t.Errorf("a second import differs: digest %s vs %s, base %s vs %s", again.Digest, res.Digest, again.Base, res.Base)
	}

	// An existing task is never overwritten.
	_, err = swebench.Import(t.Context(), in, swebench.Options{Repo: tk.Repo, Out: out,
		Check: func(context.Context, *compat.Task, []byte) error { t.Error("checked"); return nil }})
	if !errors.Is(err, swebench.ErrOutNotEmpty) {
		t.Errorf("import into a task directory: %v", err)
	}
	if task2, err := compat.Load(t.Context(), out); err != nil || task2.Digest != res.Digest {
		t.Errorf("the existing task changed: %v", err)
	}
}

// TestImportUnchangedHiddenFile: a hidden test in a file the test patch
// leaves alone still puts that file under hidden/, or the agent's diff
// could change it.
func TestImportUnchangedHiddenFile(t *testing.T) {
	tk := swebenchtest.New(t)
	tk.Instance["test_patch"] = swebenchtest.Diff(t, tk.Repo, map[string]string{
		"tests/test_new.py": "from textkit import slugify\n\n\ndef test_new():\n    assert slugify('a  b') == 'a-b'\n",
	})
	tk.Instance["FAIL_TO_PASS"] = []string{"tests/test_new.py::test_new", "tests/test_core.py::test_word_count"}
	tk.Instance["PASS_TO_PASS"] = []string{"tests/test_core.py::test_word_count_empty"}
	out := filepath.Join(t.TempDir(), "task")
	res, err := swebench.Import(t.Context(), parse(t, tk.Instance), swebench.Options{Repo: tk.Repo, Out: out,
		Check: func(context.Context, *compat.Task, []byte) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"tests/test_core.py", "tests/test_new.py"}, res.HiddenFiles); diff != "" {
		t.Errorf("hidden files (-want +got):\n%s", diff)
	}
	base, err := os.ReadFile(filepath.Join(tk.Example, "repo", "tests", "test_core.py"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(out, "hidden", "tests", "test_core.py")); err != nil || string(got) != string(base) {
		t.Errorf("hidden/tests/test_core.py is not the base's: %v", err)
	}
	task, err := compat.Load(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := task.Gate().Filter([]byte(swebenchtest.Diff(t, tk.Repo, map[string]string{"tests/test_core.py": "def test_word_count():\n    pass\n"})))
	if err != nil || f.DroppedTotal != 1 || f.Dropped[0].Rule != "hidden_test" {
		t.Errorf("a diff of the unchanged hidden file is not dropped as hidden_test: %v %+v", err, f)
	}
}

// TestImportCheckFails: whatever the check says, nothing is left behind.
func TestImportCheckFails(t *testing.T) {
	tk := swebenchtest.New(t)
	in := parse(t, tk.Instance)
	errUnfit := errors.New("QUARANTINED: flaky")
	for _, c := range []struct {
		name  string
		check swebench.CheckFunc
		want  error
	}{
		{"unfit", func(context.Context, *compat.Task, []byte) error { return errUnfit }, errUnfit},
		{"cancelled", func(ctx context.Context, _ *compat.Task, _ []byte) error { return nil }, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			out := filepath.Join(parent, "sub", "task")
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			check := c.check
			if c.want == context.Canceled {
				check = func(context.Context, *compat.Task, []byte) error { cancel(); return nil }
			}
			_, err := swebench.Import(ctx, in, swebench.Options{Repo: tk.Repo, Out: out, Check: check})
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s exists: %v", out, err)
			}
			assertNoLeftovers(t, filepath.Join(parent, "sub"))
		})
	}
}

func TestImportRefused(t *testing.T) {
	tk := swebenchtest.New(t)
	doesNotApply, err := os.ReadFile(filepath.Join(tk.Example, "diffs", "does-not-apply.diff"))
	if err != nil {
		t.Fatal(err)
	}
	core, err := os.ReadFile(filepath.Join(tk.Example, "repo", "textkit", "core.py"))
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.Replace(string(core), `return re.sub(r"[^a-z0-9]", "-", ascii_text.lower())`,
		`return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")`, 1)
	if fixed == string(core) {
		t.Fatal("the example's core.py changed shape")
	}
	testPatch := tk.Instance["test_patch"].(string)
	cases := []struct {
		name   string
		change func(m map[string]any)
		repo   string
		want   string
	}{
		{name: "test patch does not apply", change: func(m map[string]any) {
			m["test_patch"] = strings.Replace(testPatch, " def test_truncate_rejects_tiny_width", " def test_truncate_rejects_small_width", 1)
		}, want: "test_patch does not apply at base_commit: error: patch failed: tests/test_core.py"},
		{name: "patch does not apply", change: func(m map[string]any) { m["patch"] = string(doesNotApply) },
			want: "patch does not apply at base_commit: error: patch failed: textkit/core.py"},
		{name: "patch touches a test file", change: func(m map[string]any) {
			m["patch"] = swebenchtest.Diff(t, tk.Repo, map[string]string{"textkit/core.py": fixed, "tests/test_core.py": "def test_x():\n    pass\n"})
		}, want: "no agent could submit this fix: tests/test_core.py (hidden_test)"},
		{name: "patch touches packaging", change: func(m map[string]any) {
			m["patch"] = swebenchtest.Diff(t, tk.Repo, map[string]string{"textkit/core.py": fixed, "pyproject.toml": "[project]\nname = \"x\"\n"})
		}, want: "pyproject.toml (denylist:pyproject.toml)"},
		{name: "binary patch", change: func(m map[string]any) {
			m["patch"] = swebenchtest.Diff(t, tk.Repo, map[string]string{"textkit/core.py": fixed, "textkit/table.bin": "\x00\x01\x02"})
		}, want: "textkit/table.bin (binary)"},
		{name: "binary test patch", change: func(m map[string]any) {
			m["test_patch"] = swebenchtest.Diff(t, tk.Repo, map[string]string{"tests/data.bin": "\x00\x01\x02"})
		}, want: "test_patch holds what hidden files cannot carry: tests/data.bin (binary)"},
		{name: "test patch deletes a file", change: func(m map[string]any) {
			m["test_patch"] = testPatch + swebenchtest.Diff(t, tk.Repo, map[string]string{"README.md": ""})
		}, want: "test_patch deletes or renames away README.md"},
		{name: "test patch is not a diff", change: func(m map[string]any) { m["test_patch"] = "just words\n" },
			want: "test_patch: diffgate: malformed diff"},
		{name: "unknown hidden test", change: func(m map[string]any) {
			m["FAIL_TO_PASS"] = []string{"tests/test_core.py::test_collapses_runs_of_separators", "tests/test_core.py::test_does_not_exist"}
		}, want: "FAIL_TO_PASS test tests/test_core.py::test_does_not_exist: tests/test_core.py has nothing named test_does_not_exist after the test patch"},
		{name: "unknown existing test file", change: func(m map[string]any) {
			m["PASS_TO_PASS"] = []string{"tests/test_other.py::test_a"}
		}, want: "PASS_TO_PASS test tests/test_other.py::test_a: tests/test_other.py does not exist at base_commit after the test patch"},
		{name: "base commit not in the clone", change: func(m map[string]any) { m["base_commit"] = strings.Repeat("0", 40) },
			want: "base_commit 0000000000000000000000000000000000000000 is not a commit of the clone"},
		{name: "not a repository", repo: t.TempDir(), want: "is not a git repository git can read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inst := map[string]any{}
			for k, v := range tk.Instance {
				inst[k] = v
			}
			if c.change != nil {
				c.change(inst)
			}
			repo := tk.Repo
			if c.repo != "" {
				repo = c.repo
			}
			parent := t.TempDir()
			out := filepath.Join(parent, "task")
			_, err := swebench.Import(t.Context(), parse(t, inst), swebench.Options{Repo: repo, Out: out,
				Check: func(context.Context, *compat.Task, []byte) error { t.Error("checked a refused instance"); return nil }})
			if !errors.Is(err, swebench.ErrRefused) {
				t.Fatalf("err = %v, want one wrapping ErrRefused", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q lacks %q", err, c.want)
			}
			assertNoLeftovers(t, parent)
		})
	}
}
