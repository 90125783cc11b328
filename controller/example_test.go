package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// sumSolutions renders the two solutions of examples/sum for the fake
// Python runtime: the fake runs this Go code wherever a candidate's
// solution.py has the text of the file it stands for.
func sumSolutions() map[string]sandboxtest.Python {
	sum := func(abs bool) func(string, []json.RawMessage) (any, error) {
		return func(_ string, args []json.RawMessage) (any, error) {
			var nums []json.Number // Python's integers have no size
			if len(args) != 1 || json.Unmarshal(args[0], &nums) != nil {
				return nil, errors.New("TypeError: solve() takes a list of integers")
			}
			total := new(big.Int)
			for _, n := range nums {
				v, ok := new(big.Int).SetString(string(n), 10)
				if !ok {
					return nil, errors.New("TypeError: not an integer")
				}
				if abs {
					v.Abs(v)
				}
				total.Add(total, v)
			}
			return json.RawMessage(total.String()), nil
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "examples", "sum", "solutions", name, "solution.py"))
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	return map[string]sandboxtest.Python{
		read("honest"): {Call: sum(false)},
		read("wrong"):  {Call: sum(true)},
	}
}

// fakeBackend is an in-process backend with the fake's renderings of the
// runtime and judge images.
func fakeBackend(judge sandboxtest.Program) sandbox.Backend {
	fake := sandboxtest.NewFake()
	fake.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(sumSolutions()))
	fake.Image(sandboxtest.JudgeImage, judge)
	return fake
}

func newSigner() *attest.Signer {
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		panic(err)
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		panic(err)
	}
	return signer
}

// Grade a workspace against a strict-tier task. The backend here is the
// in-process fake; a harness leaves Config.Backend nil (Docker from the
// environment) or passes one from sandbox/docker, and then needs no image
// names: the controller builds its images when they are missing.
func Example() {
	ctx := context.Background()
	signer := newSigner()
	ctrl, err := controller.New(ctx, controller.Config{
		Backend:      fakeBackend(sandboxtest.Judge),
		Signer:       signer,
		RuntimeImage: sandboxtest.RuntimeImage,
		JudgeImage:   sandboxtest.JudgeImage,
	})
	if err != nil {
		panic(err)
	}
	defer ctrl.Close()
	t, err := task.Load(ctx, filepath.Join("..", "examples", "sum", "task"))
	if err != nil {
		panic(err)
	}
	for _, sol := range []string{"honest", "wrong"} {
		res, err := ctrl.Grade(ctx, t, controller.Submission{Dir: filepath.Join("..", "examples", "sum", "solutions", sol)})
		if err != nil {
			panic(err) // see Example_error for what to do instead
		}
		// Anyone with the public key can check the bundle.
		v := res.Verdict
		_, err = attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
			SubmissionSHA256: v.Submission.SHA256, TaskDigest: t.Digest, Tier: schema.TierStrict, Nonce: v.Nonce,
		})
		fmt.Printf("%s: %s, verified: %v\n", sol, v.Outcome, err == nil)
	}
	// Output:
	// honest: PASS, verified: true
	// wrong: FAIL, verified: true
}

// A grade that fails on the grader's side still returns a Result: a signed
// ERROR verdict, bound to the submission, with an error wrapping
// ErrCouldNotGrade. Keep it (it proves the attempt and says why it did not
// count); never take it for a statement about the work, and never drop the
// submission on its account. Here the judge crashes.
func Example_error() {
	ctx := context.Background()
	crash := func(p *sandboxtest.Proc) int {
		p.Errorf("judge: out of its mind")
		return 3
	}
	ctrl, err := controller.New(ctx, controller.Config{
		Backend:      fakeBackend(crash),
		Signer:       newSigner(),
		RuntimeImage: sandboxtest.RuntimeImage,
		JudgeImage:   sandboxtest.JudgeImage,
	})
	if err != nil {
		panic(err)
	}
	defer ctrl.Close()
	t, err := task.Load(ctx, filepath.Join("..", "examples", "sum", "task"))
	if err != nil {
		panic(err)
	}
	res, err := ctrl.Grade(ctx, t, controller.Submission{Dir: filepath.Join("..", "examples", "sum", "solutions", "honest")})
	switch {
	case res == nil:
		fmt.Println("no verdict at all:", err)
	case errors.Is(err, controller.ErrCouldNotGrade):
		fmt.Printf("%s (%s), signed: %v\n", res.Verdict.Outcome, res.Verdict.ReasonCode, len(res.Signed.Bundle) > 0)
	default:
		fmt.Println(res.Verdict.Outcome)
	}
	// Output:
	// ERROR (judge_crashed), signed: true
}
