package cli

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strictgrade/strictgrade/attest"
	sgbatch "github.com/strictgrade/strictgrade/batch"
)

func init() {
	register(command{name: "report", summary: "write a run directory's results.md and report.html again", do: runReport})
}

// runReport regenerates the report of a run directory (strictgrade run
// writes it at the end of every run).
func runReport(ctx context.Context, args []string, stdio IO) error {
	fs := flagSet(stdio.Stderr, "report", "[--key PUB] DIR", `Writes DIR/results.md and DIR/report.html from the run directory DIR (strictgrade run --out DIR):
pass rates per task, outcome and reason-code counts, the grader errors apart from the failures, the
distribution of grade times, and the per-test results of compat items. Each item's verdict is
verified first and used only if it verifies; report.html is one self-contained page (no network,
no script). Prints the two paths on stdout.`)
	key := fs.String("key", "", "public key `PUB` to verify the verdicts with (default: DIR/key.pub, which shows the files agree, not who signed them)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("takes one run directory")
	}
	dir := fs.Arg(0)
	var pub crypto.PublicKey
	if *key != "" {
		var err error
		if pub, err = attest.LoadPublicKeyFile(*key); err != nil {
			return badInput(fmt.Errorf("--key: %w", err))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, sgbatch.ResultsFile)); err != nil {
		return badInput(fmt.Errorf("%s is not a run directory (strictgrade run --out DIR): %w", dir, err))
	}
	if err := sgbatch.WriteReport(dir, pub); err != nil {
		if errors.Is(err, sgbatch.ErrOldRun) {
			return badInput(fmt.Errorf("%w: an older strictgrade reports on it", err))
		}
		return err
	}
	fmt.Fprintln(stdio.Stdout, filepath.Join(dir, sgbatch.ReportMarkdown))
	fmt.Fprintln(stdio.Stdout, filepath.Join(dir, sgbatch.ReportHTML))
	return nil
}
