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
	"os/signal"
	"path/filepath"
	"runtime"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
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

func main() {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		fmt.Fprintln(os.Stderr, "compat-textkit: cannot locate the example")
		os.Exit(3)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, filepath.Dir(file)); err != nil {
		fmt.Fprintln(os.Stderr, "compat-textkit:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string) error {
	t, err := compat.Load(ctx, filepath.Join(dir, "task"))
	if err != nil {
		return err
	}
	eng, err := engine.NewDocker(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer eng.Close()
	image, err := images.Ensure(ctx, eng, images.Python{}, os.Stderr)
	if err != nil {
		return err
	}
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		return err
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		return err
	}
	rt := "docker/" + eng.Info().Runtime
	fmt.Printf("task %s (digest %.12s…), oracle image %.19s…\n\n", t.Spec.ID, t.Digest, image)

	base, err := compat.Check(ctx, eng, compat.Request{Task: t, Image: image, Runtime: rt})
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if err := report(ctx, "baseline", base, t, signer); err != nil {
		return err
	}
	if !base.Fit() {
		return errors.New("the baseline check quarantined the task")
	}
	for _, d := range diffs {
		diff, err := os.ReadFile(filepath.Join(dir, "diffs", d.name+".diff"))
		if err != nil {
			return err
		}
		out, err := compat.Grade(ctx, eng, compat.Request{Task: t, Image: image, Diff: diff, Runtime: rt,
			BaselineOutcome: base.Verdict.Outcome})
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		if err := report(ctx, d.name, out, t, signer); err != nil {
			return err
		}
		if out.Verdict.Outcome != d.want {
			return fmt.Errorf("%s: got %s, want %s", d.name, out.Verdict.Outcome, d.want)
		}
	}
	return nil
}

// report prints a verdict, signs it and verifies the signature.
func report(ctx context.Context, name string, out *compat.Outcome, t *compat.Task, signer *attest.Signer) error {
	v := out.Verdict
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
	signed, err := signer.Sign(ctx, v, attest.SignOptions{})
	if err != nil {
		return fmt.Errorf("%s: sign: %w", name, err)
	}
	ver, err := attest.Verify(signed.Bundle, signer.PublicKey(), attest.Expect{
		SubmissionSHA256: v.Submission.SHA256, TaskDigest: t.Digest, Tier: schema.TierCompat, Nonce: v.Nonce,
	})
	if err != nil {
		return fmt.Errorf("%s: signed verdict does not verify: %w", name, err)
	}
	fmt.Printf("%15s verified: %s signature over %d statement bytes\n\n", "", ver.Format, len(ver.Payload))
	return nil
}
