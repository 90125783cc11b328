package proofmatrix

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

func init() {
	compatLoader = func(ctx context.Context, env *Env, name, dir string) error {
		t, err := compat.Load(ctx, dir)
		if err != nil {
			return fmt.Errorf("proofmatrix: compat task %s: %w", name, err)
		}
		env.mu.Lock()
		if env.compatTasks == nil {
			env.compatTasks = map[string]*compat.Task{}
		}
		env.compatTasks[name] = t
		env.mu.Unlock()
		return nil
	}
	compatRunner = func(ctx context.Context, env *Env, p *Probe, c *Case) (Observation, error) {
		res, err := env.GradeCompat(ctx, c.Task, []byte(c.Diff))
		if res == nil {
			return Observation{}, err
		}
		return Classify(res.Verdict, p.Control), err
	}
}

// GradeCompat grades a diff against an embedded compat task.
func (e *Env) GradeCompat(ctx context.Context, name string, diff []byte) (*controller.Result, error) {
	e.mu.Lock()
	t, ok := e.compatTasks[name]
	e.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("proofmatrix: no compat task %q", name)
	}
	return e.Controller.GradeCompat(ctx, t, diff, "")
}

// compatLayer names the layer behind a compat-tier FAIL.
func compatLayer(v *schema.Verdict) string {
	if v.Compat != nil && len(v.Compat.DroppedHunks) > 0 {
		rule := v.Compat.DroppedHunks[0].Rule
		rule, _, _ = strings.Cut(rule, ":")
		return "diff-gate: " + rule
	}
	return "oracle: " + v.ReasonCode
}

var attachOnce sync.Once

// attachCompat gives each probe its compat form.
func attachCompat() {
	attachOnce.Do(func() {
		for _, p := range registry {
			if c, ok := compatForms[p.ID]; ok {
				c.Task = "textkit"
				p.Compat = c
			}
		}
	})
}
