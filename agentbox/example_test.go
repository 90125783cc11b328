package agentbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"

	"github.com/strictgrade/strictgrade/agentbox"
	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// solution is what the scripted agent writes.
const solution = "def solve(numbers):\n    return sum(numbers)\n"

// sum is the fake runtime's rendering of solution.
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

// An agent works in a box that holds the task's public files only; a
// scripted agent (standing in for a model loop on the host) reads the
// instructions, writes a solution and tries it; the box exports the
// declared artifacts, the controller grades them, and the signed verdict
// is verified. The backend is the in-process fake; with Docker, leave
// controller.Config.Backend nil and the image names empty, and take the
// backend and the runtime image from the controller as below.
func Example() {
	ctx := context.Background()
	fake := sandboxtest.NewFake()
	fake.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(map[string]sandboxtest.Python{solution: {Call: sum}}))
	fake.Image(sandboxtest.JudgeImage, sandboxtest.Judge)
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		panic(err)
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		panic(err)
	}
	ctrl, err := controller.New(ctx, controller.Config{
		Backend: fake, Signer: signer,
		RuntimeImage: sandboxtest.RuntimeImage, JudgeImage: sandboxtest.JudgeImage,
	})
	if err != nil {
		panic(err)
	}
	defer ctrl.Close()
	t, err := task.Load(ctx, filepath.Join("..", "examples", "sum", "task"))
	if err != nil {
		panic(err)
	}

	// The agent sees t.Public(): no case, no expected value.
	box, err := agentbox.Open(ctx, ctrl.Backend(), t.Public(), agentbox.Config{Image: ctrl.RuntimeImage()})
	if err != nil {
		panic(err)
	}
	defer box.Close(ctx)
	readme, err := box.ReadFile(ctx, "README.md")
	if err != nil {
		panic(err)
	}
	fmt.Println("task:", strings.SplitN(string(readme), "\n", 2)[0])
	if err := box.WriteFile(ctx, "solution.py", []byte(solution), false); err != nil {
		panic(err)
	}
	tried, err := box.Exec(ctx, sandbox.ExecSpec{Cmd: []string{"ls"}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("work dir: %q\n", tried.Stdout)
	archive, err := box.Export(ctx)
	if err != nil {
		panic(err)
	}

	res, err := ctrl.Grade(ctx, t, controller.Submission{Archive: strings.NewReader(string(archive))})
	if res == nil {
		panic(err) // not even an ERROR verdict could be made
	}
	// With a non-nil err, res holds a signed ERROR verdict: keep it.
	v := res.Verdict
	_, verr := attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
		SubmissionSHA256: v.Submission.SHA256, TaskDigest: t.Digest, Tier: schema.TierStrict, Nonce: v.Nonce,
	})
	fmt.Printf("graded: %s (could not grade: %v), verified: %v\n", v.Outcome, err != nil, verr == nil)
	// Output:
	// task: # sum
	// work dir: "README.md\nsolution.py\n"
	// graded: PASS (could not grade: false), verified: true
}
