package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/schema"
)

// TestTaskCheckUsage: the command line and the reference solution are
// checked before any daemon is reached.
func TestTaskCheckUsage(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent")
	noRef := filepath.Join(t.TempDir(), "task")
	if err := os.CopyFS(noRef, os.DirFS(sumTask)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(noRef, referenceDir)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no directory", []string{"task", "check"}, "takes one task directory"},
		{"two directories", []string{"task", "check", sumTask, sumTask}, "takes one task directory"},
		{"not a task", []string{"task", "check", t.TempDir()}, "task.json"},
		{"no reference", []string{"task", "check", noRef}, "has no reference solution: put one in " + filepath.Join(noRef, "reference") + "/"},
		{"--reference missing, after DIR", []string{"task", "check", sumTask, "--reference", filepath.Join(t.TempDir(), "nope")}, "--reference"},
		{"--out a directory", []string{"task", "check", "--out", t.TempDir(), sumTask}, "is a directory"},
		{"bad flag", []string{"task", "check", sumTask, "--bogus"}, "flag provided but not defined"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.args...)
			if code != ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, want %d with %q\n%s", code, ExitUsage, tt.want, stderr)
			}
		})
	}
	// Help exits 0, for the command and for each subcommand.
	for _, args := range [][]string{{"task", "-h"}, {"task", "check", "-h"}, {"task", "new", "-h"}} {
		if code, _, stderr := run(t, args...); code != ExitOK || !strings.Contains(stderr, "usage: strictgrade task") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	// With a reference, the check goes on to the daemon, which is unreachable.
	for _, args := range [][]string{{"task", "check", sumTask}, {"task", "check", noRef, "--reference", sumHonest, "--noop=false"}} {
		if code, _, stderr := run(t, args...); code != ExitError || !strings.Contains(stderr, "not reachable") {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, ExitError, stderr)
		}
	}
}

// TestStrictReference: --reference wins, then reference/, then
// reference.tar.
func TestStrictReference(t *testing.T) {
	dir := t.TempDir()
	a := &taskCheckArgs{dir: dir}
	if _, err := strictReference(a); exitCode(err) != ExitUsage {
		t.Errorf("none: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, referenceTar), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := strictReference(a); err != nil || p != filepath.Join(dir, referenceTar) {
		t.Errorf("tar: %q %v", p, err)
	}
	if err := os.Mkdir(filepath.Join(dir, referenceDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := strictReference(a); err != nil || p != filepath.Join(dir, referenceDir) {
		t.Errorf("directory: %q %v", p, err)
	}
	a.reference = "elsewhere"
	if p, err := strictReference(a); err != nil || p != "elsewhere" {
		t.Errorf("--reference: %q %v", p, err)
	}
	if p, err := compatReference(&taskCheckArgs{dir: dir}); err != nil || p != "" {
		t.Errorf("compat, none: %q %v", p, err)
	}
	if err := os.WriteFile(filepath.Join(dir, referenceDiff), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := compatReference(&taskCheckArgs{dir: dir}); err != nil || p != filepath.Join(dir, referenceDiff) {
		t.Errorf("compat: %q %v", p, err)
	}
}

// TestDecideChecks is task check's decision table.
func TestDecideChecks(t *testing.T) {
	const (
		pass = schema.OutcomePass
		fail = schema.OutcomeFail
		errV = schema.OutcomeError
		quar = schema.OutcomeQuarantined
	)
	ref := func(got schema.Outcome, reason string) check {
		return check{Name: "reference", Want: pass, Got: got, Reason: reason}
	}
	noop := func(got schema.Outcome) check { return check{Name: "noop", Want: fail, Got: got} }
	base := func(got schema.Outcome, reason string) check {
		return check{Name: "baseline", Want: fail, Got: got, Reason: reason}
	}
	chk := func(name string, got schema.Outcome, reason string) check {
		want := pass
		if name == checkerWrong {
			want = fail
		}
		return check{Name: name, Want: want, Got: got, Reason: reason}
	}
	for _, tt := range []struct {
		name   string
		checks []check
		code   int
		msg    string
	}{
		{"strict fit", []check{ref(pass, ""), noop(fail)}, ExitOK, ""},
		{"strict fit without the no-op check", []check{ref(pass, "")}, ExitOK, ""},
		{"reference fails", []check{ref(fail, "case negatives: FAIL: wrong_answer"), noop(fail)}, ExitQuarantined, "the reference solution did not pass (FAIL): case negatives: FAIL: wrong_answer"},
		{"no-op passes", []check{ref(pass, ""), noop(pass)}, ExitQuarantined, "an empty submission passed"},
		{"reference fails and no-op passes: the reference is named", []check{ref(fail, "r"), noop(pass)}, ExitQuarantined, "reference solution did not pass"},
		{"reference ERROR", []check{ref(errV, "daemon went away")}, ExitError, "the reference verdict is ERROR: daemon went away"},
		{"no-op ERROR outranks a failed reference", []check{ref(fail, "r"), noop(errV)}, ExitError, "the noop verdict is ERROR"},
		{"checkers fit", []check{chk(checkerExpected, pass, "9 of 9"), chk(checkerWrong, fail, ""), ref(pass, ""), noop(fail)}, ExitOK, ""},
		{"checker rejects an expected output", []check{chk(checkerExpected, fail, "case b: rejected"), chk(checkerWrong, fail, "")}, ExitQuarantined, "QUARANTINED: the checker does not accept the expected outputs: case b: rejected"},
		{"checker fails on an expected output: the task's defect", []check{chk(checkerExpected, errV, "the checker failed"), chk(checkerWrong, fail, "")}, ExitQuarantined, "QUARANTINED: the checker does not accept the expected outputs: the checker failed"},
		{"checker accepts wrong outputs", []check{chk(checkerExpected, pass, ""), chk(checkerWrong, pass, "case a")}, ExitQuarantined, "QUARANTINED: the checker does not reject wrong outputs: case a"},
		{"checker fails on a wrong output", []check{chk(checkerExpected, pass, ""), chk(checkerWrong, errV, "garbage")}, ExitQuarantined, "QUARANTINED: the checker does not reject wrong outputs: garbage"},
		{"checker out of fuel on a large output", []check{chk(checkerExpected, pass, ""), chk(checkerWrong, fail, ""), chk(checkerLarge, fail, "ran out")}, ExitQuarantined, "QUARANTINED: the checker does not answer the largest outputs within its fuel: ran out"},
		{"checker fails on a large output", []check{chk(checkerExpected, pass, ""), chk(checkerWrong, fail, ""), chk(checkerLarge, errV, "output cap")}, ExitQuarantined, "QUARANTINED: the checker does not answer the largest outputs within its fuel: output cap"},
		{"compat fit", []check{base(fail, "")}, ExitOK, ""},
		{"compat fit, reference passes", []check{base(fail, ""), ref(pass, "")}, ExitOK, ""},
		{"compat quarantined", []check{base(quar, "hidden tests pass at the base: t::x"), ref(pass, "")}, ExitQuarantined, "QUARANTINED: hidden tests pass at the base: t::x"},
		{"compat reference fails", []check{base(fail, ""), ref(fail, "oracle: wrong_answer")}, ExitQuarantined, "the reference solution did not pass (FAIL): oracle: wrong_answer"},
		{"compat baseline passes", []check{base(pass, "")}, ExitError, "the baseline verdict is PASS"},
		{"compat baseline ERROR", []check{base(errV, "clone failed")}, ExitError, "the baseline verdict is ERROR: clone failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := decideChecks(tt.checks)
			if code := exitCode(err); code != tt.code {
				t.Fatalf("exit %d, want %d (%v)", code, tt.code, err)
			}
			if tt.msg != "" && (err == nil || !strings.Contains(err.Error(), tt.msg)) {
				t.Errorf("message %v, want %q", err, tt.msg)
			}
			var out *outcomeError
			if err != nil && !errors.As(err, &out) {
				t.Errorf("%v is not an outcome error", err)
			}
		})
	}
}

func TestVerdictReason(t *testing.T) {
	v := &schema.Verdict{Cases: []schema.Case{{ID: "a", Outcome: schema.OutcomePass}, {ID: "b", Outcome: schema.OutcomeFail, Reason: "wrong_answer at byte 0"}}}
	if got := verdictReason(v); got != "case b: FAIL: wrong_answer at byte 0" {
		t.Errorf("got %q", got)
	}
	v.Reason = "missing artifact"
	if got := verdictReason(v); got != "missing artifact" {
		t.Errorf("got %q", got)
	}
}

// TestTaskCheckCheckerQuarantine: a strict task whose checker does not
// accept an expected output is quarantined before any daemon is reached;
// a fit checker lets the check go on to the daemon.
func TestTaskCheckCheckerQuarantine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent")
	src := filepath.Join("..", "..", "examples", "toposort", "task")
	bad := filepath.Join(t.TempDir(), "task")
	if err := os.CopyFS(bad, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	cases := filepath.Join(bad, "hidden", "cases.json")
	data, err := os.ReadFile(cases)
	if err != nil {
		t.Fatal(err)
	}
	// [0,1] puts node 1 before node 0 in a graph with the edge 1->0.
	broken := strings.Replace(string(data), `{"id":"chain","args":[4,[[3,2],[2,1],[1,0]]],"expected":[3,2,1,0]}`,
		`{"id":"chain","args":[2,[[1,0]]],"expected":[0,1]}`, 1)
	if broken == string(data) {
		t.Fatal("the chain case is not in the example")
	}
	if err := os.WriteFile(cases, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "task", "check", bad)
	want := "QUARANTINED: the checker does not accept the expected outputs: the checker failed on an expected output: judge: checker failed: module checker.wasm sha256 "
	if code != ExitQuarantined || !strings.Contains(stderr, want) || !strings.Contains(stderr, "case chain: exited with status 3") {
		t.Errorf("exit %d, want %d with %q\n%s", code, ExitQuarantined, want, stderr)
	}
	for _, w := range []string{"task toposort (function, strict tier): NOT FIT: QUARANTINED", "checker-expected  PASS  ERROR  NO  -"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	if strings.Contains(stderr, "not reachable") {
		t.Errorf("the daemon was asked:\n%s", stderr)
	}

	// --json says the same, with no verdict for the host checks.
	code, stdout, _ = run(t, "task", "check", "--json", bad)
	var doc struct {
		Fit    bool
		Reason string
		Checks []map[string]any
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != ExitQuarantined || doc.Fit || len(doc.Checks) != 2 {
		t.Fatalf("exit %d %v\n%s", code, err, stdout)
	}
	if _, has := doc.Checks[0]["verdict"]; has || doc.Checks[0]["name"] != checkerExpected || doc.Checks[1]["got"] != "ERROR" {
		t.Errorf("checks %v", doc.Checks)
	}

	// The example's own checker is fit: the check goes on to the daemon.
	if code, _, stderr := run(t, "task", "check", src); code != ExitError || !strings.Contains(stderr, "not reachable") {
		t.Errorf("exit %d, want %d\n%s", code, ExitError, stderr)
	}
}
