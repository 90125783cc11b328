package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/compat/swebench"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

const taskImportAbout = `Builds a compat task from one task instance in the SWE-bench format and checks it: the instance's
patch becomes the reference fix (reference.diff), the files its test_patch adds or changes become the hidden
files (with every file that holds a FAIL_TO_PASS test), FAIL_TO_PASS the hidden tests, PASS_TO_PASS the
existing suite, problem_statement the description. The repository comes from a local clone (--repo; no
network), which is read and never written; it must hold base_commit.

It serves pure-Python repositories whose tests are pytest node ids and run with the Python image's
interpreter and pytest alone (Debian bookworm's python3 and python3-pytest: no pip install, no compiled
extension, no network). It refuses, with the reason, an instance with a missing or malformed field, test
ids that are not pytest node ids or name a file or test that is not there, a test_patch or patch that does
not apply at base_commit, a test_patch that deletes a file or holds a binary patch or a link, and a patch
the diff gate would drop from an agent's diff (tests, test configuration, packaging, binary patches).

The task is then checked as task check does: the baseline (the existing suite passes at the base, the hidden
tests fail there for the right reason) and the reference fix, which must PASS. What only running shows — a
module the image lacks, a test id that collects nothing — makes the task QUARANTINED. The task is built in a
temporary directory and moved to --out (a new or empty directory) only when it is fit: a refused or
quarantined instance leaves nothing there.

Exit 0 when the task was imported and is fit, 4 when it is QUARANTINED, 2 when the instance or the command
line is refused, 3 when a check's verdict is ERROR or the import could not run.`

// taskImportArgs is task import-swebench's command line.
type taskImportArgs struct {
	instance, repo, out, key string
	json                     bool
	limits                   compat.Limits
	backendArgs
}

func parseTaskImport(args []string, stdio IO) (*taskImportArgs, error) {
	a := &taskImportArgs{}
	fs := flagSet(stdio.Stderr, "task import-swebench", "--instance FILE.json --repo PATH --out DIR [--key FILE] [--json] [--runtime NAME]", taskImportAbout)
	fs.StringVar(&a.instance, "instance", "", "the instance: one JSON object in the SWE-bench format (required)")
	fs.StringVar(&a.repo, "repo", "", "a local clone of the instance's repository that holds base_commit (required; read only)")
	fs.StringVar(&a.out, "out", "", "the task `DIR` to make: new or empty (required)")
	fs.StringVar(&a.key, "key", "", keyHelp)
	fs.BoolVar(&a.json, "json", false, "print the result as one JSON object")
	a.backendArgs.register(fs)
	fs.IntVar(&a.limits.WallSeconds, "wall-seconds", 0, fmt.Sprintf("the task's wall-clock limit per oracle container (default %d)", compat.DefaultLimits.WallSeconds))
	fs.Int64Var(&a.limits.MemoryMB, "memory-mb", 0, fmt.Sprintf("the task's memory per oracle container, MiB (default %d)", compat.DefaultLimits.MemoryMB))
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 0 || a.instance == "" || a.repo == "" || a.out == "" {
		return nil, usagef("--instance FILE, --repo PATH and --out DIR are required, and nothing else")
	}
	if err := swebench.CheckOut(a.out); err != nil {
		return nil, usagef("--out: %v: import makes a new task directory", err)
	}
	return a, nil
}

func runTaskImport(ctx context.Context, args []string, stdio IO) error {
	a, err := parseTaskImport(args, stdio)
	if err != nil {
		return err
	}
	data, err := readInstance(a.instance)
	if err != nil {
		return badInput(err)
	}
	in, err := swebench.ParseInstance(data)
	if err != nil {
		return badInput(err)
	}
	if len(in.Ignored) > 0 {
		fmt.Fprintf(stdio.Stderr, "task import-swebench: fields not used: %s\n", strings.Join(in.Ignored, ", "))
	}
	signer, ephemeral, err := loadSigner(a.key)
	if err != nil {
		return err
	}
	var checks []check
	var decision error
	checkArgs := &taskCheckArgs{}
	res, err := swebench.Import(ctx, in, swebench.Options{
		Repo: a.repo, Out: a.out, Limits: a.limits, Logger: stdio.Log,
		Check: func(ctx context.Context, t *compat.Task, reference []byte) error {
			ctrl, closeCtrl, err := a.open(ctx, stdio, controller.Config{Signer: signer, Logger: stdio.Log}, true)
			if err != nil {
				return err
			}
			defer closeCtrl()
			var runErr error
			checks, runErr = compatChecks(ctx, stdio, ctrl, t, reference)
			decision = decideChecks(checks)
			if len(checks) > 0 && !a.json {
				if err := reportChecks(stdio, t, checks, decision, signer, ephemeral, checkArgs); err != nil {
					return err
				}
			}
			if runErr != nil {
				return runErr
			}
			return decision
		},
	})
	if a.json && (res != nil || len(checks) > 0) {
		if err := importJSON(stdio.Stdout, res, checks, decision); err != nil {
			return err
		}
	}
	switch {
	case errors.Is(err, swebench.ErrRefused):
		return badInput(err)
	case errors.Is(err, swebench.ErrOutNotEmpty):
		return usagef("--out: %v", err)
	case err != nil:
		return fmt.Errorf("%w (nothing was written to %s)", err, a.out)
	}
	if !a.json {
		fmt.Fprintf(stdio.Stdout, "imported %s into %s: %d hidden tests in %d files, %d existing tests, base %s (base_commit %s's tree), digest %s\n",
			res.ID, res.Dir, res.Hidden, len(res.HiddenFiles), res.Existing, res.Base, res.BaseCommit, res.Digest)
	}
	fmt.Fprintln(stdio.Stderr, "task import-swebench: the task is fit")
	return nil
}

// compatChecks runs task check's checks of a compat task with a reference
// diff: the baseline, then the reference (unless the baseline is ERROR).
func compatChecks(ctx context.Context, stdio IO, ctrl *controller.Controller, t *compat.Task, reference []byte) ([]check, error) {
	base, err := ctrl.CheckCompat(ctx, t)
	if base == nil {
		return nil, err
	}
	checks := []check{newCheck("baseline", schema.OutcomeFail, base)}
	noteBaseline(stdio, t, base.Verdict, ctrl.RuntimeImage())
	if err != nil || base.Verdict.Outcome == schema.OutcomeError {
		return checks, err
	}
	res, err := ctrl.Grade(ctx, t, controller.Submission{Diff: reference, Baseline: base.Verdict.Outcome})
	if res == nil {
		return checks, err
	}
	return append(checks, newCheck("reference", schema.OutcomePass, res)), err
}

// readInstance reads the instance file, bounded.
func readInstance(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--instance: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--instance %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, swebench.MaxInstanceBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > swebench.MaxInstanceBytes {
		return nil, fmt.Errorf("--instance %s is larger than %d bytes", path, swebench.MaxInstanceBytes)
	}
	return data, nil
}

// importJSON prints the import's result as one JSON object.
func importJSON(w io.Writer, res *swebench.Result, checks []check, decision error) error {
	out := struct {
		Imported bool             `json:"imported"`
		Dir      string           `json:"dir,omitempty"`
		Fit      bool             `json:"fit"`
		Reason   string           `json:"reason,omitempty"`
		Result   *swebench.Result `json:"result,omitempty"`
		Checks   []check          `json:"checks"`
	}{Imported: res != nil, Fit: res != nil && decision == nil, Result: res, Checks: checks}
	if res != nil {
		out.Dir = res.Dir
	}
	if decision != nil {
		out.Reason = decision.Error()
	}
	if out.Checks == nil {
		out.Checks = []check{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
