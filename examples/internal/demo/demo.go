// Package demo grades an example's solutions with the strict tier and
// prints the signed verdicts; the examples' main packages call Main.
package demo

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/task"
)

// Main grades every directory under <example>/solutions against
// <example>/task, where <example> is the directory of the calling file,
// verifies each signed verdict and exits non-zero if any step failed.
func Main() {
	_, file, _, ok := runtime.Caller(1)
	if !ok {
		fmt.Fprintln(os.Stderr, "demo: cannot locate the example")
		os.Exit(3)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, filepath.Dir(file)); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string) error {
	t, err := task.Load(ctx, filepath.Join(dir, "task"))
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
	ctrl, err := controller.New(ctx, controller.Config{
		Signer:        signer,
		BuildProgress: os.Stderr,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	defer ctrl.Close()
	entries, err := os.ReadDir(filepath.Join(dir, "solutions"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		res, err := ctrl.Grade(ctx, t, controller.Submission{Dir: filepath.Join(dir, "solutions", e.Name())})
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
		v := res.Verdict
		fmt.Printf("%-8s %s  (%d cases, submission %.12s…)\n", e.Name(), v.Outcome, len(v.Cases), v.Submission.SHA256)
		for _, c := range v.Cases {
			if c.Reason != "" {
				fmt.Printf("         %-14s %s by %s: %s\n", c.ID, c.Outcome, c.DecidedBy, c.Reason)
			}
		}
		ver, err := attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
			SubmissionSHA256: v.Submission.SHA256, TaskDigest: t.Digest, Tier: v.Tier, Nonce: v.Nonce,
		})
		if err != nil {
			return fmt.Errorf("%s: signed verdict does not verify: %w", e.Name(), err)
		}
		fmt.Printf("         verified: %s signature over %d statement bytes\n", ver.Format, len(ver.Payload))
	}
	return nil
}
