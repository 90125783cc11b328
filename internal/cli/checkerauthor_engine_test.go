//go:build engine

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/internal/testtree"
	"github.com/strictgrade/strictgrade/schema"
)

// sortChecker accepts the sorted order of the case's one argument, a list
// of integers: it needs no expected value, so the cases have none.
const sortChecker = `// Command checker accepts the sorted order of the case's list.
package main

{generate}

import (
	"encoding/json"
	"io"
	"os"
	"slices"
)

func answer(ok bool, msg string) {
	a := map[string]string{"verdict": "accept"}
	if !ok {
		a = map[string]string{"verdict": "reject", "message": msg}
	}
	b, _ := json.Marshal(a)
	os.Stdout.Write(b)
}

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		os.Exit(3)
	}
	var in struct {
		Input  []json.RawMessage ` + "`json:\"input\"`" + `
		Output []byte            ` + "`json:\"output\"`" + `
	}
	var want, got []int
	if json.Unmarshal(data, &in) != nil || len(in.Input) != 1 || json.Unmarshal(in.Input[0], &want) != nil {
		os.Exit(3) // the case is malformed: the task's defect
	}
	if json.Unmarshal(in.Output, &got) != nil || len(got) != len(want) {
		answer(false, "not a list of the input's length")
		return
	}
	slices.Sort(want)
	answer(slices.Equal(want, got), "not the input in order")
}
`

// TestCheckerAuthorFromDocs writes a checker task as a new author would
// from the README alone (issue 29, item 8): the checker built by the
// README's go:generate line, function cases without expected values since
// the checker decides them, and an output limit a sorted list of its
// inputs needs, as the checker protocol advises. task check finds it fit, and a wrong solution's
// rejected case carries its own reason code in the signed verdict.
func TestCheckerAuthorFromDocs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := buildChecker(t, generateLine(t, "README.md", string(data)), sortChecker)
	taskDir := filepath.Join(dir, "task")
	testtree.Write(t, taskDir, map[string]string{
		"task.json": `{"schema":"strictgrade.task/v1","id":"sort","version":"1","kind":"function","runtime":"python",` +
			`"function":{"module":"solution","name":"solve"},"artifacts":["solution.py"],"limits":{"output_bytes":65536}}`,
		"public/README.md":      "Write solution.py with solve(xs), returning the list xs in ascending order.\n",
		"hidden/cases.json":     `{"compare":{"kind":"checker","module":"checker.wasm"},"cases":[{"id":"three","args":[[3,1,2]]},{"id":"empty","args":[[]]}]}`,
		"reference/solution.py": "def solve(xs):\n    return sorted(xs)\n",
	})
	code, stdout, stderr := run(t, "task", "check", taskDir)
	if code != ExitOK || !strings.Contains(stdout, "0 of 2 checker cases have an expected output") {
		t.Fatalf("task check: exit %d\n%s\n%s", code, stdout, stderr)
	}

	wrong := filepath.Join(t.TempDir(), "wrong")
	testtree.Write(t, wrong, map[string]string{"solution.py": "def solve(xs):\n    return xs\n"})
	code, stdout, stderr = run(t, "grade", "--task", taskDir, "--submission", wrong, "--json")
	if code != ExitFail {
		t.Fatalf("grade the wrong solution: exit %d, want %d\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	var v schema.Verdict
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("grade --json: %v\n%s", err, stdout)
	}
	got := map[string]string{}
	for _, c := range v.Cases {
		got[c.ID] = string(c.Outcome) + " " + c.DecidedBy + " " + c.ReasonCode
	}
	want := map[string]string{"three": "FAIL checker wrong_answer", "empty": "PASS checker "}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cases (-want +got):\n%s", diff)
	}
}
