package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/strictgrade/strictgrade/internal/capbuf"
	"github.com/strictgrade/strictgrade/sandbox"
)

// drainTimeout bounds how long Run waits for the attach stream to end after
// the container has stopped.
const drainTimeout = 15 * time.Second

// Prepared is a hardened container that has been created, and its profile
// checked, but not started: a phase can be made ready while another runs.
// Run it once, or Remove it; both remove the container.
type Prepared struct {
	d       *Docker
	id      string
	imageID string
	spec    Spec
	lim     Limits
	// streamVol is the host tmpfs volume that holds StreamOut.Dir under
	// gVisor; removed with the container.
	streamVol string
	mu        sync.Mutex
	used      bool
}

// stdoutCap returns the cap of the attach stream's standard output and
// whether passing it kills the container. With StreamOut the stream is the
// archive, capped at what the quota can hold, and passing that is always
// fatal.
func (p *Prepared) stdoutCap() (int64, bool) {
	if so := p.spec.StreamOut; so != nil {
		return streamCap(*so, p.spec.CollectPolicy), true
	}
	return p.lim.StdoutBytes, p.lim.KillOnOutputLimit
}

// Prepare implements sandbox.Preparer: it creates the container for spec,
// and checks its profile, without starting it.
func (d *Docker) Prepare(ctx context.Context, spec Spec) (sandbox.Prepared, error) {
	p, err := d.prepare(ctx, spec)
	if err != nil {
		return nil, err // an untyped nil, never a nil *Prepared
	}
	return p, nil
}

func (d *Docker) prepare(ctx context.Context, spec Spec) (*Prepared, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	lim, err := spec.Limits.Resolve()
	if err != nil {
		return nil, err
	}
	if spec.Runtime == "" {
		// The resolved name, so that the profile knows the runtime
		// even when it is the daemon's default.
		spec.Runtime = d.info.Runtime
	}
	if spec.StreamOut != nil {
		so, err := spec.StreamOut.Resolve()
		if err != nil {
			return nil, err
		}
		spec.StreamOut = &so
	}
	var streamVol string
	if spec.StreamOut != nil && userSpaceKernel(spec.Runtime) {
		v, err := d.newStreamVolume(ctx, spec.Run, spec.Phase, *spec.StreamOut)
		if err != nil {
			return nil, err
		}
		streamVol = v
		spec.Mounts = append(slices.Clone(spec.Mounts), Mount{Volume: v, Target: spec.StreamOut.Dir})
	}
	cfg, hc := hardened(spec, lim, spec.Stdin != nil)
	id, ins, err := d.create(ctx, objectName(spec.Run, spec.Phase), cfg, hc)
	if err != nil {
		if id != "" {
			d.removeContainer(ctx, id)
		}
		d.removeStreamVolume(ctx, streamVol)
		return nil, err
	}
	return &Prepared{d: d, id: id, imageID: ins.Image, spec: spec, lim: lim, streamVol: streamVol}, nil
}

// Close removes the container if Run has not; it is safe to call more
// than once and on every path.
func (p *Prepared) Close(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.used {
		p.used = true
		p.d.removeContainer(ctx, p.id)
		p.d.removeStreamVolume(ctx, p.streamVol)
	}
}

// Run implements Engine: Prepare, then run.
func (d *Docker) Run(ctx context.Context, spec Spec) (*Result, error) {
	p, err := d.prepare(ctx, spec)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx)
}

// Run starts the prepared container, waits for it under its limits,
// collects the requested paths and removes it. Order matters: attach and
// wait are registered before start, so neither the first bytes nor a fast
// exit can be missed.
func (p *Prepared) Run(ctx context.Context) (*Result, error) {
	p.mu.Lock()
	if p.used {
		p.mu.Unlock()
		return nil, fmt.Errorf("%w: a prepared container runs once", ErrSpec)
	}
	p.used = true
	p.mu.Unlock()
	d, id, spec, lim := p.d, p.id, p.spec, p.lim
	withStdin := spec.Stdin != nil
	// Deferred first, so run last: the volume after its container.
	defer d.removeStreamVolume(ctx, p.streamVol)
	defer d.removeContainer(ctx, id)
	res := &Result{ID: id, ImageID: p.imageID}

	att, err := d.cli.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: withStdin, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("engine: attach: %w", err)
	}
	defer att.Close()
	waitCtx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	waitC, errC := d.cli.ContainerWait(waitCtx, id, container.WaitConditionNextExit)

	outCap, killOnOver := p.stdoutCap()
	overflow := make(chan struct{}, 1)
	signalOver := func() {
		if killOnOver {
			select {
			case overflow <- struct{}{}:
			default:
			}
		}
	}
	// Only standard output, the graded stream, stops the container;
	// standard error past its cap is drained and dropped.
	stdout := &capbuf.Buffer{Max: outCap, OnOver: signalOver}
	stderr := &capbuf.Buffer{Max: lim.StderrBytes}
	copyDone := make(chan error, 1)
	go func() { copyDone <- demux(att.Reader, stdout, stderr, nil) }()

	start := time.Now()
	if err := d.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("engine: start: %w", err)
	}
	if withStdin {
		go func() {
			_, _ = io.Copy(att.Conn, spec.Stdin)
			_ = att.CloseWrite()
		}()
	}

	timer := time.NewTimer(lim.Wall)
	defer timer.Stop()
	var killedFor ExitKind
	var status container.WaitResponse
	select {
	case status = <-waitC:
	case err := <-errC:
		return nil, fmt.Errorf("engine: wait: %w", err)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		// An exit that raced the timer is an exit, not a timeout.
		select {
		case status = <-waitC:
		default:
			killedFor = ExitTimeout
		}
	case <-overflow:
		killedFor = ExitOutputLimit
	}
	if killedFor != "" {
		if status, err = d.kill(ctx, id, waitC, errC); err != nil {
			return nil, err
		}
	}
	res.Duration = time.Since(start)
	if status.Error != nil {
		return nil, fmt.Errorf("engine: wait: %s", status.Error.Message)
	}

	select {
	case err := <-copyDone:
		if err != nil {
			return nil, fmt.Errorf("engine: output stream: %w", err)
		}
	case <-time.After(drainTimeout):
		return nil, fmt.Errorf("engine: output stream did not end %v after exit", drainTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res.Stdout, res.StdoutTruncated = stdout.Result()
	res.Stderr, res.StderrTruncated = stderr.Result()

	final, err := d.cli.ContainerInspect(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("engine: inspect after exit: %w", err)
	}
	if final.State == nil || final.State.Running {
		return nil, errors.New("engine: container still running after exit")
	}
	// Removed or marked dead by someone else while it ran: its exit status
	// says nothing about what ran in it.
	if final.State.Status == "removing" || final.State.Dead {
		return nil, fmt.Errorf("engine: container %.12s was %s from outside while it ran", id, final.State.Status)
	}
	res.Code = final.State.ExitCode
	switch {
	case killedFor == ExitTimeout:
		res.Exit = ExitTimeout
	case final.State.OOMKilled:
		res.Exit = ExitOOM
	case killedFor == ExitOutputLimit:
		res.Exit = ExitOutputLimit
	case res.Code == 128+9 && oomReported(ctx, d.cli, id, start, oomGrace):
		// Ended by a SIGKILL the engine did not send, and the daemon
		// reports an OOM kill after the exit: the memory limit decided.
		res.Exit = ExitOOM
	default:
		res.Exit = ExitExited
	}

	if len(spec.Collect) > 0 || spec.StreamOut != nil {
		res.Collected = make(map[string]Collected, len(spec.Collect)+1)
	}
	for _, p := range spec.Collect {
		c, err := d.collect(ctx, id, p, spec.CollectPolicy)
		if err != nil {
			return nil, err
		}
		res.Collected[p] = c
	}
	if so := spec.StreamOut; so != nil {
		// Standard output was the archive, not the command's.
		archive := res.Stdout
		res.Stdout = nil
		// A killed container's archive is cut short by the kill: the
		// exit kind says what happened, and there is nothing to read.
		if res.Exit == ExitExited {
			c, err := collectStream(ctx, archive, so.Dir, quotaPolicy(*so, spec.CollectPolicy))
			if err != nil {
				return nil, err
			}
			res.Collected[so.Dir] = c
		}
	}
	return res, nil
}

// kill sends SIGKILL and waits for the exit to be reported, on a context
// that survives the caller's for a bounded time.
func (d *Docker) kill(ctx context.Context, id string, waitC <-chan container.WaitResponse, errC <-chan error) (container.WaitResponse, error) {
	kctx, cancel := d.cleanupCtx(ctx)
	defer cancel()
	if err := d.cli.ContainerKill(kctx, id, "SIGKILL"); err != nil {
		// It may have exited on its own in the meantime.
		d.log.Debug("kill failed", "container", id, "err", err)
	}
	select {
	case st := <-waitC:
		return st, nil
	case err := <-errC:
		return container.WaitResponse{}, fmt.Errorf("engine: wait after kill: %w", err)
	case <-kctx.Done():
		return container.WaitResponse{}, errors.New("engine: no exit reported after SIGKILL")
	}
}
