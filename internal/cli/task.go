package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

func init() {
	register(command{name: "task", summary: "check a task: the compat tier's baseline run", do: runTask})
}

func runTask(ctx context.Context, args []string, stdio IO) error {
	if isHelp(args) {
		taskCheckFlags(stdio, new(string), new(string), new(bool)).Usage()
		return nil
	}
	if len(args) == 0 || args[0] != "check" {
		return usagef("the only subcommand is check")
	}
	return within("task check", runTaskCheck(ctx, args[1:], stdio))
}

func taskCheckFlags(stdio IO, key, out *string, asJSON *bool) *flag.FlagSet {
	fs := flagSet(stdio.Stderr, "task check", "[flags] DIR",
		"Runs a compat-tier task's baseline: a fit task's hidden tests fail at the base commit for the right reason\nand its existing suite passes. Exit 0 when the task is fit, 4 when it is QUARANTINED.")
	fs.StringVar(key, "key", "", keyHelp)
	fs.StringVar(out, "out", "", "write the signed baseline verdict to `FILE` (checked before the run)")
	fs.BoolVar(asJSON, "json", false, "print the verdict as JSON")
	return fs
}

func runTaskCheck(ctx context.Context, args []string, stdio IO) error {
	var key, out string
	var asJSON bool
	fs := taskCheckFlags(stdio, &key, &out, &asJSON)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("takes one task directory")
	}
	dir := fs.Arg(0)
	if err := checkOut(out); err != nil {
		return err
	}
	loaded, err := controller.LoadTask(ctx, dir)
	if err != nil {
		return badInput(err)
	}
	t, ok := loaded.(*compat.Task)
	if !ok {
		return usagef("%s is not a compat-tier task (strict-tier tasks are checked when loaded)", dir)
	}
	signer, ephemeral, err := loadSigner(key)
	if err != nil {
		return err
	}
	ctrl, err := newController(ctx, stdio, controller.Config{Signer: signer, Logger: stdio.Log})
	if err != nil {
		return err
	}
	defer ctrl.Close()
	res, checkErr := ctrl.CheckCompat(ctx, t)
	if res == nil {
		return checkErr
	}
	if err := report(stdio, res, signer, ephemeral, out, asJSON); err != nil {
		return err
	}
	if checkErr != nil {
		return checkErr
	}
	// A fit task fails its hidden tests at the base: that is success here.
	switch v := res.Verdict; v.Outcome {
	case schema.OutcomeFail:
		fmt.Fprintln(stdio.Stderr, "task check: the task is fit (hidden tests fail at the base for the right reason, the existing suite passes)")
		return nil
	case schema.OutcomeQuarantined:
		return outcome(v.Outcome, "QUARANTINED: %s", v.Reason)
	default:
		// A baseline that passes or errs is not a fitness answer.
		return outcome(schema.OutcomeError, "the baseline verdict is %s: %s", v.Outcome, v.Reason)
	}
}
