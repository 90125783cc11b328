package compat

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/compat/diffgate"
)

var exampleTask = filepath.Join("..", "examples", "compat-textkit", "task")

func TestLoadExample(t *testing.T) {
	tk, err := Load(t.Context(), exampleTask)
	if err != nil {
		t.Fatal(err)
	}
	if len(tk.ExistingIDs) != 9 || len(tk.HiddenIDs) != 3 {
		t.Fatalf("S has %d tests, H %d", len(tk.ExistingIDs), len(tk.HiddenIDs))
	}
	if diff := cmp.Diff([]string{"tests/test_slugify_hidden.py"}, tk.HiddenFiles); diff != "" {
		t.Fatal(diff)
	}
	if tk.Spec.Limits.PIDs != DefaultLimits.PIDs || tk.Spec.Limits.WallSeconds != 60 {
		t.Fatalf("limits %+v", tk.Spec.Limits)
	}
	if diff := cmp.Diff([]string{"."}, tk.Spec.Repo.PythonPath); diff != "" {
		t.Fatal(diff)
	}
	again, err := Load(t.Context(), exampleTask)
	if err != nil || again.Digest != tk.Digest || len(tk.Digest) != 64 {
		t.Fatalf("digest %q then %q (%v)", tk.Digest, again.Digest, err)
	}
	desc, err := tk.Description()
	if err != nil || !strings.Contains(string(desc), "slugify") {
		t.Fatalf("description: %v", err)
	}
	g := tk.Gate()
	if len(g.Protected) != 2 || g.Protected[0].Rule != diffgate.RuleHiddenTest || g.Protected[1].Rule != diffgate.RuleExistingTest {
		t.Fatalf("protected %v", g.Protected)
	}
}

// copyTask copies the example task into a temporary directory.
func copyTask(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(exampleTask)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// editSpec rewrites dir/task.json through edit.
func editSpec(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, SpecFile)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, err = json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeList replaces the existing-suite list and pins its digest.
func writeList(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "existing-tests.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	editSpec(t, dir, func(m map[string]any) { m["existing"].(map[string]any)["sha256"] = hex.EncodeToString(sum[:]) })
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"unknown field", func(t *testing.T, dir string) { editSpec(t, dir, func(m map[string]any) { m["extra"] = 1 }) }, "unknown field"},
		{"duplicate key", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, SpecFile), []byte(`{"schema":"a","schema":"b"}`), 0o644)
		}, "appears more than once"},
		{"wrong schema", func(t *testing.T, dir string) { editSpec(t, dir, func(m map[string]any) { m["schema"] = "v0" }) }, "schema is"},
		{"short base", func(t *testing.T, dir string) {
			editSpec(t, dir, func(m map[string]any) { m["repo"].(map[string]any)["base"] = "ec5117f" })
		}, "full commit id"},
		{"base not in the bundle", func(t *testing.T, dir string) {
			editSpec(t, dir, func(m map[string]any) { m["repo"].(map[string]any)["base"] = strings.Repeat("a", 40) })
		}, "not one of the bundle's refs"},
		{"not a bundle", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "repo.bundle"), []byte("PK\x03\x04"), 0o644)
		}, "not a git bundle"},
		{"traversing path", func(t *testing.T, dir string) {
			editSpec(t, dir, func(m map[string]any) { m["description"] = "../description.md" })
		}, "clean relative"},
		{"empty allowlist", func(t *testing.T, dir string) { editSpec(t, dir, func(m map[string]any) { m["allow"] = []string{} }) }, "allow must list"},
		{"bad glob", func(t *testing.T, dir string) {
			editSpec(t, dir, func(m map[string]any) { m["deny"] = []string{"a/../b"} })
		}, "deny"},
		{"reserved env", func(t *testing.T, dir string) {
			editSpec(t, dir, func(m map[string]any) { m["env"] = map[string]string{"PYTHONPATH": "/x"} })
		}, "reserved"},
		{"loader env", func(t *testing.T, dir string) {
			editSpec(t, dir, func(m map[string]any) { m["env"] = map[string]string{"LD_PRELOAD": "/x.so"} })
		}, "reserved"},
		{"oracle env", func(t *testing.T, dir string) {
			editSpec(t, dir, func(m map[string]any) { m["env"] = map[string]string{"HOME": "/"} })
		}, "set by the oracle"},
		{"bad pythonpath", func(t *testing.T, dir string) {
			editSpec(t, dir, func(m map[string]any) { m["repo"].(map[string]any)["pythonpath"] = []string{"src dir"} })
		}, "pythonpath"},
		{"limits out of range", func(t *testing.T, dir string) {
			editSpec(t, dir, func(m map[string]any) { m["limits"] = map[string]int{"wall_seconds": 99999} })
		}, "limits out of range"},
		{"list digest mismatch", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "existing-tests.txt"), []byte("tests/test_core.py::test_word_count\n"), 0o644)
		}, "sha256 is"},
		{"list without final newline", func(t *testing.T, dir string) { writeList(t, dir, "tests/test_core.py::test_word_count") }, "newline"},
		{"blank line", func(t *testing.T, dir string) { writeList(t, dir, "tests/test_core.py::test_word_count\n\n") }, "1 to 1024 bytes"},
		{"duplicate id", func(t *testing.T, dir string) {
			writeList(t, dir, "tests/test_core.py::test_word_count\ntests/test_core.py::test_word_count\n")
		}, "listed twice"},
		{"option-like id", func(t *testing.T, dir string) { writeList(t, dir, "-p evil\n") }, "starts with '-'"},
		{"id without a test", func(t *testing.T, dir string) { writeList(t, dir, "tests/test_core.py\n") }, "form file.py::test"},
		{"ids the report cannot tell apart", func(t *testing.T, dir string) {
			writeList(t, dir, "tests/test_core.py::test_a\ntests.test_core.py::test_a\n")
		}, "same JUnit name"},
		{"suites overlap", func(t *testing.T, dir string) {
			writeList(t, dir, "tests/test_slugify_hidden.py::test_collapses_runs_of_separators\n")
		}, "both the existing and the hidden suite"},
		{"symlink in hidden", func(t *testing.T, dir string) {
			os.Symlink("/etc/passwd", filepath.Join(dir, "hidden", "tests", "conftest.py"))
		}, "neither a file nor a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyTask(t)
			tt.setup(t, dir)
			_, err := Load(t.Context(), dir)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}

func TestDigestCoversEverything(t *testing.T) {
	base, err := Load(t.Context(), exampleTask)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"description.md", "hidden/tests/test_slugify_hidden.py", "repo.bundle"} {
		dir := copyTask(t)
		p := filepath.Join(dir, f)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		tk, err := Load(t.Context(), dir)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if tk.Digest == base.Digest {
			t.Errorf("changing %s leaves the digest unchanged", f)
		}
	}
}

func TestPytestIni(t *testing.T) {
	tk := &Task{Spec: Spec{Repo: Repo{PythonPath: []string{".", "src"}}}}
	ini := string(tk.pytestIni())
	for _, want := range []string{"pythonpath = /work/repo /work/repo/src\n", "xfail_strict = true\n", "junit_family = xunit2\n"} {
		if !strings.Contains(ini, want) {
			t.Errorf("ini lacks %q:\n%s", want, ini)
		}
	}
	if strings.Contains(ini, "addopts") {
		t.Error("the judge-owned ini sets addopts")
	}
}

// baseFileTask makes a copy of the example whose hidden suite also names
// test_word_count, a test of the base's tests/test_core.py, which is not
// under hidden/ (and leaves the existing suite).
func baseFileTask(t *testing.T, id string) string {
	t.Helper()
	dir := copyTask(t)
	list, err := os.ReadFile(filepath.Join(dir, "existing-tests.txt"))
	if err != nil {
		t.Fatal(err)
	}
	writeList(t, dir, strings.Replace(string(list), id+"\n", "", 1))
	editSpec(t, dir, func(m map[string]any) {
		h := m["hidden"].(map[string]any)
		h["tests"] = append(h["tests"].([]any), id)
	})
	return dir
}

// TestLoadHiddenInBaseFile: a hidden test may live in a file of the base
// commit that is not under hidden/; the gate protects that file as a
// hidden test file.
func TestLoadHiddenInBaseFile(t *testing.T) {
	tk, err := Load(t.Context(), baseFileTask(t, "tests/test_core.py::test_word_count"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tk.HiddenIDs) != 4 || len(tk.ExistingIDs) != 8 {
		t.Fatalf("H %d, S %d", len(tk.HiddenIDs), len(tk.ExistingIDs))
	}
	if diff := cmp.Diff([]string{"tests/test_core.py"}, tk.BaseTestFiles); diff != "" {
		t.Error(diff)
	}
	want := []diffgate.Protected{
		{Path: "tests/test_slugify_hidden.py", Rule: diffgate.RuleHiddenTest},
		{Path: "tests/test_core.py", Rule: diffgate.RuleHiddenTest},
	}
	if diff := cmp.Diff(want, tk.Gate().Protected); diff != "" {
		t.Errorf("protected (-want +got):\n%s", diff)
	}
	// A diff that edits the file is dropped as a hidden test's.
	diff := "diff --git a/tests/test_core.py b/tests/test_core.py\n--- a/tests/test_core.py\n+++ b/tests/test_core.py\n@@ -1 +1 @@\n-a\n+b\n"
	f, err := tk.Gate().Filter([]byte(diff))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Dropped) != 1 || f.Dropped[0].Path != "tests/test_core.py" || f.Dropped[0].Rule != diffgate.RuleHiddenTest || len(f.Diff) != 0 {
		t.Errorf("filtered %+v", f)
	}
	// The example itself has none.
	ex, err := Load(t.Context(), exampleTask)
	if err != nil || ex.BaseTestFiles != nil {
		t.Errorf("example: %v %v", ex.BaseTestFiles, err)
	}
}
