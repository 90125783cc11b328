// Package demo is the scaffolding of the examples' main packages: it finds
// the example's directory, makes a controller with an ephemeral signing
// key, and verifies what the controller signed.
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
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// Main grades every directory under <example>/solutions against the
// strict-tier task in <example>/task, where <example> is the directory of
// the calling file, verifies each signed verdict and exits non-zero if any
// step failed.
func Main() { exec(gradeSolutions) }

// Exec runs f with the directory of the calling file, a controller and its
// signer, on a context cancelled by an interrupt; it exits non-zero when f
// fails.
func Exec(f func(ctx context.Context, dir string, ctrl *controller.Controller, signer *attest.Signer) error) {
	exec(f)
}

func exec(f func(ctx context.Context, dir string, ctrl *controller.Controller, signer *attest.Signer) error) {
	_, file, _, ok := runtime.Caller(2)
	if !ok {
		fmt.Fprintln(os.Stderr, "demo: cannot locate the example")
		os.Exit(3)
	}
	dir := filepath.Dir(file)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := withController(ctx, dir, f); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(dir), err)
		os.Exit(1)
	}
}

func withController(ctx context.Context, dir string, f func(context.Context, string, *controller.Controller, *attest.Signer) error) error {
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		return err
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		return err
	}
	if err := controller.BuildImages(ctx, nil, os.Stderr); err != nil {
		return err
	}
	ctrl, err := controller.New(ctx, controller.Config{
		Signer: signer,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	defer ctrl.Close()
	return f(ctx, dir, ctrl, signer)
}

// Verify checks a signed verdict against everything the caller knows and
// prints one line.
func Verify(res *controller.Result, signer *attest.Signer, taskDigest string) error {
	v := res.Verdict
	ver, err := attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
		SubmissionSHA256: v.Submission.SHA256, TaskDigest: taskDigest, Tier: v.Tier, Nonce: v.Nonce,
	})
	if err != nil {
		return fmt.Errorf("signed verdict does not verify: %w", err)
	}
	fmt.Printf("         verified: %s signature over %d statement bytes\n", ver.Format, len(ver.Payload))
	return nil
}

func gradeSolutions(ctx context.Context, dir string, ctrl *controller.Controller, signer *attest.Signer) error {
	t, err := task.Load(ctx, filepath.Join(dir, "task"))
	if err != nil {
		return err
	}
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
			if c.Outcome != schema.OutcomePass && c.Reason != "" {
				fmt.Printf("         %-14s %s by %s: %s\n", c.ID, c.Outcome, c.DecidedBy, c.Reason)
			}
		}
		if err := Verify(res, signer, t.Digest); err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
	}
	return nil
}
