// Command harness is what a harness author writes in a module of their own:
// it opens an agent box on a task's public view, runs a scripted agent that
// writes a solution, exports the declared artifacts, grades them and
// verifies the signed verdict. It imports only strictgrade's public
// packages; harness_test.go builds it as a separate module.
//
//	go run ./examples/harness [-task DIR] [-fake]
//
// By default it runs on the Docker daemon named by the environment (the
// controller builds its images when missing); -fake runs everything in
// process on sandboxtest.Fake, with no daemon.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"os/signal"

	"github.com/strictgrade/strictgrade/agentbox"
	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandbox/docker"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// solution is what the scripted agent writes for the sum task.
const solution = "def solve(numbers):\n    return sum(numbers)\n"

func main() {
	taskDir := flag.String("task", "examples/sum/task", "the task to attempt")
	fake := flag.Bool("fake", false, "run on the in-process fake backend instead of Docker")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *taskDir, *fake); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, taskDir string, fake bool) error {
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		return err
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		return err
	}
	cfg := controller.Config{Signer: signer}
	if fake {
		cfg.Backend, cfg.RuntimeImage, cfg.JudgeImage = fakeBackend(), sandboxtest.RuntimeImage, sandboxtest.JudgeImage
	} else {
		b, err := docker.New(ctx, docker.Config{})
		if err != nil {
			return err
		}
		defer b.Close()
		cfg.Backend = b
		// The explicit build step: New only resolves images.
		if err := controller.BuildImages(ctx, b, os.Stderr); err != nil {
			return err
		}
	}
	ctrl, err := controller.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer ctrl.Close()
	t, err := task.Load(ctx, taskDir)
	if err != nil {
		return err
	}

	archive, err := attempt(ctx, ctrl.Backend(), ctrl.RuntimeImage(), t.Public())
	if err != nil {
		return err
	}
	res, err := ctrl.Grade(ctx, t, controller.Submission{Archive: bytes.NewReader(archive)})
	if res == nil {
		return err
	}
	// A Result with an error is a signed ERROR verdict: a harness keeps
	// it (res.Signed.Bundle) with the attempt, and reports err.
	v := res.Verdict
	if _, verr := attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
		SubmissionSHA256: v.Submission.SHA256, TaskDigest: t.Digest, Tier: schema.TierStrict, Nonce: v.Nonce,
	}); verr != nil {
		return fmt.Errorf("the verdict does not verify: %w", verr)
	}
	fmt.Printf("%s on %s: %s, verified\n", t.Spec.ID, ctrl.Backend().Runtime(), v.Outcome)
	if err != nil {
		return err
	}
	if v.Outcome != schema.OutcomePass {
		return fmt.Errorf("the scripted agent's solution was graded %s: %s", v.Outcome, v.Reason)
	}
	return nil
}

// attempt is the scripted agent: it reads the instructions, writes a
// solution, looks at its work directory and exports the artifacts.
func attempt(ctx context.Context, b sandbox.Backend, image string, pub *task.Public) ([]byte, error) {
	box, err := agentbox.Open(ctx, b, pub, agentbox.Config{Image: image})
	if err != nil {
		return nil, err
	}
	defer box.Close(ctx)
	if _, err := box.ReadFile(ctx, "README.md"); err != nil {
		return nil, err
	}
	if err := box.WriteFile(ctx, "solution.py", []byte(solution), false); err != nil {
		return nil, err
	}
	ls, err := box.Exec(ctx, sandbox.ExecSpec{Cmd: []string{"ls"}})
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(ls.Stdout, []byte("solution.py")) {
		return nil, fmt.Errorf("the box lost the solution: %q", ls.Stdout)
	}
	return box.Export(ctx)
}

// fakeBackend renders the runtime (with the scripted solution) and the
// judge in process.
func fakeBackend() sandbox.Backend {
	f := sandboxtest.NewFake()
	f.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(map[string]sandboxtest.Python{solution: {Call: sum}}))
	f.Image(sandboxtest.JudgeImage, sandboxtest.Judge)
	return f
}

func sum(_ string, args []json.RawMessage) (any, error) {
	var nums []json.Number
	if len(args) != 1 || json.Unmarshal(args[0], &nums) != nil {
		return nil, errors.New("TypeError: solve() takes a list of integers")
	}
	total := new(big.Int)
	for _, n := range nums {
		v, ok := new(big.Int).SetString(string(n), 10)
		if !ok {
			return nil, errors.New("TypeError: not an integer")
		}
		total.Add(total, v)
	}
	return json.RawMessage(total.String()), nil
}
