// Command compat-textkit runs the textkit task through the compat tier: it
// checks the task's baseline, grades the three diffs under diffs/, signs
// every verdict and verifies the signature. Run it with:
//
//	go run ./examples/compat-textkit
//
// It needs a Docker daemon and the Python image (built on first use, which
// needs root and debootstrap; see strictgrade images).
package main

//go:generate sh gen-bundle.sh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/examples/internal/demo"
	"github.com/strictgrade/strictgrade/schema"
)

// diffs are graded in this order, with the outcome each should get.
var diffs = []struct {
	name string
	want schema.Outcome
}{
	{"honest", schema.OutcomePass},
	{"wrong", schema.OutcomeFail},
	{"does-not-apply", schema.OutcomeFail},
}

func main() { demo.Exec(run) }

func run(ctx context.Context, dir string, ctrl *controller.Controller, signer *attest.Signer) error {
	t, err := compat.Load(ctx, filepath.Join(dir, "task"))
	if err != nil {
		return err
	}
	fmt.Printf("task %s (digest %.12s…)\n\n", t.Spec.ID, t.Digest)
	base, err := ctrl.CheckCompat(ctx, t)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if err := report("baseline", base, t, signer); err != nil {
		return err
	}
	if base.Verdict.Outcome != schema.OutcomeFail {
		return errors.New("the baseline check quarantined the task: " + base.Verdict.Reason)
	}
	for _, d := range diffs {
		diff, err := os.ReadFile(filepath.Join(dir, "diffs", d.name+".diff"))
		if err != nil {
			return err
		}
		res, err := ctrl.Grade(ctx, t, controller.Submission{Diff: diff, Baseline: base.Verdict.Outcome})
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		if err := report(d.name, res, t, signer); err != nil {
			return err
		}
		if res.Verdict.Outcome != d.want {
			return fmt.Errorf("%s: got %s, want %s", d.name, res.Verdict.Outcome, d.want)
		}
	}
	return nil
}

// report prints a signed verdict and verifies its signature.
func report(name string, res *controller.Result, t *compat.Task, signer *attest.Signer) error {
	v := res.Verdict
	fmt.Printf("%-15s %-11s %s  (mode %s, flipped %v, tests_hash %.12s…, %d ms)\n", name, v.Outcome, v.ReasonCode,
		v.Compat.Mode, v.Compat.Flipped, v.TestsHash, v.Timings.TotalMS)
	if v.Reason != "" {
		fmt.Printf("%15s reason: %s\n", "", v.Reason)
	}
	shown, more := 0, 0
	for _, c := range v.Cases {
		switch {
		case c.Outcome == schema.OutcomePass:
		case shown == 4:
			more++
		default:
			shown++
			fmt.Printf("%15s %s %s %s by %s %v %s\n", "", c.Suite, c.ID, c.Outcome, c.DecidedBy, c.Flags, c.Reason)
		}
	}
	if more > 0 {
		fmt.Printf("%15s … and %d more tests that did not pass\n", "", more)
	}
	if err := demo.Verify(res, signer, t.Digest); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Println()
	return nil
}
