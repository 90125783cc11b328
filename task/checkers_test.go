package task_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strictgrade/strictgrade/internal/testtree"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

var (
	checkerOnce sync.Once
	checkerWasm []byte
	checkerErr  error
)

// testChecker builds testdata/checker for WASI, once per test binary.
func testChecker(t *testing.T) []byte {
	t.Helper()
	checkerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "task-checker-*")
		if err != nil {
			checkerErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "checker.wasm")
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./testdata/checker")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			checkerErr = fmt.Errorf("build the test checker: %v\n%s", err, msg)
			return
		}
		checkerWasm, checkerErr = os.ReadFile(out)
	})
	if checkerErr != nil {
		t.Fatal(checkerErr)
	}
	return checkerWasm
}

const functionSpec = `{"schema":"strictgrade.task/v1","id":"t","version":"1","kind":"function","runtime":"python",
	"function":{"module":"solution","name":"f"},"artifacts":["solution.py"]}`

// checkerTask lays out a task whose cases (cases.json's "cases" array)
// are decided by the module, with the comparator options opts.
func checkerTask(t *testing.T, spec string, module []byte, opts, cases string) *task.Task {
	t.Helper()
	dir := t.TempDir()
	testtree.Write(t, dir, map[string]string{
		task.SpecFile:              spec,
		"public/README.md":         "a task",
		"hidden/checker.wasm":      string(module),
		"hidden/" + task.CasesFile: `{"compare":{"kind":"checker","module":"checker.wasm"` + opts + `},"cases":[` + cases + `]}`,
	})
	tk, err := task.Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestCheckCheckers(t *testing.T) {
	t.Parallel()
	wasm := testChecker(t)
	cmdSpec := fmt.Sprintf(commandSpec, "")
	for _, tt := range []struct {
		name        string
		spec        string
		opts, cases string
		// want the findings to hold these (empty: none)
		accept, reject string
		expected, runs int
	}{
		{name: "function: exact checker", spec: functionSpec,
			cases:    `{"id":"a","args":["equal"],"expected":[1,2]},{"id":"b","args":["equal"],"expected":null}`,
			expected: 2, runs: 2 + 2 + 2 + 2 - 1 + 2*3}, // null is skipped as "no output" for b
		{name: "command: exact checker, one case without an expected output", spec: cmdSpec,
			cases:    `{"id":"a","argv":["equal"],"expected_stdout":"1 2\n"},{"id":"b","argv":["equal"],"expected_exit":3}`,
			expected: 1, runs: 1 + 2 + 2 + 2 + 2*3},
		{name: "a checker that accepts a prefix still rejects something", spec: cmdSpec,
			cases:    `{"id":"a","argv":["prefix"],"expected_stdout":"yes\n"}`,
			expected: 1, runs: 4 + 3},
		{name: "the expected output rejected", spec: functionSpec,
			cases:    `{"id":"a","args":["equal"],"expected":1},{"id":"b","args":["reject"],"expected":2}`,
			accept:   "the checker did not accept the expected output of case b: the checker rejected the output",
			expected: 2, runs: 8 + 2*3},
		{name: "everything accepted", spec: cmdSpec,
			cases:    `{"id":"a","argv":["equal"],"expected_stdout":"x"},{"id":"b","argv":["accept"],"expected_stdout":"x"}`,
			reject:   "the checker accepted every wrong output of case b (no output; the expected output with garbage added; a kilobyte of garbage)",
			expected: 2, runs: 8 + 2*3},
		{name: "the checker fails on invalid UTF-8", spec: cmdSpec,
			cases:    `{"id":"a","argv":["utf8"],"expected_stdout":"x"}`,
			reject:   "the checker failed on a wrong output (the expected output with garbage added), an ERROR any candidate could cause: judge: checker failed: module checker.wasm sha256 ",
			expected: 1, runs: 3},
		{name: "the checker fails on the expected output", spec: cmdSpec,
			cases:    `{"id":"a","argv":["empty"],"expected_stdout":""}`,
			accept:   "the checker failed on an expected output: judge: checker failed: module checker.wasm sha256 " + sha(wasm) + ": case a: exited with status 3 after ",
			reject:   "the checker accepted every wrong output of case a",
			expected: 1, runs: 3 + 3}, // and the three large outputs, which it accepts
		{name: "the checker fails on no output", spec: cmdSpec,
			cases:    `{"id":"a","argv":["empty"],"expected_stdout":"x"}`,
			reject:   "the checker failed on a wrong output (no output), an ERROR any candidate could cause: judge: checker failed: module checker.wasm sha256 " + sha(wasm) + ": case a: exited with status 3 after ",
			expected: 1, runs: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tk := checkerTask(t, tt.spec, wasm, tt.opts, tt.cases)
			f, err := tk.CheckCheckers()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(f.Accept, tt.accept) || (tt.accept == "") != (f.Accept == "") {
				t.Errorf("accept: %q\nwant %q", f.Accept, tt.accept)
			}
			if !strings.HasPrefix(f.Reject, tt.reject) || (tt.reject == "") != (f.Reject == "") {
				t.Errorf("reject: %q\nwant %q", f.Reject, tt.reject)
			}
			if f.Fit() != (tt.accept == "" && tt.reject == "") {
				t.Errorf("fit %v", f.Fit())
			}
			if f.Cases != strings.Count(tt.cases, `"id"`) || f.Expected != tt.expected || f.Runs != tt.runs {
				t.Errorf("cases %d expected %d runs %d, want %d %d %d", f.Cases, f.Expected, f.Runs, strings.Count(tt.cases, `"id"`), tt.expected, tt.runs)
			}
		})
	}
}

// TestCheckCheckersToposort: the example's checker is fit; with an
// expected order that is not a topological order it is not.
func TestCheckCheckersToposort(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "examples", "toposort", "task")
	// The two checks are independent (and each long under -race).
	t.Run("fit", func(t *testing.T) {
		t.Parallel()
		tk, err := task.Load(t.Context(), src)
		if err != nil {
			t.Fatal(err)
		}
		f, err := tk.CheckCheckers()
		if err != nil || !f.Fit() || f.Cases != len(tk.Cases.Cases) || f.Expected != f.Cases || len(f.Probes) != 3 {
			t.Fatalf("%+v %v", f, err)
		}
		for _, p := range f.Probes {
			t.Logf("%+v", p) // the figures
		}
	})
	t.Run("an expected order that is not one", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "task")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		cases := filepath.Join(dir, "hidden", task.CasesFile)
		data, err := os.ReadFile(cases)
		if err != nil {
			t.Fatal(err)
		}
		bad := strings.Replace(string(data), `"expected":[3,2,1,0]`, `"expected":[0,1,2,3]`, 1)
		if bad == string(data) {
			t.Fatal("the chain case is not in the example")
		}
		if err := os.WriteFile(cases, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		tk, err := task.Load(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		f, err := tk.CheckCheckers()
		if err != nil {
			t.Fatal(err)
		}
		// The example's checker refuses a case whose expected order is
		// not valid: a checker failure on the expected output.
		if want := "the checker failed on an expected output: judge: checker failed: module checker.wasm sha256 "; !strings.HasPrefix(f.Accept, want) ||
			!strings.Contains(f.Accept, "case chain: exited with status 3") {
			t.Errorf("%+v\nwant accept %q", f, want)
		}
	})
}

// Issue 29, item 4: task check proves a checker on outputs as large as
// the task allows. A checker that is quick on the expected output and on
// a kilobyte, but quadratic in the output's length, runs out of its fuel
// on a candidate's 64 KiB answer; on f7459a3 task check called it fit.
func TestCheckCheckersLargeOutputs(t *testing.T) {
	spec := strings.Replace(functionSpec, `"artifacts"`, `"limits":{"output_bytes":65536},"artifacts"`, 1)
	tk := checkerTask(t, spec, testChecker(t), `,"fuel":200000000`, `{"id":"a","args":["slow"],"expected":[1,2]}`)
	f, err := tk.CheckCheckers()
	if err != nil {
		t.Fatal(err)
	}
	if f.Fit() {
		t.Fatalf("a checker that runs out of fuel on a 64 KiB output is fit: %+v", f)
	}
	if want := "the checker ran out of its fuel of 200000000 on an output of 65467 bytes (the expected output repeated) in case a"; !strings.HasPrefix(f.Large, want) {
		t.Errorf("large: %q\nwant %q", f.Large, want)
	}
	if len(f.Probes) != 1 || f.Probes[0].Fuel != 200000000 || f.Probes[0].OutOfFuel != 1 {
		t.Errorf("probes %+v", f.Probes)
	}
}

// Issue 29, item 5: a checker that quotes the candidate's whole answer in
// its reject is fit, and grading says the same: a FAIL, not an ERROR. On
// f7459a3 task check called it fit while a grade of an answer over 4 KiB
// was an ERROR.
//
// (A message past the checker's output cap, 64 KiB by default, is still
// the checker's failure; task check finds that too, now that it gives the
// checker outputs as large as the task's output_bytes.)
func TestCheckCheckersAgreesWithGrading(t *testing.T) {
	spec := strings.Replace(functionSpec, `"artifacts"`, `"limits":{"output_bytes":16384},"artifacts"`, 1)
	tk := checkerTask(t, spec, testChecker(t), "", `{"id":"a","args":["quote"],"expected":[1,2]}`)
	f, err := tk.CheckCheckers()
	if err != nil || !f.Fit() {
		t.Fatalf("%+v %v", f, err)
	}
	for _, p := range f.Probes {
		if p.Bytes < 16384-100 || p.Fuel <= 0 || p.Fuel > p.Budget {
			t.Errorf("probe %+v", p)
		}
		t.Logf("%+v", p)
	}
	hidden := map[string][]byte{"checker.wasm": testChecker(t)}
	long := `[` + strings.Repeat(`1,`, 5000) + `2]`
	in := &judge.Input{
		Meta: judge.Meta{Kind: schema.KindFunction, Verdict: schema.Verdict{
			Schema: schema.ID, Tier: schema.TierStrict,
			Task: schema.Task{ID: tk.Spec.ID, Digest: tk.Digest, Kind: schema.KindFunction},
		}},
		Cases:  tk.Cases,
		Hidden: hidden,
		Outputs: []judge.Output{{
			Result: &judge.RunResult{Exit: schema.ExitExited},
			Files:  map[string]*judge.Blob{judge.ValueFile: {Data: []byte(`{"ok":true,"value":` + long + `}`)}},
		}},
	}
	v, err := judge.Judge(in)
	if err != nil || v.Outcome != schema.OutcomeFail || v.Cases[0].DecidedBy != judge.KindChecker {
		t.Fatalf("grading a 10 KB wrong answer: %+v, %v; want a FAIL by the checker", v, err)
	}
}

// TestCheckCheckersNone: a task without a checker has nothing to check.
func TestCheckCheckersNone(t *testing.T) {
	tk, err := task.Load(t.Context(), writeTask(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	f, err := tk.CheckCheckers()
	if err != nil || f.Cases != 0 || f.Runs != 0 || !f.Fit() {
		t.Errorf("%+v %v", f, err)
	}
	if _, err := (&task.Task{}).CheckCheckers(); err == nil {
		t.Error("a task Load did not make was checked")
	}
}

func sha(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }

// FuzzCheckerBoundary: whatever a candidate's function returns (any bytes
// as its record's value), the example's checker, run by the judge's own
// code, decides the case: PASS or FAIL, never an error (which would make
// the grade an ERROR). The seeds are the hostile outputs: garbage,
// invalid UTF-8, deep nesting, huge numbers.
func FuzzCheckerBoundary(f *testing.F) {
	tk, err := task.Load(f.Context(), filepath.Join("..", "examples", "toposort", "task"))
	if err != nil {
		f.Fatal(err)
	}
	module, err := tk.HiddenFile("checker.wasm")
	if err != nil {
		f.Fatal(err)
	}
	var diamond judge.Case
	for _, c := range tk.Cases.Cases {
		if c.ID == "diamond" {
			diamond = c
		}
	}
	cases := &judge.Cases{Compare: tk.Cases.Compare, Cases: []judge.Case{diamond}}
	for _, seed := range []string{
		"[0,1,2,3]", "[0,2,1,3]", "[3,2,1,0]", "[]", "null", `"0123"`, "[0,1,2,3,4]", "[0,0,0,0]",
		"[1e999,-0,0.5,9007199254740993]", `{"a":[0,1,2,3]}`,
		strings.Repeat("[", 600) + strings.Repeat("]", 600),
		"\xff\xfe\x00garbage", string(bytes.Repeat([]byte{0x80, 0xc0, 0x00, '{'}, 4096)),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		in := &judge.Input{
			Meta: judge.Meta{Kind: schema.KindFunction, Verdict: schema.Verdict{Schema: schema.ID, Tier: schema.TierStrict,
				Task: schema.Task{ID: "toposort", Kind: schema.KindFunction}}},
			Cases:  cases,
			Hidden: map[string][]byte{"checker.wasm": module},
			Outputs: []judge.Output{{
				Result: &judge.RunResult{Exit: schema.ExitExited},
				Files:  map[string]*judge.Blob{judge.ValueFile: {Data: append(append([]byte(`{"ok":true,"value":`), value...), '}')}},
			}},
		}
		v, err := judge.Judge(in)
		if err != nil {
			t.Fatalf("value %q: %v", value, err)
		}
		if o := v.Cases[0].Outcome; o != schema.OutcomePass && o != schema.OutcomeFail {
			t.Fatalf("value %q: %s", value, o)
		}
	})
}
