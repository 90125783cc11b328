// Package swebenchtest makes SWE-bench-format instances for tests, from the
// compat example's repository (examples/compat-textkit/repo): a git clone
// of it and an instance whose test patch adds the example's hidden tests
// to tests/test_core.py and whose patch is the example's reference fix.
// It is test support; nothing else imports it.
package swebenchtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// HiddenTests are the node ids the instance's test patch adds.
var HiddenTests = []string{
	"tests/test_core.py::test_collapses_runs_of_separators",
	"tests/test_core.py::test_strips_leading_and_trailing_separators",
	"tests/test_core.py::test_punctuation_only_gives_empty_slug",
}

// Textkit is a clone of the example repository and an instance on it.
type Textkit struct {
	// Repo is the clone's work tree; its HEAD is Base.
	Repo string
	Base string
	// Example is examples/compat-textkit.
	Example string
	// Instance is a valid instance: the caller may change it freely.
	Instance map[string]any
}

// Example returns the path of examples/compat-textkit.
func Example(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("swebenchtest: cannot locate the source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "compat-textkit")
}

// New makes the clone in a temporary directory and the instance.
func New(tb testing.TB) *Textkit {
	tb.Helper()
	ex := Example(tb)
	repo := filepath.Join(tb.TempDir(), "textkit")
	if err := os.CopyFS(repo, os.DirFS(filepath.Join(ex, "repo"))); err != nil {
		tb.Fatal(err)
	}
	Git(tb, repo, "init", "-q", "-b", "main")
	Git(tb, repo, "add", "-A")
	Git(tb, repo, "commit", "-q", "-m", "textkit 0.3.0")
	base := strings.TrimSpace(Git(tb, repo, "rev-parse", "HEAD"))

	hidden, err := os.ReadFile(filepath.Join(ex, "task", "hidden", "tests", "test_slugify_hidden.py"))
	if err != nil {
		tb.Fatal(err)
	}
	_, tests, ok := strings.Cut(string(hidden), "\n\n\n")
	if !ok {
		tb.Fatal("swebenchtest: the example's hidden test file changed shape")
	}
	testPatch := Diff(tb, repo, map[string]string{"tests/test_core.py": read(tb, filepath.Join(repo, "tests", "test_core.py")) + "\n\n" + tests})
	patch := read(tb, filepath.Join(ex, "task", "reference.diff"))
	existing := strings.Fields(read(tb, filepath.Join(ex, "task", "existing-tests.txt")))
	statement := read(tb, filepath.Join(ex, "task", "description.md"))
	return &Textkit{Repo: repo, Base: base, Example: ex, Instance: map[string]any{
		"repo":                     "textkit/textkit",
		"instance_id":              "textkit__textkit-1",
		"base_commit":              base,
		"patch":                    patch,
		"test_patch":               testPatch,
		"problem_statement":        statement,
		"hints_text":               "",
		"created_at":               "2024-01-01T00:00:00Z",
		"version":                  "0.3",
		"environment_setup_commit": base,
		// As the Hugging Face dataset stores them: JSON in a string.
		"FAIL_TO_PASS": mustJSON(tb, HiddenTests),
		"PASS_TO_PASS": mustJSON(tb, existing),
	}}
}

// Diff writes files (slash-separated paths → content; "" deletes) into
// the clone's work tree, returns `git diff` of them against HEAD and
// restores the work tree.
func Diff(tb testing.TB, repo string, files map[string]string) string {
	tb.Helper()
	for name, data := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if data == "" {
			if err := os.Remove(p); err != nil {
				tb.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	Git(tb, repo, "add", "-A")
	diff := Git(tb, repo, "diff", "--cached", "--binary", "HEAD")
	Git(tb, repo, "reset", "-q", "--hard", "HEAD")
	return diff
}

// Git runs git in dir with a fixed identity and no user configuration,
// and returns its standard output.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=textkit", "GIT_AUTHOR_EMAIL=textkit@example.invalid", "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=textkit", "GIT_COMMITTER_EMAIL=textkit@example.invalid", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// Write writes inst as JSON to a new file and returns its path.
func Write(tb testing.TB, inst map[string]any) string {
	tb.Helper()
	data, err := json.MarshalIndent(inst, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(tb.TempDir(), "instance.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

func read(tb testing.TB, p string) string {
	tb.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}
