package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/sandbox"
)

// Start implements sandbox.Starter. The session has no main process: its
// wall clock kills it whether or not anyone calls Close.
func (f *Fake) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Session, error) {
	if spec.StreamOut != nil {
		return nil, fmt.Errorf("%w: a session has no stream-out directory", sandbox.ErrSpec)
	}
	spec.Cmd = nil
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	// Trees become read-only volumes, as for Prepare, removed with the
	// session.
	vspec, drop, err := sandbox.TreeVolumes(ctx, f, spec)
	if err != nil {
		drop(ctx)
		return nil, err
	}
	b, err := f.newBox(ctx, vspec)
	if err != nil {
		drop(ctx)
		return nil, err
	}
	s := &session{b: b, drop: drop}
	s.timer = time.AfterFunc(b.lim.Wall, func() { b.kill(killTimeout) })
	return s, nil
}

type session struct {
	b      *box
	timer  *time.Timer
	mu     sync.Mutex // serialises the calls
	closed bool
	drop   func(context.Context) // removes the trees' volumes
}

func (s *session) ID() string      { return s.b.id }
func (s *session) ImageID() string { return s.b.img.id }

// alive reports whether the session can still run commands.
func (s *session) alive() bool {
	select {
	case <-s.b.dead:
		return false
	default:
		return !s.closed
	}
}

func (s *session) Exec(ctx context.Context, e sandbox.ExecSpec) (*sandbox.ExecResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.alive() {
		return nil, sandbox.ErrSessionClosed
	}
	if len(e.Cmd) == 0 {
		return nil, fmt.Errorf("%w: empty command", sandbox.ErrSpec)
	}
	wall := e.Wall
	if wall <= 0 {
		wall = sandbox.DefaultLimits.Wall
	}
	wall = min(wall, s.b.lim.Wall)
	stdout := &capBuffer{max: orDefault(e.StdoutBytes, sandbox.DefaultLimits.StdoutBytes)}
	stderr := &capBuffer{max: orDefault(e.StderrBytes, sandbox.DefaultLimits.StderrBytes)}
	var stdin io.Reader = bytes.NewReader(nil)
	if e.Stdin != nil {
		stdin = e.Stdin
	}
	dir := e.WorkDir
	if dir == "" {
		dir = s.b.spec.WorkDir
	}
	start := time.Now()
	code, timedOut, err := s.b.exec(ctx, e.Cmd, append(append([]string(nil), s.b.spec.Env...), e.Env...), dir, stdin, stdout, stderr, wall, true)
	if err != nil {
		return nil, err
	}
	if !s.alive() {
		return nil, fmt.Errorf("%w: the session was killed while the command ran", sandbox.ErrSessionClosed)
	}
	res := &sandbox.ExecResult{Code: code, Exit: sandbox.ExitExited, Duration: time.Since(start)}
	if timedOut {
		res.Exit = sandbox.ExitTimeout
	}
	res.Stdout, res.StdoutTruncated = stdout.bytes()
	res.Stderr, res.StderrTruncated = stderr.bytes()
	return res, nil
}

func orDefault(v, def int64) int64 {
	if v <= 0 {
		return def
	}
	return v
}

// writable reports whether dir lies at or below a writable mount.
func (s *session) writable(dir string) bool {
	for _, m := range s.b.spec.Mounts {
		if !m.ReadOnly && sandbox.Within(dir, m.Target) {
			return true
		}
	}
	return false
}

func (s *session) CopyIn(ctx context.Context, dir string, archive io.Reader, opts sandbox.CopyInOptions) (*firewall.Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, sandbox.ErrSessionClosed
	}
	if !path.IsAbs(dir) || path.Clean(dir) != dir || !s.writable(dir) {
		return nil, fmt.Errorf("%w: %q is not inside a writable volume of the session", sandbox.ErrSpec, dir)
	}
	canonical, man, err := filter(ctx, archive, opts.Policy)
	if err != nil {
		return nil, err
	}
	t, rel, _, err := s.b.resolve(dir)
	if err != nil {
		return nil, err
	}
	if k, ok := t.stat(rel); !ok || k != kindDir {
		return nil, fmt.Errorf("sandboxtest: copy into session: %s is not a directory", dir)
	}
	if err := t.extract(canonical, rel, owner(opts)); err != nil {
		return nil, fmt.Errorf("sandboxtest: copy into session: %w", err)
	}
	return man, nil
}

func (s *session) CopyOut(ctx context.Context, p string, pol firewall.Policy) (sandbox.Collected, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.Collected{}, sandbox.ErrSessionClosed
	}
	if !path.IsAbs(p) || path.Clean(p) != p {
		return sandbox.Collected{}, fmt.Errorf("%w: path %q", sandbox.ErrSpec, p)
	}
	// Every directory on the way must be one, not a link.
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := 1; i < len(parts); i++ {
		dir := "/" + strings.Join(parts[:i], "/")
		t, rel, _, err := s.b.resolve(dir)
		if err != nil {
			continue // the root filesystem's own directories
		}
		if k, ok := t.stat(rel); !ok || k != kindDir {
			return sandbox.Collected{}, fmt.Errorf("%w: %s is not a directory (a link or a file on the way to %s)", sandbox.ErrCollect, dir, p)
		}
	}
	return s.b.collect(ctx, p, pol)
}

func (s *session) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.ErrSessionClosed
	}
	s.b.kill(killStopped)
	return nil
}

func (s *session) Close(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.timer.Stop()
	s.b.kill(killRemoved)
	s.b.f.remove(s.b)
	s.drop(ctx)
}
