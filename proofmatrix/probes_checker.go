package proofmatrix

import (
	"context"
	"fmt"

	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/proofmatrix/internal/wasmcheck"
	"github.com/strictgrade/strictgrade/schema"
)

// Attacks through a task's checker (issue 29 items 4 to 6). The checked
// task's checker (package wasmcheck) is careless in two ways a real one can
// be: its work grows with the square of the output's length, and its reject
// message, longer than a verdict keeps, quotes the expected value.
func init() {
	register(
		&Probe{ID: "V9.8-checker-fuel", Taxonomy: "V9.8", Class: "V9", Title: "an answer sized so that the checker runs past its limit", Source: "issue 29 item 4",
			Strict: &Case{Task: "checked", Files: map[string]string{"solution.py": "def solve(xs):\n    return [0] * 200000\n"},
				Expect: Blocked, Layer: "judge: checker_out_of_fuel",
				Why: "a checker runs on a fuel budget counted the same on every machine: running out is the candidate's FAIL, never an ERROR a loaded host decides"}},
		&Probe{ID: "V10.5-checker-message", Taxonomy: "V10.5", Class: "V10", Title: "a checker's long reject message that quotes the expected value", Source: "issue 29 items 5, 6",
			Strict: &Case{Custom: checkerMessageProbe, Expect: Blocked, Layer: "disclosure: nothing quoted",
				Why: "a message over 4096 bytes is cut, not an ERROR, and a digest verdict says only that the checker rejected"}},
	)
}

// checkerMessageProbe grades a small wrong answer against the checked task
// and looks for the checker's message in the signed statement: the message
// repeats the expected value, so any 8-byte run of it is a leak.
func checkerMessageProbe(ctx context.Context, env *Env) (Observation, error) {
	dir, err := env.TempDir()
	if err != nil {
		return Observation{}, err
	}
	if err := writeFiles(dir, map[string]string{"solution.py": "def solve(xs):\n    return []\n"}); err != nil {
		return Observation{}, err
	}
	res, err := env.Grade(ctx, "checked", controller.Submission{Dir: dir})
	if res == nil {
		return Observation{}, err
	}
	if res.Verdict.Outcome != schema.OutcomeFail {
		return Classify(res.Verdict, false), nil
	}
	if found := leaks(res.Signed.Payload, []string{wasmcheck.Secret, wasmcheck.Message()}, nil); len(found) > 0 {
		return Observation{Result: Succeeds, Layer: "none", Outcome: "FAIL", RunID: res.Verdict.RunID,
			Reason: schema.Excerpt([]byte(fmt.Sprintf("the checker's message in a signed verdict: %v", found)), 400)}, nil
	}
	return Observation{Result: Blocked, Layer: "disclosure: nothing quoted", Outcome: "FAIL", RunID: res.Verdict.RunID}, nil
}
