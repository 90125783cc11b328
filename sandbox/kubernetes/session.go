package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/capbuf"
	"github.com/strictgrade/strictgrade/sandbox"
)

// sessionWait is a session's main process, PID 1 of its work container:
// it waits for the wall limit (its argument, in seconds) and reaps every
// orphan meanwhile, so that once Stop has killed every other process none
// is left, not even as a zombie. It ends the container when the time is
// up, whoever calls Close.
const sessionWait = `import os, signal, sys, time
deadline = time.monotonic() + float(sys.argv[1])
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
while True:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    left = deadline - time.monotonic()
    if left <= 0:
        break
    signal.sigtimedwait([signal.SIGCHLD], left)
`

// sessionKill, run in the work container, kills every process there but
// PID 1 and itself until none is left (kill(-1) fails with ESRCH then).
const sessionKill = `import os, signal, sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        sys.exit(0)
    time.sleep(0.005)
sys.exit(1)
`

// execGrace is how long after a command's in-sandbox timeout the backend
// waits before it deletes the whole session.
const execGrace = 5 * time.Second

// stopTimeout bounds Stop's killing of a session's processes.
const stopTimeout = 10 * time.Second

// session is a started pod whose work container's main process only
// waits: commands run through exec in it, each under timeout(1); files go
// in and out through the keeper, which mounts every volume of the session.
type session struct {
	b       *Backend
	name    string
	imageID string
	spec    sandbox.Spec // limits resolved

	mu      sync.Mutex // serialises commands, copies, Stop and Close
	stopped bool       // Stop killed every process of the workload
	dead    bool       // the pod was deleted before Close
	closed  bool
}

var _ sandbox.Session = (*session)(nil)

// Start implements sandbox.Starter: a pod with the loader, the work
// container (python3, timeout and env from the image: the strictgrade
// runtime image has them) and the keeper. Spec.Cmd and Spec.StreamOut are
// not used. The writable mounts' volumes have no known content afterwards
// (see volumeStore.markLost): what a session leaves is read with CopyOut.
func (b *Backend) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Session, error) {
	if spec.StreamOut != nil {
		return nil, fmt.Errorf("%w: a session has no stream-out directory", sandbox.ErrSpec)
	}
	if len(spec.Collect) > 0 {
		return nil, fmt.Errorf("%w: a session collects nothing (CopyOut reads its files)", sandbox.ErrSpec)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	lim, err := spec.Limits.Resolve()
	if err != nil {
		return nil, err
	}
	spec.Stdin = nil
	spec.Cmd = []string{"python3", "-I", "-S", "-c", sessionWait, strconv.FormatFloat(lim.Wall.Seconds()+1, 'f', 3, 64)}
	vspec, drop, err := sandbox.TreeVolumes(ctx, b, spec)
	if err != nil {
		drop(ctx)
		return nil, err
	}
	s, err := b.startSession(ctx, vspec)
	// The trees' volumes were laid out into the pod when it started.
	drop(ctx)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (b *Backend) startSession(ctx context.Context, spec sandbox.Spec) (*session, error) {
	lim, err := b.check(&spec)
	if err != nil {
		return nil, err
	}
	sizes, err := b.mountSizes(spec, lim)
	if err != nil {
		return nil, err
	}
	p, err := b.start(ctx, spec, lim, sizes, true)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.used = true // the session owns the pod from here on
	p.mu.Unlock()
	started, err := p.begin(ctx)
	if err == nil {
		if cs := containerStatus(started, workContainer); cs == nil || cs.State.Running == nil {
			err = fmt.Errorf("kubernetes: session pod %s: the work container ended at once", p.name)
		}
	}
	if err == nil && len(spec.Mounts) > 0 {
		err = p.keeperRunning(ctx)
	}
	if err != nil {
		p.stop()
		_ = b.deletePod(ctx, p.name)
		return nil, err
	}
	p.stop() // the loader is done
	s := &session{b: b, name: p.name, spec: spec}
	s.spec.Limits = lim
	if cs := containerStatus(started, workContainer); cs != nil {
		s.imageID = imageID(cs.ImageID)
	}
	return s, nil
}

// ID implements sandbox.Session: the pod's name.
func (s *session) ID() string { return s.name }

// ImageID implements sandbox.Session.
func (s *session) ImageID() string { return s.imageID }

// usable reports why the session takes no command, or nil.
func (s *session) usable() error {
	switch {
	case s.closed || s.dead:
		return sandbox.ErrSessionClosed
	case s.stopped:
		return fmt.Errorf("%w: the session was stopped", sandbox.ErrSessionClosed)
	}
	return nil
}

// Exec implements sandbox.Session: the command runs in the work container
// as the sandbox user, under env(1) for its environment and directory and
// timeout(1) for its wall limit. A command that outlives its limit by
// execGrace, or a cancelled ctx, deletes the pod: ErrSessionClosed from
// then on.
func (s *session) Exec(ctx context.Context, e sandbox.ExecSpec) (*sandbox.ExecResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	if len(e.Cmd) == 0 {
		return nil, fmt.Errorf("%w: empty command", sandbox.ErrSpec)
	}
	cmd := []string{"env"}
	if e.WorkDir != "" {
		if !path.IsAbs(e.WorkDir) {
			return nil, fmt.Errorf("%w: working directory %q is not absolute", sandbox.ErrSpec, e.WorkDir)
		}
		cmd = append(cmd, "-C", e.WorkDir)
	}
	for _, kv := range e.Env {
		// env(1) would take an entry without '=' for the command, and
		// one that starts with '-' for an option.
		if !strings.Contains(kv, "=") || strings.HasPrefix(kv, "-") || strings.HasPrefix(kv, "=") {
			return nil, fmt.Errorf("%w: environment entry %q", sandbox.ErrSpec, kv)
		}
		cmd = append(cmd, kv)
	}
	wall := e.Wall
	if wall <= 0 {
		wall = sandbox.DefaultLimits.Wall
	}
	wall = min(wall, s.spec.Limits.Wall)
	outCap := e.StdoutBytes
	if outCap <= 0 {
		outCap = sandbox.DefaultLimits.StdoutBytes
	}
	errCap := e.StderrBytes
	if errCap <= 0 {
		errCap = sandbox.DefaultLimits.StderrBytes
	}
	cmd = append(cmd, "timeout", "-s", "KILL", strconv.FormatFloat(wall.Seconds(), 'f', 3, 64))
	cmd = append(cmd, e.Cmd...)

	stdout := &capbuf.Buffer{Max: outCap}
	stderr := &capbuf.Buffer{Max: errCap}
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	type outcome struct {
		code int
		err  error
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		code, err := s.b.exec(ectx, s.name, workContainer, cmd, e.Stdin, stdout, stderr)
		done <- outcome{code, err}
	}()
	backstop := time.NewTimer(wall + execGrace)
	defer backstop.Stop()
	var o outcome
	select {
	case o = <-done:
	case <-backstop.C:
		s.kill(ctx)
		return nil, fmt.Errorf("%w: command outlived its limit and the session was deleted", sandbox.ErrSessionClosed)
	case <-ctx.Done():
		s.kill(ctx)
		return nil, ctx.Err()
	}
	if o.err != nil {
		return nil, o.err
	}
	res := &sandbox.ExecResult{Code: o.code, Exit: sandbox.ExitExited, Duration: time.Since(start)}
	res.Stdout, res.StdoutTruncated = stdout.Result()
	res.Stderr, res.StderrTruncated = stderr.Result()
	// timeout(1) exits 137 after its SIGKILL.
	if o.code == 137 && res.Duration >= wall {
		res.Exit = sandbox.ExitTimeout
	}
	return res, nil
}

// kill deletes the pod: the session cannot be used again.
func (s *session) kill(ctx context.Context) {
	s.dead = true
	_ = s.b.deletePod(ctx, s.name)
}

// inMount returns the mount that holds p, if any.
func (s *session) inMount(p string) (sandbox.Mount, bool) {
	for _, m := range s.spec.Mounts {
		if sandbox.Within(p, m.Target) {
			return m, true
		}
	}
	return sandbox.Mount{}, false
}

// CopyIn implements sandbox.Session: the archive crosses the firewall on
// the controller's side, and the loader, run in the keeper, lays its
// canonical form out at dir without following a link on the way. The
// files belong to the sandbox user whatever opts.Writable says: a pod
// has no other owner to give them.
func (s *session) CopyIn(ctx context.Context, dir string, archive io.Reader, opts sandbox.CopyInOptions) (*firewall.Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.dead {
		return nil, sandbox.ErrSessionClosed
	}
	m, ok := s.inMount(dir)
	if !path.IsAbs(dir) || path.Clean(dir) != dir || !ok || m.ReadOnly {
		return nil, fmt.Errorf("%w: %q is not inside a writable volume of the session", sandbox.ErrSpec, dir)
	}
	staged, err := os.CreateTemp("", "strictgrade-k8s-copyin-*.tar")
	if err != nil {
		return nil, fmt.Errorf("kubernetes: staging file: %w", err)
	}
	defer os.Remove(staged.Name())
	defer staged.Close()
	man, err := firewall.Filter(ctx, archive, staged, opts.Policy)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeLoad(pw, [][]string{{staged.Name()}})) }()
	defer pr.Close()
	stderr := &capbuf.Buffer{Max: 4 << 10}
	code, err := s.b.exec(ctx, s.name, keepContainer, []string{"python3", "-I", "-S", "-c", loadScript, "--into", dir}, pr, nil, stderr)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: copy into session %s: %w", s.name, err)
	}
	if code != 0 {
		msg, _ := stderr.Result()
		return nil, fmt.Errorf("kubernetes: copy into session %s at %s: exit %d: %s", s.name, dir, code, bytes.TrimSpace(msg))
	}
	return man, nil
}

// CopyOut implements sandbox.Session: the keeper's tree writer reads p,
// reached through directories only, and the archive crosses the firewall
// under pol. The session is not paused meanwhile: its processes, unless
// Stop ended them, may change files as they are read (a file that changes
// under the reader is an error). Only the session's volumes can be read.
func (s *session) CopyOut(ctx context.Context, p string, pol firewall.Policy) (sandbox.Collected, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.dead {
		return sandbox.Collected{}, sandbox.ErrSessionClosed
	}
	if !path.IsAbs(p) || path.Clean(p) != p {
		return sandbox.Collected{}, fmt.Errorf("%w: path %q", sandbox.ErrSpec, p)
	}
	if _, ok := s.inMount(p); !ok {
		return sandbox.Collected{}, fmt.Errorf("%w: %s is in no volume of the session (this backend reads sessions' volumes only)", sandbox.ErrSpec, p)
	}
	var buf bytes.Buffer
	man, err := s.b.readTree(ctx, s.name, p, path.Base(p), pol, &buf)
	if err != nil {
		return sandbox.Collected{}, err
	}
	return sandbox.Collected{Archive: buf.Bytes(), Manifest: man}, nil
}

// Stop implements sandbox.Session: every process in the work container
// but its waiting main process is killed until none is left; the files
// stay for CopyOut.
func (s *session) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.ErrSessionClosed
	}
	if s.stopped || s.dead {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, stopTimeout+5*time.Second)
	defer cancel()
	stderr := &capbuf.Buffer{Max: 4 << 10}
	code, err := s.b.exec(sctx, s.name, workContainer,
		[]string{"python3", "-I", "-S", "-c", sessionKill, strconv.Itoa(int(stopTimeout / time.Second))}, nil, nil, stderr)
	if err == nil && code != 0 {
		msg, _ := stderr.Result()
		err = fmt.Errorf("exit %d: %s", code, bytes.TrimSpace(msg))
	}
	if err != nil {
		// Processes that could not be ended would go on changing the
		// files: the pod goes instead.
		s.kill(ctx)
		return fmt.Errorf("kubernetes: stop session %s: %w", s.name, err)
	}
	s.stopped = true
	return nil
}

// Close implements sandbox.Session: the pod is deleted. It is safe to call
// more than once, and deletes even when ctx is cancelled.
func (s *session) Close(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if !s.dead {
		_ = s.b.deletePod(ctx, s.name)
	}
}
