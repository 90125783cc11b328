package batch_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
)

// overloading is a backend whose first candidate runs end as a starved
// host's do (sandbox.ErrOverloaded).
type overloading struct {
	sandbox.Backend
	left atomic.Int32
}

func (o *overloading) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	if spec.Phase == "candidate" && o.left.Add(-1) >= 0 {
		return nil, fmt.Errorf("%w: a test's starved run", sandbox.ErrOverloaded)
	}
	return o.Backend.Run(ctx, spec)
}

func overloadedController(t *testing.T, signer *attest.Signer, starved int32) *controller.Controller {
	t.Helper()
	fake := sandboxtest.NewFake()
	fake.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(map[string]sandboxtest.Python{
		copySource: {Main: copyMain},
	}))
	fake.Image(sandboxtest.JudgeImage, sandboxtest.Judge)
	eng := &overloading{Backend: fake}
	eng.left.Store(starved)
	ctrl, err := controller.New(t.Context(), controller.Config{Backend: eng, Signer: signer, MaxInFlight: 1, CaseParallel: 1,
		RuntimeImage: sandboxtest.RuntimeImage, JudgeImage: sandboxtest.JudgeImage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close() })
	return ctrl
}

// TestOverloadedGradeIsGradedAgain: a grade the host's load ended (ERROR
// grader_overloaded, issue 30) says nothing of the submission. A run grades
// the item again after a pause; one still overloaded after every pause is
// recorded as such, and a resume grades it again without RetryErrors.
func TestOverloadedGradeIsGradedAgain(t *testing.T) {
	defer batch.SetOverloadPauses([]time.Duration{time.Millisecond, time.Millisecond})()
	signer := newSigner(t)

	f := newFixture(t, 1)
	sum, err := batch.Run(t.Context(), batch.Options{Controller: overloadedController(t, signer, 2), Signer: signer,
		Items: f.items, Tasks: f.tasks, Out: f.out, Parallel: 1})
	if err != nil || sum.Outcomes[schema.OutcomePass] != 1 {
		t.Fatalf("twice overloaded, then graded: %+v, %v", sum, err)
	}

	f = newFixture(t, 1)
	sum, err = batch.Run(t.Context(), batch.Options{Controller: overloadedController(t, signer, 100), Signer: signer,
		Items: f.items, Tasks: f.tasks, Out: f.out, Parallel: 1})
	if err != nil || sum.Outcomes[schema.OutcomeError] != 1 {
		t.Fatalf("overloaded every time: %+v, %v", sum, err)
	}
	if recs := readRecords(t, f.out); len(recs) != 1 || recs[0].ReasonCode != schema.ReasonGraderOverloaded {
		t.Fatalf("records %+v, want one ERROR %s", recs, schema.ReasonGraderOverloaded)
	}
	sum, err = batch.Run(t.Context(), batch.Options{Controller: overloadedController(t, signer, 0), Signer: signer,
		Items: f.items, Tasks: f.tasks, Out: f.out, Parallel: 1})
	if err != nil || sum.Resumed != 0 || sum.Graded != 1 || sum.Outcomes[schema.OutcomePass] != 1 {
		t.Fatalf("resume of an overloaded item: %+v, %v", sum, err)
	}
}
