package cli

import (
	"context"
	"fmt"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

func init() {
	register(command{name: "task", summary: "check a task: the compat tier's baseline run", run: runTask})
}

func runTask(ctx context.Context, args []string, stdio IO) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stdio.Stderr, "usage: strictgrade task check [--key FILE] [--out FILE] [--json] DIR")
		return ExitUsage
	}
	fs := newFlags("task check", stdio.Stderr)
	keyPath := fs.String("key", "", "private key PEM for signing (default: an ephemeral key)")
	out := fs.String("out", "", "write the signed baseline verdict here")
	asJSON := fs.Bool("json", false, "print the verdict as JSON")
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stdio.Stderr, "usage: strictgrade task check [--key FILE] [--out FILE] [--json] DIR")
		return ExitUsage
	}
	dir := fs.Arg(0)
	if !isCompatTask(dir) {
		return fail(stdio, "task check", ExitUsage, fmt.Errorf("%s is not a compat-tier task (strict-tier tasks are checked when loaded)", dir))
	}
	t, err := compat.Load(ctx, dir)
	if err != nil {
		return fail(stdio, "task check", ExitUsage, err)
	}
	signer, ephemeral, err := loadSigner(*keyPath)
	if err != nil {
		return fail(stdio, "task check", ExitError, err)
	}
	ctrl, err := controller.New(ctx, controller.Config{Signer: signer, Logger: stdio.Log, BuildProgress: stdio.Stderr})
	if err != nil {
		return fail(stdio, "task check", ExitError, err)
	}
	defer ctrl.Close()
	res, checkErr := ctrl.CheckCompat(ctx, t)
	code := report(stdio, res, checkErr, signer, ephemeral, *out, *asJSON)
	if res == nil {
		return code
	}
	// A fit task fails its hidden tests at the base: that is success here.
	switch res.Verdict.Outcome {
	case schema.OutcomeFail:
		fmt.Fprintln(stdio.Stderr, "task check: the task is fit (hidden tests fail at the base for the right reason, the existing suite passes)")
		return ExitOK
	case schema.OutcomeQuarantined:
		fmt.Fprintf(stdio.Stderr, "task check: QUARANTINED: %s\n", res.Verdict.Reason)
	}
	return code
}
