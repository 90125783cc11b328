package controller

import (
	"context"
	"fmt"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/strict"
	"github.com/strictgrade/strictgrade/task"
)

// Admit returns, without grading, the bytes a Grade of sub against t
// would bind its verdict to (Result.Archive): a strict task's canonical
// archive of the declared artifacts (or the bytes as presented when the
// firewall rejects them), a compat task's diff. A signed verdict is about
// sub exactly when its submission digest is the sha256 of these bytes: a
// harness that keeps verdicts (a batch run's resume) asks it whether a
// submission is still the one a verdict was made for. An error wraps
// ErrBadRequest for a submission of the other tier's form, or says why
// the submission could not be read.
func Admit(ctx context.Context, t Task, sub Submission) ([]byte, error) {
	switch tt := t.(type) {
	case *task.Task:
		if tt == nil || sub.Diff != nil {
			return nil, fmt.Errorf("%w: a strict task takes a workspace or an archive, not a diff", ErrBadRequest)
		}
		return strict.Admit(ctx, tt, sub.Dir, sub.Archive)
	case *compat.Task:
		if tt == nil || sub.Diff == nil || sub.Dir != "" || sub.Archive != nil {
			return nil, fmt.Errorf("%w: a compat task takes a diff", ErrBadRequest)
		}
		return sub.Diff, nil
	}
	return nil, fmt.Errorf("%w: a task of type %T: want *task.Task or *compat.Task", ErrBadRequest, t)
}
