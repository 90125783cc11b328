package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/internal/swebenchtest"
)

func TestTaskImportUsage(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"task", "import-swebench"}, "--instance FILE, --repo PATH and --out DIR are required"},
		{[]string{"task", "import-swebench", "--instance", "i.json", "--repo", "."}, "are required"},
		{[]string{"task", "import-swebench", "--instance", "i.json", "--repo", ".", "--out", "o", "extra"}, "and nothing else"},
		{[]string{"task", "import-swebench", "--instance", "i.json", "--repo", ".", "--out", full}, "exists and is not empty"},
		{[]string{"task", "import-swebench", "--instance", filepath.Join(full, "nowhere.json"), "--repo", ".", "--out", filepath.Join(full, "o")}, "--instance: open"},
		{[]string{"task", "import-swebench", "--instance", full, "--repo", ".", "--out", filepath.Join(full, "o")}, "is not a regular file"},
		{[]string{"task", "import-swebench", "--bogus"}, "flag provided but not defined"},
	} {
		code, stdout, stderr := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s\n%s", c.args, code, ExitUsage, c.want, stdout, stderr)
		}
	}
	code, _, stderr := run(t, "task", "import-swebench", "-h")
	if code != ExitOK || !strings.Contains(stderr, "pure-Python repositories whose tests are pytest node ids") {
		t.Errorf("help: exit %d\n%s", code, stderr)
	}
}

// TestTaskImportRefused: instances refused before any container runs, so
// without a daemon: exit 2, the reason, nothing at --out.
func TestTaskImportRefused(t *testing.T) {
	tk := swebenchtest.New(t)
	cases := []struct {
		name   string
		change func(map[string]any)
		want   string
	}{
		{"missing field", func(m map[string]any) { delete(m, "test_patch") }, "missing required field(s): test_patch"},
		{"unittest ids", func(m map[string]any) { m["FAIL_TO_PASS"] = []string{"test_slug (tests.test_core.SlugTests)"} }, "only instances whose tests are pytest node ids"},
		{"test patch does not apply", func(m map[string]any) {
			m["test_patch"] = strings.Replace(m["test_patch"].(string), "def test_truncate_rejects_tiny_width", "def test_truncate_rejects_other_width", 1)
		}, "test_patch does not apply at base_commit"},
		{"unknown test", func(m map[string]any) { m["FAIL_TO_PASS"] = []string{"tests/test_core.py::test_nowhere"} }, "has nothing named test_nowhere"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inst := map[string]any{}
			for k, v := range tk.Instance {
				inst[k] = v
			}
			c.change(inst)
			out := filepath.Join(t.TempDir(), "task")
			code, stdout, stderr := run(t, "task", "import-swebench", "--instance", swebenchtest.Write(t, inst), "--repo", tk.Repo, "--out", out)
			if code != ExitUsage || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "strictgrade task import-swebench: swebench: instance refused") {
				t.Errorf("exit %d, want %d with %q\n%s\n%s", code, ExitUsage, c.want, stdout, stderr)
			}
			if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %v", out, err)
			}
		})
	}
}
