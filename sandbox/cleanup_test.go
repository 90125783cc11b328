package sandbox_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/strictgrade/strictgrade/sandbox"
)

// recorder is a Volumes that records removals, its own and its prepared sandboxes'.
type recorder struct {
	sandbox.Volumes
	mu   sync.Mutex
	gone []string
	live bool // a context for a removal was still live
}

func (r *recorder) note(ctx context.Context, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone = append(r.gone, what)
	r.live = r.live || ctx.Err() == nil
}

func (r *recorder) RemoveVolume(ctx context.Context, name string) error {
	r.note(ctx, "volume "+name)
	return nil
}

type prepared struct{ r *recorder }

func (p prepared) Run(context.Context) (*sandbox.Result, error) { return nil, nil }
func (p prepared) Close(ctx context.Context)                    { p.r.note(ctx, "prepared") }

func TestCleanup(t *testing.T) {
	r := &recorder{}
	var cl sandbox.Cleanup
	cl.Volume(r, "")
	cl.Volume(r, "v1")
	cl.Prepared(prepared{r})
	cl.Prepared(nil)
	cl.Add(func(ctx context.Context) error { return errors.New("boom") })
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the caller's context is gone: removals still happen
	if err := cl.Run(ctx); err == nil || err.Error() != "boom" {
		t.Errorf("Run returned %v, want the failing step's error", err)
	}
	if !r.live {
		t.Error("removals ran on a cancelled context")
	}
	// The sandbox goes before the volume it may hold.
	if want := []string{"prepared", "volume v1"}; !slices.Equal(r.gone, want) {
		t.Errorf("removed %v, want %v", r.gone, want)
	}
	if err := cl.Run(ctx); err != nil {
		t.Errorf("second Run: %v", err)
	}
	cl.Volume(r, "late")
	if r.gone[len(r.gone)-1] != "volume late" {
		t.Errorf("a removal registered after Run was lost: %v", r.gone)
	}
}
