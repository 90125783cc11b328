package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

Prints a table of the checks (--json: one object with each check's verdict). With --out FILE the first
check's signed verdict is written to FILE and each other's to FILE.<check> (FILE.noop, FILE.reference).
A compat task without a reference diff prints and writes its baseline verdict alone, as before.

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
		return runChecks(ctx, stdio, a, t, func(ctrl *controller.Controller) ([]check, error) {
			return compatChecks(ctx, ctrl, t, diff)
		})
	case *task.Task:
		ref, err := strictReference(a)
		if err != nil {
			return err
		}
		return runChecks(ctx, stdio, a, t, func(ctrl *controller.Controller) ([]check, error) {
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

// check is one graded check of task check: the outcome it wants and the
// verdict it got.
type check struct {
	Name    string          `json:"name"`
	Want    schema.Outcome  `json:"want"`
	Got     schema.Outcome  `json:"got"`
	Reason  string          `json:"reason,omitempty"`
	Verdict *schema.Verdict `json:"verdict"`
	res     *controller.Result
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
// what it wants; an ERROR outcome (exit 3) when a check's verdict is ERROR
// or a baseline PASSed (not a fitness answer); otherwise QUARANTINED (exit
// 4) with the first unmet check's reason. Checks that were not run (the
// slice is short) are not held against the task.
func decideChecks(checks []check) error {
	for _, c := range checks {
		if c.Got == schema.OutcomeError {
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
		case c.Name == "noop" && c.Got == schema.OutcomePass:
			return outcome(schema.OutcomeQuarantined, "QUARANTINED: an empty submission passed: the cases cannot tell work from none")
		default:
			return outcome(schema.OutcomeQuarantined, "QUARANTINED: the %s check wants %s, got %s: %s", c.Name, c.Want, c.Got, c.Reason)
		}
	}
	return nil
}

// runChecks makes a controller, runs the checks, reports them and decides.
func runChecks(ctx context.Context, stdio IO, a *taskCheckArgs, t controller.Task, run func(*controller.Controller) ([]check, error)) error {
	signer, ephemeral, err := loadSigner(a.key)
	if err != nil {
		return err
	}
	ctrl, err := newController(ctx, stdio, controller.Config{Signer: signer, Logger: stdio.Log, Runtime: a.runtime})
	if err != nil {
		return err
	}
	defer ctrl.Close()
	checks, runErr := run(ctrl)
	decision := decideChecks(checks)
	if len(checks) > 0 {
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

// reportChecks prints the checks' table (or JSON) and writes their
// verdicts.
func reportChecks(stdio IO, t controller.Task, checks []check, decision error, signer *attest.Signer, ephemeral bool, a *taskCheckArgs) error {
	if a.out != "" {
		for i, c := range checks {
			out := a.out
			if i > 0 {
				out += "." + c.Name
			}
			if err := writeOutputs(out, c.res, signer, ephemeral, stdio.Stderr); err != nil {
				return err
			}
		}
	}
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
		}{checks[0].Verdict.Task.ID, t.Tier(), fit, reason, checks})
	}
	v := checks[0].Verdict
	state := "fit"
	if !fit {
		state = "NOT FIT: " + reason
	}
	fmt.Fprintf(stdio.Stdout, "task %s (%s, %s tier): %s\n", v.Task.ID, v.Task.Kind, t.Tier(), state)
	tw := tabwriter.NewWriter(stdio.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tWANT\tGOT\tOK\tRUN\tREASON")
	for _, c := range checks {
		ok := "yes"
		if c.Got != c.Want {
			ok = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Want, c.Got, ok, c.Verdict.RunID, c.Reason)
	}
	tw.Flush()
	for _, c := range checks {
		if c.Got != c.Want {
			fmt.Fprintf(stdio.Stdout, "\n%s:\n", c.Name)
			printVerdict(stdio.Stdout, c.Verdict)
		}
	}
	return nil
}

// checkCompatBaseline is task check of a compat task without a reference
// diff: the baseline alone, reported as it always was.
func checkCompatBaseline(ctx context.Context, stdio IO, a *taskCheckArgs, t *compat.Task) error {
	signer, ephemeral, err := loadSigner(a.key)
	if err != nil {
		return err
	}
	ctrl, err := newController(ctx, stdio, controller.Config{Signer: signer, Logger: stdio.Log, Runtime: a.runtime})
	if err != nil {
		return err
	}
	defer ctrl.Close()
	res, checkErr := ctrl.CheckCompat(ctx, t)
	if res == nil {
		return checkErr
	}
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
