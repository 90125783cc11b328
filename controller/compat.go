package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/internal/version"
	"github.com/strictgrade/strictgrade/schema"
)

// GradeCompat grades a unified diff against a compat-tier (repository)
// task in a fresh oracle container and signs the verdict with tier compat.
// baseline, when known (from CheckCompat), is recorded so the verdict says
// whether the session flipped. Results and errors follow Grade.
func (c *Controller) GradeCompat(ctx context.Context, t *compat.Task, diff []byte, baseline schema.Outcome) (*Result, error) {
	if t == nil || diff == nil {
		return nil, fmt.Errorf("%w: a compat grade needs a task and a diff", ErrCouldNotGrade)
	}
	return c.runCompat(ctx, t, diff, func(ctx context.Context, req compat.Request) (*compat.Outcome, error) {
		req.BaselineOutcome = baseline
		return compat.Grade(ctx, c.eng, req)
	})
}

// CheckCompat runs a compat task's baseline (no diff): the verdict is FAIL
// when the task is fit and QUARANTINED, with the reason, when it is not.
func (c *Controller) CheckCompat(ctx context.Context, t *compat.Task) (*Result, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil task", ErrCouldNotGrade)
	}
	return c.runCompat(ctx, t, nil, func(ctx context.Context, req compat.Request) (*compat.Outcome, error) {
		return compat.Check(ctx, c.eng, req)
	})
}

func (c *Controller) runCompat(ctx context.Context, t *compat.Task, diff []byte, run func(context.Context, compat.Request) (*compat.Outcome, error)) (*Result, error) {
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	defer func() { <-c.sem }()
	g := &grade{c: c, run: newRunID(), nonce: schema.NewNonce(), start: time.Now()}
	g.event("setup", "compat grade started", "task", t.Spec.ID, "task_digest", t.Digest, "baseline", diff == nil)
	out, gradeErr := run(ctx, compat.Request{
		Run: g.run, Task: t, Image: c.runtimeID, Diff: diff, Nonce: g.nonce,
		ControllerVersion: version.String(), Runtime: c.runtime,
		Progress: func(e compat.Entry) { g.event(e.Phase, e.Message, flatten(e.Attrs)...) },
	})
	var v *schema.Verdict
	switch {
	case out != nil && out.Verdict != nil:
		v = out.Verdict
	case gradeErr != nil:
		v = schema.New(schema.Task{ID: t.Spec.ID, Digest: t.Digest, Kind: schema.KindRepository}, schema.TierCompat)
		v.RunID, v.Nonce = g.run, g.nonce
		v.Controller = schema.Controller{Version: version.String(), Runtime: c.runtime}
		v.Submission = schema.Submission{Kind: schema.SubmissionDiff, SHA256: digest(diff), Size: int64(len(diff))}
		if diff == nil {
			v.Compat.Mode = schema.ModeBaseline
		}
		v.Outcome, v.ReasonCode = schema.OutcomeError, schema.ReasonInfrastructure
		v.Reason = schema.Excerpt([]byte(gradeErr.Error()), 480)
		v.Timings.TotalMS = time.Since(g.start).Milliseconds()
	default:
		return nil, fmt.Errorf("%w: the oracle returned no verdict", ErrCouldNotGrade)
	}
	if v.RunID != g.run || v.Nonce != g.nonce || v.Tier != schema.TierCompat {
		return nil, fmt.Errorf("%w: the oracle's verdict does not match the run", ErrCouldNotGrade)
	}
	signed, err := c.cfg.Signer.Sign(context.WithoutCancel(ctx), v, attest.SignOptions{})
	if err != nil {
		g.event("sign", "signing failed", "error", err.Error())
		return nil, fmt.Errorf("%w: sign: %w", ErrCouldNotGrade, errors.Join(gradeErr, err))
	}
	g.event("sign", "verdict signed", "outcome", string(v.Outcome), "key", c.cfg.Signer.Hint())
	res := &Result{Verdict: v, Signed: signed, Archive: diff, Log: g.log}
	if gradeErr != nil {
		return res, fmt.Errorf("%w: %w", ErrCouldNotGrade, gradeErr)
	}
	return res, nil
}

func flatten(m map[string]any) []any {
	out := make([]any, 0, 2*len(m))
	for k, v := range m {
		out = append(out, k, v)
	}
	return out
}
