package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

func init() {
	register(command{name: "task", summary: "write a new task (task new), import a SWE-bench instance (task import-swebench) or check that a task is fit to grade (task check)", do: runTask})
}

func runTask(ctx context.Context, args []string, stdio IO) error {
	if isHelp(args) {
		fmt.Fprintln(stdio.Stderr, "usage: strictgrade task new --kind function|command|data|compat DIR\n       strictgrade task import-swebench --instance FILE.json --repo PATH --out DIR [--key FILE] [--json]\n       strictgrade task check DIR [--reference PATH] [--noop=false] [--key FILE] [--out FILE] [--json]")
		fmt.Fprintln(stdio.Stderr, "\nstrictgrade task new -h, strictgrade task import-swebench -h and strictgrade task check -h describe them.\n\n"+exitCodesHelp)
		return nil
	}
	switch firstArg(args) {
	case "check":
		return within("task check", runTaskCheck(ctx, args[1:], stdio))
	case "new":
		return within("task new", runTaskNew(ctx, args[1:], stdio))
	case "import-swebench":
		return within("task import-swebench", runTaskImport(ctx, args[1:], stdio))
	}
	return usagef("the subcommands are new, import-swebench and check")
}

// taskCheckArgs is task check's command line.
type taskCheckArgs struct {
	dir, reference, key, out string
	noop, json               bool
	backendArgs
}

const taskCheckAbout = `Checks that a task is fit to grade, in either tier.

A strict task: grades the reference solution (--reference PATH, a directory or a tar file; by default
DIR/reference/ or DIR/reference.tar) and requires PASS, then grades an empty submission (an empty
workspace) and requires FAIL (--noop=false skips that; it fails at the firewall, as every task declares an
artifact, so it guards the grading path rather than the cases). A compat task: runs the baseline (the hidden tests fail at the base commit for the right reason,
the existing suite passes; the baseline is the compat tier's no-op check) and, when DIR/reference.diff
exists or --reference names a diff, grades that diff and requires PASS.

A strict task whose cases are decided by a checker (compare kind "checker") has its checker run first,
on the host, with the judge's own code and the task's limits: on every expected output (checker-expected:
each must be accepted) and on wrong outputs made from them (checker-wrong: no output, the expected output
with garbage added, a kilobyte of garbage; each must be answered, and at least one rejected in every case),
and on outputs of the largest size a candidate can give it (checker-large: the expected output repeated, a
long JSON array of numbers, random bytes, each as large as the task's output_bytes or what the checker
reads; each must be answered within the checker's fuel, and the most fuel each shape used is printed).
A checker that fails any of them is quarantined before any container starts.

Prints a table of the checks (--json: one object with each check's verdict). With --out FILE the first
graded check's signed verdict is written to FILE and each other's to FILE.<check> (FILE.noop, FILE.reference).
A compat task without a reference diff prints and writes its baseline verdict alone, as before. A compat
baseline (FAIL or QUARANTINED) is recorded by task digest and runtime image in $STRICTGRADE_CACHE_DIR/baselines
(default: the user's cache directory's strictgrade/baselines), where grade and run find it, so that their
verdicts record the baseline and whether a patch flipped it.

Exit 0 when the task is fit, 4 when it is not (QUARANTINED, with the reason), 3 when a check's verdict is
ERROR, 2 for a malformed task or a strict task without a reference solution.`

func parseTaskCheck(args []string, stdio IO) (*taskCheckArgs, error) {
	a := &taskCheckArgs{}
	fs := flagSet(stdio.Stderr, "task check", "DIR [--reference PATH] [--noop=false] [--key FILE] [--out FILE] [--json]", taskCheckAbout)
	fs.StringVar(&a.reference, "reference", "", "the reference solution: a directory or tar file (strict tier), a unified diff file (compat tier); default DIR/reference, DIR/reference.tar, DIR/reference.diff")
	fs.BoolVar(&a.noop, "noop", true, "also grade an empty submission and require FAIL (strict tier)")
	fs.StringVar(&a.key, "key", "", keyHelp)
	fs.StringVar(&a.out, "out", "", "write the first check's signed verdict to `FILE`, the others' to FILE.<check> (checked before the run)")
	fs.BoolVar(&a.json, "json", false, "print the result as JSON")
	a.backendArgs.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		return nil, usagef("takes one task directory")
	}
	a.dir = pos[0]
	if a.reference != "" {
		if _, err := os.Stat(a.reference); err != nil {
			return nil, usagef("--reference: %v", err)
		}
	}
	return a, checkOut(a.out)
}

func runTaskCheck(ctx context.Context, args []string, stdio IO) error {
	a, err := parseTaskCheck(args, stdio)
	if err != nil {
		return err
	}
	loaded, err := controller.LoadTask(ctx, a.dir)
	if err != nil {
		return badInput(err)
	}
	switch t := loaded.(type) {
	case *compat.Task:
		ref, err := compatReference(a)
		if err != nil {
			return err
		}
		if ref == "" {
			return checkCompatBaseline(ctx, stdio, a, t)
		}
		diff, err := readDiff(ref)
		if err != nil {
			return badInput(err)
		}
		return runChecks(ctx, stdio, a, t, nil, func(ctrl *controller.Controller) ([]check, error) {
			return compatChecks(ctx, stdio, ctrl, t, diff)
		})
	case *task.Task:
		ref, err := strictReference(a)
		if err != nil {
			return err
		}
		// The checkers first, on the host: a task whose checker is unfit
		// is quarantined before any container starts.
		pre, err := checkerChecks(t)
		if err != nil {
			return err
		}
		if decision := decideChecks(pre); decision != nil {
			if err := reportChecks(stdio, t, pre, decision, nil, false, a); err != nil {
				return err
			}
			return decision
		}
		return runChecks(ctx, stdio, a, t, pre, func(ctrl *controller.Controller) ([]check, error) {
			sub, closeSub, err := submission(t, ref)
			if err != nil {
				return nil, badInput(err)
			}
			res, err := ctrl.Grade(ctx, t, sub)
			closeSub()
			if res == nil {
				return nil, err
			}
			checks := []check{newCheck("reference", schema.OutcomePass, res)}
			if !a.noop || res.Verdict.Outcome == schema.OutcomeError {
				return checks, nil
			}
			empty, err := os.MkdirTemp("", "strictgrade-noop-*")
			if err != nil {
				return checks, err
			}
			defer os.RemoveAll(empty)
			res, err = ctrl.Grade(ctx, t, controller.Submission{Dir: empty})
			if res == nil {
				return checks, err
			}
			return append(checks, newCheck("noop", schema.OutcomeFail, res)), nil
		})
	}
	return usagef("%s: a task of type %T", a.dir, loaded)
}

// strictReference returns the reference solution of a strict task: the
// --reference path, else DIR/reference/, else DIR/reference.tar.
func strictReference(a *taskCheckArgs) (string, error) {
	if a.reference != "" {
		return a.reference, nil
	}
	for _, name := range []string{referenceDir, referenceTar} {
		p := filepath.Join(a.dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", badInput(err)
		}
	}
	return "", usagef("%s has no reference solution: put one in %s/ (the artifacts, as a submission holds them) or %s, or pass --reference PATH (a directory or a tar file)",
		a.dir, filepath.Join(a.dir, referenceDir), filepath.Join(a.dir, referenceTar))
}

// compatReference returns a compat task's reference diff: the --reference
// path, else DIR/reference.diff, else "" (none: the baseline alone).
func compatReference(a *taskCheckArgs) (string, error) {
	if a.reference != "" {
		return a.reference, nil
	}
	p := filepath.Join(a.dir, referenceDiff)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", badInput(err)
	}
	return "", nil
}

// check is one check of task check: the outcome it wants and the one it
// got, with the verdict of a graded check. A check made on the host (the
// checker checks) has no verdict.
type check struct {
	Name    string          `json:"name"`
	Want    schema.Outcome  `json:"want"`
	Got     schema.Outcome  `json:"got"`
	Reason  string          `json:"reason,omitempty"`
	Verdict *schema.Verdict `json:"verdict,omitempty"`
	res     *controller.Result
}

// Names of the checker checks.
const (
	checkerExpected = "checker-expected"
	checkerWrong    = "checker-wrong"
	checkerLarge    = "checker-large"
)

// checkerChecks runs a strict task's checkers on the host
// (task.CheckCheckers) and returns their three checks, or none when no
// case is decided by a checker: checker-expected wants PASS (every
// expected output accepted), checker-wrong wants FAIL (wrong outputs
// answered, at least one rejected per case), checker-large wants PASS
// (the largest outputs answered within the checker's fuel; its reason
// states the fuel each shape used; absent when an earlier check stopped
// the probes). A checker that failed is got ERROR, which the decision
// counts against the task, not the run.
func checkerChecks(t *task.Task) ([]check, error) {
	f, err := t.CheckCheckers()
	if err != nil {
		return nil, badInput(err)
	}
	if f.Cases == 0 {
		return nil, nil
	}
	got := func(finding string, ok schema.Outcome) schema.Outcome {
		switch {
		case finding == "":
			return ok
		case strings.HasPrefix(finding, "the checker failed"):
			return schema.OutcomeError
		case ok == schema.OutcomePass:
			return schema.OutcomeFail
		}
		return schema.OutcomePass
	}
	var figures []string
	for _, p := range f.Probes {
		figures = append(figures, fmt.Sprintf("%s, %d bytes: most fuel %d of %d (case %s)", p.Shape, p.Bytes, p.Fuel, p.Budget, p.Case))
	}
	large := check{Name: checkerLarge, Want: schema.OutcomePass, Got: got(f.Large, schema.OutcomePass), Reason: f.Large}
	if large.Reason == "" {
		large.Reason = "every largest output answered within the checker's fuel: " + strings.Join(figures, "; ")
	} else if len(figures) > 0 {
		large.Reason += " (" + strings.Join(figures, "; ") + ")"
	}
	summary := fmt.Sprintf("%d of %d checker cases have an expected output; %d checker runs", f.Expected, f.Cases, f.Runs)
	expected := check{Name: checkerExpected, Want: schema.OutcomePass, Got: got(f.Accept, schema.OutcomePass), Reason: f.Accept}
	wrong := check{Name: checkerWrong, Want: schema.OutcomeFail, Got: got(f.Reject, schema.OutcomeFail), Reason: f.Reject}
	if expected.Reason == "" {
		expected.Reason = summary
	}
	if wrong.Reason == "" {
		wrong.Reason = "every case rejected a wrong output, and the checker answered them all"
	}
	if len(f.Probes) == 0 {
		return []check{expected, wrong}, nil // the large outputs were not tried
	}
	return []check{expected, wrong, large}, nil
}

func newCheck(name string, want schema.Outcome, res *controller.Result) check {
	return check{Name: name, Want: want, Got: res.Verdict.Outcome, Reason: verdictReason(res.Verdict), Verdict: res.Verdict, res: res}
}

// verdictReason is a verdict's reason, or its first case that did not
// pass when it has none.
func verdictReason(v *schema.Verdict) string {
	if v.Reason != "" {
		return v.Reason
	}
	for _, c := range v.Cases {
		if c.Outcome != schema.OutcomePass {
			r := fmt.Sprintf("case %s: %s", c.ID, c.Outcome)
			if c.Reason != "" {
				r += ": " + c.Reason
			}
			return r
		}
	}
	return ""
}

// decideChecks is task check's decision table: nil when every check got
// what it wants; an ERROR outcome (exit 3) when a graded check's verdict
// is ERROR or a baseline PASSed (not a fitness answer); a checker that
// failed on the host is the task's defect, QUARANTINED; otherwise QUARANTINED (exit
// 4) with the first unmet check's reason. Checks that were not run (the
// slice is short) are not held against the task.
func decideChecks(checks []check) error {
	for _, c := range checks {
		if c.Got == schema.OutcomeError && c.Name != checkerExpected && c.Name != checkerWrong && c.Name != checkerLarge {
			return outcome(schema.OutcomeError, "the %s verdict is ERROR: %s", c.Name, c.Reason)
		}
	}
	for _, c := range checks {
		if c.Got == c.Want {
			continue
		}
		switch {
		case c.Name == "baseline" && c.Got == schema.OutcomeQuarantined:
			return outcome(schema.OutcomeQuarantined, "QUARANTINED: %s", c.Reason)
		case c.Name == "baseline":
			return outcome(schema.OutcomeError, "the baseline verdict is %s: %s", c.Got, c.Reason)
		case c.Name == "reference":
			return outcome(schema.OutcomeQuarantined, "QUARANTINED: the reference solution did not pass (%s): %s", c.Got, c.Reason)
		case c.Name == checkerExpected:
			return outcome(schema.OutcomeQuarantined, "QUARANTINED: the checker does not accept the expected outputs: %s", c.Reason)
		case c.Name == checkerWrong:
			return outcome(schema.OutcomeQuarantined, "QUARANTINED: the checker does not reject wrong outputs: %s", c.Reason)
		case c.Name == checkerLarge:
			return outcome(schema.OutcomeQuarantined, "QUARANTINED: the checker does not answer the largest outputs within its fuel: %s", c.Reason)
		case c.Name == "noop" && c.Got == schema.OutcomePass:
			return outcome(schema.OutcomeQuarantined, "QUARANTINED: an empty submission passed: the cases cannot tell work from none")
		default:
			return outcome(schema.OutcomeQuarantined, "QUARANTINED: the %s check wants %s, got %s: %s", c.Name, c.Want, c.Got, c.Reason)
		}
	}
	return nil
}

// runChecks makes a controller, runs the checks after those already made
// (pre), reports them all and decides.
func runChecks(ctx context.Context, stdio IO, a *taskCheckArgs, t controller.Task, pre []check, run func(*controller.Controller) ([]check, error)) error {
	signer, ephemeral, err := loadSigner(a.key)
	if err != nil {
		return err
	}
	ctrl, closeCtrl, err := a.open(ctx, stdio, controller.Config{Signer: signer, Logger: stdio.Log}, true)
	if err != nil {
		return err
	}
	defer closeCtrl()
	graded, runErr := run(ctrl)
	checks := append(pre, graded...)
	decision := decideChecks(checks)
	if len(graded) > 0 {
		if err := reportChecks(stdio, t, checks, decision, signer, ephemeral, a); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if decision == nil {
		fmt.Fprintln(stdio.Stderr, "task check: the task is fit")
	}
	return decision
}

// reportChecks prints the checks' table (or JSON) and writes the
// verdicts of the graded ones: the first to --out, the others' next to it.
func reportChecks(stdio IO, t controller.Task, checks []check, decision error, signer *attest.Signer, ephemeral bool, a *taskCheckArgs) error {
	if a.out != "" {
		first := true
		for _, c := range checks {
			if c.res == nil {
				continue
			}
			out := a.out
			if !first {
				out += "." + c.Name
			}
			first = false
			if err := writeOutputs(out, c.res, signer, ephemeral, stdio.Stderr); err != nil {
				return err
			}
		}
	}
	id, kind := taskLabel(t, checks)
	fit, reason := decision == nil, ""
	if decision != nil {
		reason = decision.Error()
	}
	if a.json {
		enc := json.NewEncoder(stdio.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Task   string      `json:"task"`
			Tier   schema.Tier `json:"tier"`
			Fit    bool        `json:"fit"`
			Reason string      `json:"reason,omitempty"`
			Checks []check     `json:"checks"`
		}{id, t.Tier(), fit, reason, checks})
	}
	state := "fit"
	if !fit {
		state = "NOT FIT: " + reason
	}
	fmt.Fprintf(stdio.Stdout, "task %s (%s, %s tier): %s\n", id, kind, t.Tier(), state)
	tw := tabwriter.NewWriter(stdio.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tWANT\tGOT\tOK\tRUN\tREASON")
	for _, c := range checks {
		ok := "yes"
		if c.Got != c.Want {
			ok = "NO"
		}
		runID := "-"
		if c.Verdict != nil {
			runID = c.Verdict.RunID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Want, c.Got, ok, runID, c.Reason)
	}
	tw.Flush()
	for _, c := range checks {
		if c.Got != c.Want && c.Verdict != nil {
			fmt.Fprintf(stdio.Stdout, "\n%s:\n", c.Name)
			printVerdict(stdio.Stdout, c.Verdict)
		}
	}
	return nil
}

// taskLabel is the task id and kind a report shows: those of the first
// verdict, or of the strict task's spec when no check was graded.
func taskLabel(t controller.Task, checks []check) (string, schema.TaskKind) {
	for _, c := range checks {
		if c.Verdict != nil {
			return c.Verdict.Task.ID, c.Verdict.Task.Kind
		}
	}
	if st, ok := t.(*task.Task); ok {
		return st.Spec.ID, st.Spec.Kind
	}
	return "", ""
}

// checkCompatBaseline is task check of a compat task without a reference
// diff: the baseline alone, reported as it always was.
func checkCompatBaseline(ctx context.Context, stdio IO, a *taskCheckArgs, t *compat.Task) error {
	signer, ephemeral, err := loadSigner(a.key)
	if err != nil {
		return err
	}
	ctrl, closeCtrl, err := a.open(ctx, stdio, controller.Config{Signer: signer, Logger: stdio.Log}, true)
	if err != nil {
		return err
	}
	defer closeCtrl()
	res, checkErr := ctrl.CheckCompat(ctx, t)
	if res == nil {
		return checkErr
	}
	noteBaseline(stdio, t, res.Verdict, ctrl.RuntimeImage())
	if err := report(stdio, res, signer, ephemeral, a.out, a.json); err != nil {
		return err
	}
	if checkErr != nil {
		return checkErr
	}
	if err := decideChecks([]check{newCheck("baseline", schema.OutcomeFail, res)}); err != nil {
		return err
	}
	// A fit task fails its hidden tests at the base: that is success here.
	fmt.Fprintln(stdio.Stderr, "task check: the task is fit (hidden tests fail at the base for the right reason, the existing suite passes)")
	return nil
}

// noteBaseline records a compat task's baseline for grade and run (see
// baseline.go) and says where, or why not, on stderr; a cache that cannot
// be written does not make the task unfit.
func noteBaseline(stdio IO, t *compat.Task, v *schema.Verdict, runtimeImage string) {
	p, err := recordBaseline(t, v, runtimeImage)
	switch {
	case err != nil:
		fmt.Fprintf(stdio.Stderr, "task check: the baseline was not recorded: %v\n", err)
	case p != "":
		fmt.Fprintf(stdio.Stderr, "task check: baseline %s recorded in %s (grade and run use it for this task digest and runtime image)\n", v.Outcome, p)
	}
}
