package sandboxtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/sandbox"
)

// Fake is an in-process sandbox.Backend. Its images are Programs (Go
// functions) registered by name; its volumes, tmpfs mounts and stream-out
// directories are in-memory trees. It is honest about what the interface
// promises: limits end runs with the exit kinds Docker reports (with the
// same precedence), output is capped the same way, every archive crosses
// the firewall where the Docker backend filters it (CopyIn and NewVolumeWith,
// Spec.Collect, StreamOut, Session.CopyIn and CopyOut), read-only places
// refuse writes, and every object carries the run's labels until it is
// removed. What a Go function cannot have — capabilities, seccomp, a
// network — a Program can only observe as a hardened container would
// report it. Fake passes Run, the conformance suite.
type Fake struct {
	mu      sync.Mutex
	images  map[string]image // by ID
	names   map[string]string
	volumes map[string]*volume
	boxes   map[string]*box
	closed  bool
}

type image struct {
	id, name string
	prog     Program
}

type volume struct {
	name, run, phase string
	created          time.Time
	tree             *tree
	users            int // sandboxes mounting it
}

var _ sandbox.Backend = (*Fake)(nil)

// NewFake returns a Fake with no images.
func NewFake() *Fake {
	return &Fake{images: map[string]image{}, names: map[string]string{}, volumes: map[string]*volume{}, boxes: map[string]*box{}}
}

// Image registers prog as the image called name and returns its ID, which
// is "sha256:" and the SHA-256 of the name. Specs may name an image by
// either.
func (f *Fake) Image(name string, prog Program) string {
	sum := sha256.Sum256([]byte(name))
	id := "sha256:" + hex.EncodeToString(sum[:])
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[id] = image{id: id, name: name, prog: prog}
	f.names[name] = id
	return id
}

// ImageID implements sandbox.Images.
func (f *Fake) ImageID(ctx context.Context, ref string) (string, error) {
	img, err := f.image(ref)
	return img.id, err
}

func (f *Fake) image(ref string) (image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.names[ref]; ok {
		ref = id
	}
	img, ok := f.images[ref]
	if !ok {
		return image{}, fmt.Errorf("sandboxtest: no such image: %s", ref)
	}
	return img, nil
}

// Runtime implements sandbox.Backend.
func (f *Fake) Runtime() string { return "fake" }

// Close implements sandbox.Backend. The objects left (there should be none)
// stay visible to Leftovers.
func (f *Fake) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

func objectName(run, phase string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "sg-" + run + "-" + phase + "-" + hex.EncodeToString(b[:])
}

// NewVolume implements sandbox.Volumes.
func (f *Fake) NewVolume(ctx context.Context, run, phase string) (string, error) {
	if !sandbox.ValidName(run) || !sandbox.ValidName(phase) {
		return "", fmt.Errorf("%w: run and phase must be [a-z0-9-] of at most 64 bytes", sandbox.ErrSpec)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	v := &volume{name: objectName(run, phase), run: run, phase: phase, created: time.Now(), tree: newTree(sandbox.UID, 0, 0)}
	f.mu.Lock()
	f.volumes[v.name] = v
	f.mu.Unlock()
	return v.name, nil
}

// NewVolumeWith implements sandbox.Volumes: a rejected archive creates no
// volume.
func (f *Fake) NewVolumeWith(ctx context.Context, run, phase string, archive io.Reader, opts sandbox.CopyInOptions) (string, *firewall.Manifest, error) {
	if archive == nil {
		return "", nil, fmt.Errorf("%w: nil archive", sandbox.ErrSpec)
	}
	if !sandbox.ValidName(run) || !sandbox.ValidName(phase) {
		return "", nil, fmt.Errorf("%w: run and phase must be [a-z0-9-] of at most 64 bytes", sandbox.ErrSpec)
	}
	canonical, man, err := filter(ctx, archive, opts.Policy)
	if err != nil {
		return "", nil, err
	}
	name, err := f.NewVolume(ctx, run, phase)
	if err != nil {
		return "", nil, err
	}
	v, _ := f.volume(name)
	if err := v.tree.extract(canonical, "", owner(opts)); err != nil {
		_ = f.RemoveVolume(ctx, name)
		return "", nil, err
	}
	return name, man, nil
}

// CopyIn implements sandbox.Volumes.
func (f *Fake) CopyIn(ctx context.Context, run, name string, archive io.Reader, opts sandbox.CopyInOptions) (*firewall.Manifest, error) {
	if !sandbox.ValidName(run) {
		return nil, fmt.Errorf("%w: run must be [a-z0-9-] of at most 64 bytes", sandbox.ErrSpec)
	}
	canonical, man, err := filter(ctx, archive, opts.Policy)
	if err != nil {
		return nil, err
	}
	v, err := f.volume(name)
	if err != nil {
		return nil, err
	}
	if err := v.tree.extract(canonical, "", owner(opts)); err != nil {
		return nil, err
	}
	return man, nil
}

func owner(opts sandbox.CopyInOptions) int {
	if opts.Writable {
		return sandbox.UID
	}
	return 0
}

// filter passes archive through the firewall into memory.
func filter(ctx context.Context, archive io.Reader, pol firewall.Policy) ([]byte, *firewall.Manifest, error) {
	var buf bytes.Buffer
	man, err := firewall.Filter(ctx, archive, &buf, pol)
	if err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), man, nil
}

func (f *Fake) volume(name string) (*volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.volumes[name]
	if !ok {
		return nil, fmt.Errorf("sandboxtest: no such volume: %s", name)
	}
	return v, nil
}

// RemoveVolume implements sandbox.Volumes. A volume a sandbox still mounts
// is refused, as the daemon refuses it.
func (f *Fake) RemoveVolume(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.volumes[name]
	if !ok {
		return nil
	}
	if v.users > 0 {
		return fmt.Errorf("sandboxtest: remove volume %s: volume is in use", name)
	}
	delete(f.volumes, name)
	return nil
}

// Leftovers implements sandbox.Reaper.
func (f *Fake) Leftovers(ctx context.Context, run string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id, b := range f.boxes {
		if b.spec.Run == run {
			out = append(out, "container/"+id)
		}
	}
	for name, v := range f.volumes {
		if v.run == run {
			out = append(out, "volume/"+name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// GC implements sandbox.Reaper. Every object of a Fake belongs to this
// process, which is alive: without All, only objects older than MaxAge go.
func (f *Fake) GC(ctx context.Context, opts sandbox.GCOptions) (sandbox.GCReport, error) {
	maxAge := opts.MaxAge
	if maxAge <= 0 {
		maxAge = sandbox.DefaultMaxAge
	}
	now := time.Now()
	var rep sandbox.GCReport
	pick := func(run string, created time.Time) bool {
		switch {
		case opts.Run != "" && run != opts.Run:
			return false
		case opts.OlderThan > 0 && now.Sub(created) < opts.OlderThan:
			return false
		case opts.All || now.Sub(created) > maxAge:
			return true
		}
		rep.Kept++
		return false
	}
	f.mu.Lock()
	var doomed []*box
	for id, b := range f.boxes {
		if pick(b.spec.Run, b.created) {
			rep.Containers = append(rep.Containers, id)
			doomed = append(doomed, b)
		}
	}
	f.mu.Unlock()
	if !opts.DryRun {
		for _, b := range doomed {
			b.kill(killRemoved)
			f.remove(b)
		}
	}
	f.mu.Lock()
	for name, v := range f.volumes {
		if pick(v.run, v.created) {
			rep.Volumes = append(rep.Volumes, name)
			if !opts.DryRun {
				delete(f.volumes, name)
			}
		}
	}
	f.mu.Unlock()
	slices.Sort(rep.Containers)
	slices.Sort(rep.Volumes)
	return rep, nil
}

// Why a sandbox was killed; several may apply, and the exit kind follows
// sandbox's precedence.
const (
	killTimeout = 1 << iota
	killOOM
	killOutput
	killStopped // Stop, a cancelled context or a session's backstop
	killRemoved
)

// box is one sandbox: its mounts, limits, accounting and fate.
type box struct {
	f       *Fake
	id      string
	img     image
	spec    sandbox.Spec
	lim     sandbox.Limits
	created time.Time
	mounts  map[string]mount // by target
	tmp     *tree
	stream  *tree // the StreamOut directory, if any

	mu     sync.Mutex
	memory int64 // allocated by programs
	pids   int64
	killed int // kill reasons
	dead   chan struct{}
	gone   bool // removed
}

type mount struct {
	v  *volume
	ro bool
}

// newBox validates spec and creates the sandbox, mounting its volumes.
func (f *Fake) newBox(ctx context.Context, spec sandbox.Spec) (*box, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	lim, err := spec.Limits.Resolve()
	if err != nil {
		return nil, err
	}
	if spec.Runtime != "" && spec.Runtime != "fake" {
		return nil, fmt.Errorf("%w: runtime %q not available", sandbox.ErrPreflight, spec.Runtime)
	}
	if spec.StreamOut != nil {
		so, err := spec.StreamOut.Resolve()
		if err != nil {
			return nil, err
		}
		spec.StreamOut = &so
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	img, err := f.image(spec.Image)
	if err != nil {
		return nil, err
	}
	b := &box{
		f: f, id: strings.TrimPrefix(objectName(spec.Run, spec.Phase), "sg-"), img: img, spec: spec, lim: lim, created: time.Now(),
		mounts: map[string]mount{}, tmp: newTree(sandbox.UID, lim.TmpfsBytes, 0), dead: make(chan struct{}), pids: 1,
	}
	if so := spec.StreamOut; so != nil {
		b.stream = newTree(sandbox.UID, so.Bytes, so.Inodes)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range spec.Mounts {
		v, ok := f.volumes[m.Volume]
		if !ok {
			return nil, fmt.Errorf("sandboxtest: mount %s: no such volume", m.Volume)
		}
		b.mounts[m.Target] = mount{v: v, ro: m.ReadOnly}
	}
	for _, m := range b.mounts {
		m.v.users++
	}
	f.boxes[b.id] = b
	return b, nil
}

// remove deletes a sandbox and releases its volumes; it is idempotent.
func (f *Fake) remove(b *box) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b.gone {
		return
	}
	b.gone = true
	for _, m := range b.mounts {
		m.v.users--
	}
	delete(f.boxes, b.id)
}

// kill ends every process of the sandbox for the given reason.
func (b *box) kill(why int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.killed |= why
	select {
	case <-b.dead:
	default:
		close(b.dead)
	}
}

func (b *box) reasons() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.killed
}

// charge adds n bytes of memory and kills the sandbox past its limit; the
// tmpfs mounts count against it as they do in a memory cgroup.
func (b *box) charge(n int64) {
	b.mu.Lock()
	b.memory += n
	used := b.memory + b.tmp.size()
	if b.stream != nil {
		used += b.stream.size()
	}
	over := used > b.lim.MemoryBytes
	b.mu.Unlock()
	if over {
		b.kill(killOOM)
	}
}

func (b *box) spawn() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	// The init process counts too.
	if b.pids+1 >= b.lim.PIDs {
		return &pidsError{}
	}
	b.pids++
	return nil
}

type pidsError struct{}

func (*pidsError) Error() string { return "fork/exec: " + syscall.EAGAIN.Error() }
func (*pidsError) Unwrap() error { return syscall.EAGAIN }

func (t *tree) size() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bytes
}

// resolve finds the tree that holds full: a mount (the deepest), /tmp, the
// stream-out directory, or the root filesystem, which is read-only and
// holds nothing a program can read.
func (b *box) resolve(full string) (*tree, string, bool, error) {
	best, bestLen := "", -1
	for target := range b.mounts {
		if sandbox.Within(full, target) && len(target) > bestLen {
			best, bestLen = target, len(target)
		}
	}
	rel := func(base string) string { return strings.TrimPrefix(strings.TrimPrefix(full, base), "/") }
	switch {
	case bestLen >= 0:
		m := b.mounts[best]
		return m.v.tree, rel(best), m.ro, nil
	case sandbox.Within(full, "/tmp"):
		return b.tmp, rel("/tmp"), false, nil
	case b.stream != nil && sandbox.Within(full, b.spec.StreamOut.Dir):
		return b.stream, rel(b.spec.StreamOut.Dir), false, nil
	}
	return nil, "", true, pathErr("open", full, rootErr(full))
}

// rootErr is what the read-only root filesystem answers: nothing there
// can be written, and the fake's images have no files of their own.
func rootErr(string) error { return syscall.EROFS }

// collect copies p out of the sandbox through the firewall. What the
// workload left that is not a directory or regular file, or that the
// firewall refuses, is ErrCollect; a path that is not there is the
// backend's error, as the daemon's copy reports it.
func (b *box) collect(ctx context.Context, p string, pol firewall.Policy) (sandbox.Collected, error) {
	t, rel, _, err := b.resolve(p)
	if err != nil {
		return sandbox.Collected{}, fmt.Errorf("sandboxtest: copy %s out of the sandbox: %w", p, err)
	}
	k, ok := t.stat(rel)
	if !ok {
		return sandbox.Collected{}, fmt.Errorf("sandboxtest: copy %s out of the sandbox: %w", p, pathErr("stat", p, syscall.ENOENT))
	}
	if k != kindDir && k != kindFile {
		return sandbox.Collected{}, fmt.Errorf("%w: %s is neither a directory nor a regular file", sandbox.ErrCollect, p)
	}
	var raw bytes.Buffer
	if err := t.archive(&raw, rel, path.Base(p)); err != nil {
		return sandbox.Collected{}, err
	}
	return filterOut(ctx, raw.Bytes(), p, pol)
}

// filterOut passes an outgoing archive through the firewall: a refusal is
// the workload's doing (ErrCollect), an expired context the caller's.
func filterOut(ctx context.Context, raw []byte, p string, pol firewall.Policy) (sandbox.Collected, error) {
	var buf bytes.Buffer
	man, err := firewall.Filter(ctx, bytes.NewReader(raw), &buf, pol)
	switch {
	case err == nil:
		return sandbox.Collected{Archive: buf.Bytes(), Manifest: man}, nil
	case ctx.Err() != nil:
		return sandbox.Collected{}, fmt.Errorf("sandboxtest: collect %s: %w", p, ctx.Err())
	}
	return sandbox.Collected{}, fmt.Errorf("%w: %s: %w", sandbox.ErrCollect, p, err)
}

// Run implements sandbox.Runner.
func (f *Fake) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	p, err := f.Prepare(ctx, spec)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx)
}

// Prepare implements sandbox.Preparer. Trees become read-only volumes
// (sandbox.PrepareWithTreeVolumes).
func (f *Fake) Prepare(ctx context.Context, spec sandbox.Spec) (sandbox.Prepared, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return sandbox.PrepareWithTreeVolumes(ctx, f, spec, f.prepare)
}

func (f *Fake) prepare(ctx context.Context, spec sandbox.Spec) (sandbox.Prepared, error) {
	b, err := f.newBox(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &prepared{b: b}, nil
}

type prepared struct {
	b    *box
	mu   sync.Mutex
	used bool
}

func (p *prepared) Run(ctx context.Context) (*sandbox.Result, error) {
	p.mu.Lock()
	if p.used {
		p.mu.Unlock()
		return nil, fmt.Errorf("%w: a prepared sandbox runs once", sandbox.ErrSpec)
	}
	p.used = true
	p.mu.Unlock()
	return p.b.run(ctx)
}

func (p *prepared) Close(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.used {
		p.used = true
		p.b.f.remove(p.b)
	}
}

// run runs the image's program once under the sandbox's limits, collects
// what the spec asks for, and removes the sandbox.
func (b *box) run(ctx context.Context) (*sandbox.Result, error) {
	defer b.f.remove(b)
	defer b.kill(killRemoved) // whatever is left of the program ends with its sandbox
	so := b.spec.StreamOut
	stdout := &capBuffer{max: b.lim.StdoutBytes}
	stderr := &capBuffer{max: b.lim.StderrBytes}
	if b.lim.KillOnOutputLimit && so == nil {
		stdout.onOver = func() { b.kill(killOutput) }
	}
	out := stdout
	if so != nil {
		out = stderr // the command's standard output goes to standard error
	}
	var stdin io.Reader = bytes.NewReader(nil)
	if b.spec.Stdin != nil {
		stdin = b.spec.Stdin
	}
	start := time.Now()
	// The fake measures no CPU time: a wall clock of the budget stands
	// in for it (sandbox.Unmetered).
	wall := b.lim.Wall
	if b.lim.CPU > 0 {
		wall = sandbox.Unmetered(b.lim.CPU)
	}
	code, _, err := b.exec(ctx, b.spec.Cmd, b.spec.Env, b.spec.WorkDir, stdin, out, stderr, wall, false)
	if err != nil {
		return nil, err
	}
	res := &sandbox.Result{ID: b.id, ImageID: b.img.id, Code: code, Duration: time.Since(start)}
	why := b.reasons()
	switch {
	case why&killTimeout != 0:
		res.Exit, res.Limit = sandbox.ExitTimeout, sandbox.LimitWall
	case why&killOOM != 0:
		res.Exit = sandbox.ExitOOM
	case why&killOutput != 0:
		res.Exit = sandbox.ExitOutputLimit
	case why&killRemoved != 0:
		return nil, fmt.Errorf("sandboxtest: sandbox %s was removed while it ran", b.id)
	default:
		res.Exit = sandbox.ExitExited
	}
	if res.Exit != sandbox.ExitExited {
		res.Code = 137
	}
	res.Stdout, res.StdoutTruncated = stdout.bytes()
	res.Stderr, res.StderrTruncated = stderr.bytes()
	if so != nil {
		res.Stdout, res.StdoutTruncated = nil, false
	}
	if len(b.spec.Collect) > 0 || so != nil {
		res.Collected = map[string]sandbox.Collected{}
	}
	for _, p := range b.spec.Collect {
		c, err := b.collect(ctx, p, b.spec.CollectPolicy)
		if err != nil {
			return nil, err
		}
		res.Collected[p] = c
	}
	if so != nil && res.Exit == sandbox.ExitExited {
		var raw bytes.Buffer
		if err := b.stream.archive(&raw, "", path.Base(so.Dir)); err != nil {
			return nil, err
		}
		c, err := filterOut(ctx, raw.Bytes(), so.Dir, b.spec.CollectPolicy)
		if err != nil {
			return nil, err
		}
		res.Collected[so.Dir] = c
	}
	return res, nil
}

// exec runs the image's program as one process with cmd and waits for it
// to end, for its wall clock, for the sandbox to be killed or for ctx. The
// wall clock of a run kills the whole sandbox; that of a session command
// (own) kills the command alone and reports timedOut. It returns the
// program's exit status, 137 when it was killed.
func (b *box) exec(ctx context.Context, cmd, env []string, dir string, stdin io.Reader, stdout, stderr *capBuffer, wall time.Duration, own bool) (code int, timedOut bool, err error) {
	if dir == "" {
		dir = "/"
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &Proc{Args: cmd, Env: env, Dir: dir, Stdin: stdin, Stdout: stdout, Stderr: stderr, ctx: pctx, box: b, kill: make(chan struct{})}
	stdout.check, stderr.check = p.check, p.check
	finished := make(chan int, 1)
	go func() {
		code := 137 // unchanged when runtime.Goexit ends the program: killed
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintf(stderr, "panic: %v\n", r)
				code = 2
			}
			finished <- code
		}()
		if len(cmd) == 0 {
			fmt.Fprintln(stderr, "sandboxtest: no command")
			code = 127
			return
		}
		code = b.img.prog(p)
	}()
	timer := time.NewTimer(wall)
	defer timer.Stop()
	select {
	case code := <-finished:
		return code, false, nil
	case <-timer.C:
		// An exit that raced the timer is an exit, not a timeout.
		select {
		case code := <-finished:
			return code, false, nil
		default:
		}
		if own {
			p.once.Do(func() { close(p.kill) })
			return 137, true, nil
		}
		b.kill(killTimeout)
	case <-b.dead:
	case <-ctx.Done():
		b.kill(killStopped)
		return 0, false, ctx.Err()
	}
	return 137, false, nil
}

// LiveVolumes implements sandbox.LiveVolumes: a fake sandbox mounts the
// volume itself, so what is copied in later is there.
func (f *Fake) LiveVolumes() bool { return true }
