package strict

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/task"
)

// Admit returns, without running anything, the bytes a Grade of the
// submission (exactly one of dir and archive) against t binds its verdict
// to, as Outcome.Archive: the canonical archive of the declared
// artifacts, or the bytes as presented when the firewall rejects the
// submission (a FAIL before any case runs). It is the same admission Grade
// runs, so a grade's verdict is about a submission exactly when the
// sha256 of what Admit returns for it is the verdict's submission digest.
// An error means it could not tell: ctx ended, or the host could not read
// the submission.
func Admit(ctx context.Context, t *task.Task, dir string, archive io.Reader) ([]byte, error) {
	if t == nil || (dir == "") == (archive == nil) {
		return nil, fmt.Errorf("%w: strict: a task and exactly one of dir and archive", grading.ErrBadRequest)
	}
	g := &grade{req: Request{Task: t, Dir: dir, Archive: archive}, task: t}
	raw := &presented{}
	out, _, err := g.admit(ctx, raw)
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("admit submission: %w", errors.Join(ctx.Err(), err))
	}
	if _, rejected := g.rejection(err); rejected {
		return raw.data, nil
	}
	return nil, err
}
