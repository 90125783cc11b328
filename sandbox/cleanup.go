package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultCleanupTimeout bounds a Cleanup whose Timeout is zero.
const DefaultCleanupTimeout = time.Minute

// Cleanup is the removals of one run, made once, on a context that outlives
// the caller's by at most Timeout. Register a removal right after the call
// that creates the object and before checking its error, so that no path
// forgets it:
//
//	var cl sandbox.Cleanup
//	defer cl.Run(ctx)
//	vol, err := b.NewVolume(ctx, run, "inputs")
//	cl.Volume(b, vol)
//	if err != nil { … }
//
// The zero value is ready to use; it is safe for concurrent use.
type Cleanup struct {
	// Timeout bounds Run; zero means DefaultCleanupTimeout.
	Timeout time.Duration

	mu    sync.Mutex
	steps [2][]func(context.Context) error // sandboxes, then the volumes they may hold
	done  bool
}

// Add registers a removal, run before any volume's. After Run has started,
// step runs at once on a cleanup context of its own, so that a late
// registration is never lost.
func (c *Cleanup) Add(step func(context.Context) error) { c.add(0, step) }

func (c *Cleanup) add(stage int, step func(context.Context) error) {
	c.mu.Lock()
	if !c.done {
		c.steps[stage] = append(c.steps[stage], step)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	cctx, cancel := c.Context(context.Background())
	defer cancel()
	_ = step(cctx)
}

// Volume registers the removal of a volume, made after every other
// removal so that no sandbox still holds it; an empty name (a create that
// failed before it made anything) registers nothing.
func (c *Cleanup) Volume(v Volumes, name string) {
	if name == "" {
		return
	}
	c.add(1, func(ctx context.Context) error { return v.RemoveVolume(ctx, name) })
}

// Prepared registers the removal of a prepared sandbox; nil registers
// nothing.
func (c *Cleanup) Prepared(p Prepared) {
	if p == nil {
		return
	}
	c.Add(func(ctx context.Context) error { p.Close(ctx); return nil })
}

// Session registers the removal of a session; nil registers nothing.
func (c *Cleanup) Session(s Session) {
	if s == nil {
		return
	}
	c.Add(func(ctx context.Context) error { s.Close(ctx); return nil })
}

// Context returns a context for removals: it keeps ctx's values, is not
// cancelled with it, and ends after the timeout.
func (c *Cleanup) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	return CleanupContext(ctx, c.Timeout)
}

// CleanupContext returns a context for removals that keeps ctx's values,
// survives its cancellation and ends after timeout (DefaultCleanupTimeout
// when zero or negative).
func CleanupContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = DefaultCleanupTimeout
	}
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

// Run performs every registered removal and waits for them: the
// sandboxes at once, then the volumes at once. It returns their errors
// joined; later calls do nothing. Removals registered after Run has
// started run at once (see Add).
func (c *Cleanup) Run(ctx context.Context) error {
	c.mu.Lock()
	stages := c.steps
	c.steps, c.done = [2][]func(context.Context) error{}, true
	c.mu.Unlock()
	cctx, cancel := c.Context(ctx)
	defer cancel()
	var errs []error
	for _, steps := range stages {
		out := make([]error, len(steps))
		var wg sync.WaitGroup
		for i, step := range steps {
			wg.Go(func() { out[i] = step(cctx) })
		}
		wg.Wait()
		errs = append(errs, out...)
	}
	return errors.Join(errs...)
}
