package resumedemo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/strictgrade/strictgrade/schema"
)

// kind is one kind of submission to a task: what it is and what grade it
// must get.
type kind struct {
	name string
	want schema.Outcome
	// files are the submission's files (a strict item) by path; a value
	// starting with "->" makes a symbolic link to the rest.
	files map[string]string
	// example names a directory under examples/<task>/solutions to use
	// instead of files.
	example string
	// patch is a compat item's diff; diffFile names one under
	// examples/compat-textkit/diffs instead.
	patch, diffFile string
}

type taskKinds struct {
	task, dir string // the task id and its example directory
	compat    bool
	kinds     []kind
}

const (
	alwaysEqual = "class Anything:\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n    __hash__ = object.__hash__\n"
	lyingInt    = "class Liar(int):\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n    __hash__ = int.__hash__\n"
	// pokeAround looks for the hidden cases and the judge where they
	// would be if the candidate's container held them.
	pokeAround = "import glob, os\nfound = []\nfor p in ('/hidden', '/judge', '/task', '/expected', '/run/secrets'):\n    found += glob.glob(p + '/**', recursive=True)\n"
	// forcePass is a pytest hook that marks every test passed.
	forcePass = "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n    report.outcome = \"passed\"\n    report.longrepr = None\n"
)

// newFileDiff is a unified diff that creates path holding content.
func newFileDiff(path, content string) string {
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l)
	}
	return b.String()
}

// catalogue is every kind of submission the demo grades, by task: honest
// and alternative solutions, wrong ones, empty ones, and attacks, each of
// which must FAIL.
var catalogue = []taskKinds{
	{task: "sum", dir: "sum", kinds: []kind{
		{name: "honest", want: schema.OutcomePass, example: "honest"},
		{name: "wrong", want: schema.OutcomeFail, example: "wrong"},
		{name: "empty", want: schema.OutcomeFail, files: map[string]string{}},
		{name: "always-equal", want: schema.OutcomeFail, files: map[string]string{"solution.py": alwaysEqual + "def solve(numbers):\n    return Anything()\n"}},
		{name: "lying-int", want: schema.OutcomeFail, files: map[string]string{"solution.py": lyingInt + "def solve(numbers):\n    return Liar(-1)\n"}},
		{name: "hunts-hidden", want: schema.OutcomeFail, files: map[string]string{"solution.py": pokeAround + "def solve(numbers):\n    return len(found)\n"}},
		{name: "exits-at-import", want: schema.OutcomeFail, files: map[string]string{"solution.py": "import os\nos._exit(0)\n"}},
		{name: "symlink-passwd", want: schema.OutcomeFail, files: map[string]string{"solution.py": "->/etc/passwd"}},
		{name: "spins", want: schema.OutcomeFail, files: map[string]string{"solution.py": "def solve(numbers):\n    while True:\n        pass\n"}},
	}},
	{task: "wordfreq", dir: "wordfreq", kinds: []kind{
		{name: "honest", want: schema.OutcomePass, example: "honest"},
		{name: "wrong", want: schema.OutcomeFail, example: "wrong"},
		{name: "empty", want: schema.OutcomeFail, files: map[string]string{}},
		{name: "phones-home", want: schema.OutcomeFail, files: map[string]string{"solution": "#!/usr/bin/env python3\nimport socket\ns = socket.socket()\ns.settimeout(2)\ntry:\n    s.connect(('93.184.215.14', 80))\n    print(s.recv(100))\nexcept OSError as e:\n    print('blocked', e)\n"}},
		{name: "floods-output", want: schema.OutcomeFail, files: map[string]string{"solution": "#!/usr/bin/env python3\nimport sys\nfor _ in range(1 << 16):\n    sys.stdout.write('x' * 1024)\n"}},
		{name: "hunts-hidden", want: schema.OutcomeFail, files: map[string]string{"solution": "#!/usr/bin/env python3\n" + pokeAround + "print('\\n'.join(found))\n"}},
	}},
	{task: "toposort", dir: "toposort", kinds: []kind{
		{name: "honest", want: schema.OutcomePass, example: "honest"},
		{name: "alternative", want: schema.OutcomePass, example: "alternative"},
		{name: "wrong", want: schema.OutcomeFail, example: "wrong"},
		{name: "empty", want: schema.OutcomeFail, files: map[string]string{}},
		{name: "always-equal", want: schema.OutcomeFail, files: map[string]string{"solution.py": alwaysEqual + "def toposort(*args, **kwargs):\n    return Anything()\n"}},
	}},
	{task: "textkit-slugify", dir: "compat-textkit", compat: true, kinds: []kind{
		{name: "honest", want: schema.OutcomePass, diffFile: "honest.diff"},
		{name: "wrong", want: schema.OutcomeFail, diffFile: "wrong.diff"},
		{name: "does-not-apply", want: schema.OutcomeFail, diffFile: "does-not-apply.diff"},
		{name: "empty", want: schema.OutcomeFail, patch: ""},
		{name: "root-conftest", want: schema.OutcomeFail, patch: newFileDiff("conftest.py", forcePass)},
		{name: "package-conftest", want: schema.OutcomeFail, patch: newFileDiff("textkit/conftest.py", forcePass)},
		{name: "adds-tests", want: schema.OutcomeFail, patch: newFileDiff("tests/test_always.py", "def test_always():\n    assert True\n")},
	}},
}

// Item is one line of the demo's items file and the grade it must get.
type Item struct {
	ID   string
	Task string
	Want schema.Outcome
}

// WriteItems lays out n items under dir — submissions in dir/subs, the
// items file dir/items.jsonl — taking the tasks in turn and each task's
// kinds in turn, so that any prefix mixes them. repo is the repository
// root (for examples/).
func WriteItems(repo, dir string, n int) (string, []Item, error) {
	var lines []byte
	var items []Item
	for round := 0; len(items) < n; round++ {
		for _, tk := range catalogue {
			if len(items) == n {
				break
			}
			k := tk.kinds[round%len(tk.kinds)]
			id := fmt.Sprintf("%s-%s-%d", tk.task, k.name, round/len(tk.kinds)+1)
			var line any
			if tk.compat {
				patch := k.patch
				if k.diffFile != "" {
					data, err := os.ReadFile(filepath.Join(repo, "examples", tk.dir, "diffs", k.diffFile))
					if err != nil {
						return "", nil, err
					}
					patch = string(data)
				}
				line = map[string]string{"id": id, "instance_id": tk.task, "model_patch": patch, "model_name_or_path": "resume-demo/" + k.name}
			} else {
				sub := filepath.Join(repo, "examples", tk.dir, "solutions", k.example)
				if k.example == "" {
					sub = filepath.Join(dir, "subs", tk.task, k.name)
					if err := writeSubmission(sub, k.files); err != nil {
						return "", nil, err
					}
				}
				line = map[string]string{"id": id, "task": tk.task, "submission": sub}
			}
			data, err := json.Marshal(line)
			if err != nil {
				return "", nil, err
			}
			lines = append(append(lines, data...), '\n')
			items = append(items, Item{ID: id, Task: tk.task, Want: k.want})
		}
	}
	path := filepath.Join(dir, "items.jsonl")
	return path, items, os.WriteFile(path, lines, 0o644)
}

// writeSubmission writes files into dir, once (later rounds share it).
func writeSubmission(dir string, files map[string]string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				return err
			}
			continue
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			return err
		}
	}
	return nil
}

// TaskDirs are the task directories of the catalogue, under repo.
func TaskDirs(repo string) []string {
	var dirs []string
	for _, tk := range catalogue {
		dirs = append(dirs, filepath.Join(repo, "examples", tk.dir, "task"))
	}
	return dirs
}
