package kubernetes

import (
	"context"
	"strings"
	"testing"
)

// TestFollowCountSeesARotatedLog: a final read of standard output shorter
// than what the follower read is a log the node rotated while the
// workload ran, and an error; a final read as long as the follower's (or
// longer: a follower that ended early) stands, and the cap decides how
// far the comparison goes.
func TestFollowCountSeesARotatedLog(t *testing.T) {
	follower := func(max int64, wrote ...int) *followCount {
		f := &followCount{max: max, done: make(chan struct{})}
		for _, n := range wrote {
			_, _ = f.Write(make([]byte, n))
		}
		close(f.done)
		return f
	}
	ctx := context.Background()
	if err := follower(1001, 300, 300).check(ctx, "p", 600); err != nil {
		t.Errorf("whole log: %v", err)
	}
	if err := follower(1001, 300).check(ctx, "p", 600); err != nil {
		t.Errorf("a follower that ended early: %v", err)
	}
	err := follower(1001, 300, 300).check(ctx, "p", 200)
	if err == nil || !strings.Contains(err.Error(), "rotated") {
		t.Errorf("rotated log: %v, want an error naming the rotation", err)
	}
	// Past the cap both counts stop at the cap and one byte more.
	if err := follower(1001, 5000).check(ctx, "p", 1001); err != nil {
		t.Errorf("output past the cap: %v", err)
	}
	over := 0
	f := &followCount{max: 11, done: make(chan struct{}), onOver: func() { over++ }}
	_, _ = f.Write(make([]byte, 10))
	if over != 0 {
		t.Errorf("onOver at the cap")
	}
	_, _ = f.Write(make([]byte, 1))
	if over == 0 {
		t.Errorf("onOver not called past the cap")
	}
}
