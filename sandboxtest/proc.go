package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/strictgrade/strictgrade/sandbox"
)

// A Program stands in for what an image runs: the fake calls it, on a
// goroutine of its own, for every run of the image and every command of a
// session, and takes what it returns as the exit status.
//
// A program acts on its sandbox only through its Proc, which enforces the
// sandbox's limits the way the kernel would: a write to the read-only root
// or a read-only mount fails with EROFS, one past a tmpfs's size with
// ENOSPC, a file past the file-size limit with EFBIG, a child past the pids
// limit with EAGAIN, and a dial with ENETUNREACH. When the sandbox is killed
// (its wall clock, its memory, its output cap, a Stop or a cancelled
// context), the program's goroutine ends at its next call to Proc, as a
// SIGKILL would end it; a program that never calls Proc again is abandoned,
// and nothing it does reaches the caller.
type Program func(p *Proc) int

// Proc is one process of a fake sandbox, as its Program sees it.
type Proc struct {
	Args   []string // the command, Args[0] included
	Env    []string
	Dir    string // working directory
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	ctx  context.Context
	box  *box
	kill chan struct{} // closed when this process alone is killed (a session command's own limit)
	once sync.Once
}

// Context is done when the process is killed.
func (p *Proc) Context() context.Context { return p.ctx }

// Spec returns the spec the process's sandbox was made from, as the
// caller gave it except that StreamOut's zero caps are filled in, and
// without Stdin, which the process reads from Proc.Stdin. A real workload
// cannot see its spec: Spec is for tests whose Program records what a
// phase asked the backend for (the phase, command, limits and mounts of
// each run) beside what the run received. The result is a copy a Program
// may keep.
func (p *Proc) Spec() sandbox.Spec {
	s := p.box.spec
	s.Stdin = nil
	s.Cmd = slices.Clone(s.Cmd)
	s.Env = slices.Clone(s.Env)
	s.Mounts = slices.Clone(s.Mounts)
	s.Collect = slices.Clone(s.Collect)
	if s.StreamOut != nil {
		so := *s.StreamOut
		s.StreamOut = &so
	}
	return s
}

// check ends the calling goroutine when the process has been killed.
func (p *Proc) check() {
	select {
	case <-p.box.dead:
		runtime.Goexit()
	case <-p.kill:
		runtime.Goexit()
	default:
	}
}

// abs resolves name against the working directory.
func (p *Proc) abs(name string) string {
	if !path.IsAbs(name) {
		name = path.Join(p.Dir, name)
	}
	return path.Clean(name)
}

// ReadFile reads a regular file.
func (p *Proc) ReadFile(name string) ([]byte, error) {
	p.check()
	full := p.abs(name)
	t, rel, _, err := p.box.resolve(full)
	if err != nil {
		return nil, err
	}
	return t.read(full, rel)
}

// WriteFile creates or replaces a regular file.
func (p *Proc) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return p.write(name, data, perm, false)
}

// AppendFile appends to a regular file, creating it.
func (p *Proc) AppendFile(name string, data []byte) error {
	return p.write(name, data, 0o644, true)
}

func (p *Proc) write(name string, data []byte, perm fs.FileMode, appending bool) error {
	p.check()
	full := p.abs(name)
	t, rel, ro, err := p.box.resolve(full)
	if err == nil && ro {
		err = pathErr("open", full, syscall.EROFS)
	}
	if err != nil {
		return err
	}
	if err := t.write(full, rel, data, perm, sandbox.UID, p.box.lim.FileBytes, appending); err != nil {
		return err
	}
	p.box.charge(0)
	p.check()
	return nil
}

// make runs op on the tree that holds name, refusing read-only places.
func (p *Proc) make(name string, op func(t *tree, full, rel string) error) error {
	p.check()
	full := p.abs(name)
	t, rel, ro, err := p.box.resolve(full)
	if err == nil && ro {
		err = pathErr("mkdir", full, syscall.EROFS)
	}
	if err != nil {
		return err
	}
	return op(t, full, rel)
}

// Mkdir creates a directory.
func (p *Proc) Mkdir(name string) error {
	return p.make(name, func(t *tree, full, rel string) error { return t.mkdir(full, rel, sandbox.UID) })
}

// MkdirAll creates a directory and its missing parents.
func (p *Proc) MkdirAll(name string) error {
	full := p.abs(name)
	var err error
	for i := 1; i <= len(full); i++ {
		if i == len(full) || full[i] == '/' {
			err = p.Mkdir(full[:i])
			if err != nil && !isExist(err) {
				return err
			}
		}
	}
	if isExist(err) {
		return nil
	}
	return err
}

func isExist(err error) bool {
	pe, ok := err.(*fs.PathError)
	return ok && pe.Err == syscall.EEXIST
}

// Remove removes a name that is not a directory.
func (p *Proc) Remove(name string) error {
	return p.make(name, func(t *tree, full, rel string) error { return t.remove(full, rel, sandbox.UID) })
}

// Symlink creates a symbolic link at name pointing to target.
func (p *Proc) Symlink(target, name string) error {
	return p.make(name, func(t *tree, full, rel string) error { return t.symlink(target, full, rel, sandbox.UID) })
}

// Link gives the regular file oldname a second name.
func (p *Proc) Link(oldname, name string) error {
	p.check()
	oldFull := p.abs(oldname)
	ot, oldRel, _, err := p.box.resolve(oldFull)
	if err != nil {
		return err
	}
	return p.make(name, func(t *tree, full, rel string) error {
		if t != ot {
			return pathErr("link", full, syscall.EXDEV)
		}
		return t.link(oldFull, oldRel, full, rel, sandbox.UID)
	})
}

// Mkfifo creates a named pipe.
func (p *Proc) Mkfifo(name string) error {
	return p.make(name, func(t *tree, full, rel string) error { return t.mkfifo(full, rel, sandbox.UID) })
}

// ReadDir lists the names in a directory.
func (p *Proc) ReadDir(name string) ([]string, error) {
	p.check()
	full := p.abs(name)
	t, rel, _, err := p.box.resolve(full)
	if err != nil {
		return nil, err
	}
	return t.list(full, rel)
}

// Alloc takes n more bytes of memory; past the memory limit the sandbox is
// killed as the memory cgroup would kill it (sandbox.ExitOOM).
func (p *Proc) Alloc(n int64) {
	p.check()
	p.box.charge(n)
	p.check()
}

// Spawn starts a child that lives as long as the sandbox, counted against
// the pids limit: past it, EAGAIN.
func (p *Proc) Spawn() error {
	p.check()
	return p.box.spawn()
}

// Dial tries to reach addr over the network: a sandbox has none.
func (p *Proc) Dial(network, addr string) error {
	p.check()
	return &fs.PathError{Op: "dial " + network, Path: addr, Err: syscall.ENETUNREACH}
}

// Hostname is the sandbox's host name.
func (p *Proc) Hostname() string { return "sandbox" }

// Getenv returns the value of key in the process's environment.
func (p *Proc) Getenv(key string) string {
	for _, e := range p.Env {
		if k, v, ok := strings.Cut(e, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Errorf writes a line on standard error.
func (p *Proc) Errorf(format string, args ...any) {
	fmt.Fprintf(p.Stderr, format+"\n", args...)
}

// capBuffer keeps the head of a stream up to max bytes, never
// short-writes, and calls onOver once when the stream passes max.
type capBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int64
	truncated bool
	onOver    func()
	check     func() // ends a killed writer
}

func (c *capBuffer) Write(b []byte) (int, error) {
	if c.check != nil {
		c.check()
	}
	c.mu.Lock()
	room := c.max - int64(c.buf.Len())
	over := int64(len(b)) > room
	if over {
		c.buf.Write(b[:max(room, 0)])
		c.truncated = true
	} else {
		c.buf.Write(b)
	}
	c.mu.Unlock()
	if over && c.onOver != nil {
		c.onOver()
		if c.check != nil {
			c.check()
		}
	}
	return len(b), nil
}

func (c *capBuffer) bytes() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes()), c.truncated
}
