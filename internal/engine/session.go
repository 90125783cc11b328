package engine

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/strictgrade/strictgrade/internal/capbuf"
	"github.com/strictgrade/strictgrade/sandbox"
)

// Session is a running hardened container that takes commands, for agent
// loops that run on the host and act in the container one command at a
// time. Its main process only waits; commands run through exec, each under
// an in-container SIGKILL timeout and a host-side backstop that kills the
// whole container.
type Session struct {
	d       *Docker
	id      string
	imageID string
	spec    Spec
	mu      sync.Mutex // serialises exec, copies and close
	closed  bool
	dead    bool // the backstop killed the container
	// dropTrees removes the volumes the spec's trees were laid out in
	// (nil without trees).
	dropTrees func(context.Context)
	// failPauses makes that many pauses fail before they reach the
	// daemon, as runc's freezer does on a loaded host. Only the tests set
	// it (FailPauses).
	failPauses int
}

// execGrace is how long after the in-container timeout the host waits
// before killing the whole container.
const execGrace = 5 * time.Second

// Start creates and starts a session container. spec.Cmd is ignored: the
// main process is the image's `sleep` for the session's wall limit, so the
// image must provide sleep and timeout (the Python image does). The
// container is killed when the wall limit passes even if nobody calls Close.
func (d *Docker) Start(ctx context.Context, spec Spec) (sandbox.Session, error) {
	s, err := d.start(ctx, spec)
	if err != nil {
		return nil, err // an untyped nil, never a nil *Session
	}
	return s, nil
}

func (d *Docker) start(ctx context.Context, spec Spec) (*Session, error) {
	if spec.StreamOut != nil {
		return nil, fmt.Errorf("%w: a session has no stream-out directory", ErrSpec)
	}
	lim, err := spec.Limits.Resolve()
	if err != nil {
		return nil, err
	}
	spec.Cmd = []string{"sleep", strconv.FormatInt(int64(lim.Wall/time.Second)+1, 10)}
	spec.Limits = lim
	p, err := d.prepareFor(ctx, spec, false)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.used = true // the session owns the container from here on
	p.mu.Unlock()
	s := &Session{d: d, id: p.id, imageID: p.imageID, spec: p.spec, dropTrees: p.dropTrees}
	if err := d.startContainer(ctx, p.id); err != nil {
		s.remove(ctx)
		return nil, fmt.Errorf("engine: start session: %w", err)
	}
	return s, nil
}

// remove removes the session's container, then its trees' volumes.
func (s *Session) remove(ctx context.Context) {
	s.d.removeContainer(ctx, s.id)
	if s.dropTrees != nil {
		s.dropTrees(ctx)
	}
}

// ID returns the session container's ID.
func (s *Session) ID() string { return s.id }

// ImageID returns the ID of the image the session runs.
func (s *Session) ImageID() string { return s.imageID }

// Exec runs one command and returns its bounded output. A command that
// outlives its wall limit is killed inside the container; if that fails to
// end it, the whole session is killed and ErrSessionClosed follows. So is
// a cancelled ctx: an exec cannot be stopped reliably on its own. Commands
// of one session run one at a time.
func (s *Session) Exec(ctx context.Context, e ExecSpec) (*ExecResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.dead {
		return nil, ErrSessionClosed
	}
	if len(e.Cmd) == 0 {
		return nil, fmt.Errorf("%w: empty command", ErrSpec)
	}
	wall := e.Wall
	if wall <= 0 {
		wall = DefaultLimits.Wall
	}
	wall = min(wall, s.spec.Limits.Wall)
	outCap := e.StdoutBytes
	if outCap <= 0 {
		outCap = DefaultLimits.StdoutBytes
	}
	errCap := e.StderrBytes
	if errCap <= 0 {
		errCap = DefaultLimits.StderrBytes
	}
	secs := strconv.FormatFloat(wall.Seconds(), 'f', 3, 64)
	cmd := append([]string{"timeout", "-s", "KILL", secs}, e.Cmd...)
	withStdin := e.Stdin != nil
	created, err := s.d.cli.ContainerExecCreate(ctx, s.id, container.ExecOptions{
		User: SandboxUser, Cmd: cmd, Env: e.Env, WorkingDir: e.WorkDir,
		AttachStdin: withStdin, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("engine: exec create: %w", err)
	}
	att, err := s.d.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("engine: exec attach: %w", err)
	}
	defer att.Close()
	start := time.Now()
	if withStdin {
		go func() {
			_, _ = io.Copy(att.Conn, e.Stdin)
			_ = att.CloseWrite()
		}()
	}
	stdout := &capbuf.Buffer{Max: outCap}
	stderr := &capbuf.Buffer{Max: errCap}
	done := make(chan error, 1)
	go func() { done <- demux(att.Reader, stdout, stderr, nil) }()
	backstop := time.NewTimer(wall + execGrace)
	defer backstop.Stop()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("engine: exec output: %w", err)
		}
	case <-backstop.C:
		s.kill(ctx)
		return nil, fmt.Errorf("%w: command outlived its limit and the session was killed", ErrSessionClosed)
	case <-ctx.Done():
		s.kill(ctx)
		return nil, ctx.Err()
	}
	ins, err := s.d.cli.ContainerExecInspect(ctx, created.ID)
	if err != nil {
		return nil, fmt.Errorf("engine: exec inspect: %w", err)
	}
	res := &ExecResult{Code: ins.ExitCode, Exit: ExitExited, Duration: time.Since(start)}
	res.Stdout, res.StdoutTruncated = stdout.Result()
	res.Stderr, res.StderrTruncated = stderr.Result()
	// timeout(1) exits 137 after SIGKILL; 124 when the signal was TERM.
	if ins.ExitCode == 137 && res.Duration >= wall {
		res.Exit = ExitTimeout
	}
	return res, nil
}

// kill stops the container for good; the session cannot be used again.
func (s *Session) kill(ctx context.Context) {
	s.dead = true
	kctx, cancel := s.d.cleanupCtx(ctx)
	defer cancel()
	_ = s.d.cli.ContainerKill(kctx, s.id, "SIGKILL")
}

// Stop kills the session's processes, leaving the stopped container for
// CopyOut. It is safe to call more than once.
func (s *Session) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSessionClosed
	}
	if !s.dead {
		s.kill(ctx)
	}
	wctx, cancel := s.d.cleanupCtx(ctx)
	defer cancel()
	waitC, errC := s.d.cli.ContainerWait(wctx, s.id, container.WaitConditionNotRunning)
	select {
	case <-waitC:
		return nil
	case err := <-errC:
		return fmt.Errorf("engine: stop session: %w", err)
	}
}

// Close removes the session container. It is safe to call more than once
// and on every path; the container is removed even if ctx is cancelled.
func (s *Session) Close(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.remove(ctx)
}
