package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"

	"github.com/strictgrade/strictgrade/internal/capbuf"
	"github.com/strictgrade/strictgrade/internal/initproto"
	"github.com/strictgrade/strictgrade/sandbox"
)

// drainTimeout bounds how long Run waits for the attach stream to end after
// the container has stopped. The stream is capped; on an oversubscribed
// host its last megabytes can take long to arrive (15 s was seen to fall
// short at a load average of 25), and running out of time is an ERROR.
const drainTimeout = time.Minute

// Prepared is a hardened container that has been created, and its profile
// checked, but not given its work: a phase can be made ready while another
// runs. Run it once, or Close it; both remove the container.
type Prepared struct {
	d       *Docker
	id      string
	imageID string
	spec    Spec
	lim     Limits
	// streamVol is the host tmpfs volume that holds StreamOut.Dir under
	// gVisor; removed with the container.
	streamVol string
	// initMode: the container runs sginit, which takes the frame (the
	// command and the trees) on standard input (ADR 0013).
	initMode bool
	// armed is set once the container is attached and started; a pooled
	// container is armed before anyone asks for it.
	armed *armed
	// created is when the container was made; the pool discards one that
	// waited too long.
	created time.Time
	// shape is the pool's shape the container was taken from; nil when
	// it was made for its caller.
	shape *shape
	// dropTrees removes the volumes that stand in for trees when the
	// backend has no sginit; nil otherwise.
	dropTrees func(context.Context)
	mu        sync.Mutex
	used      bool
}

// armed is a started container's streams and its exit, watched from the
// moment before it started.
type armed struct {
	att      types.HijackedResponse
	stopWait context.CancelFunc
	exitC    chan container.WaitResponse // at most one value
	errC     chan error                  // at most one value
	gone     chan struct{}               // closed when either has arrived
	stdout   *capbuf.Buffer
	stderr   *capbuf.Buffer
	overflow chan struct{}
	copyDone chan error
	// meter reads the container's CPU accounting; nil when the spec has
	// no CPU budget or the host's cgroups cannot be read.
	meter *cpuMeter
}

// exited reports whether the container has already ended.
func (a *armed) exited() bool {
	select {
	case <-a.gone:
		return true
	default:
		return false
	}
}

// release closes the streams and stops watching.
func (a *armed) release() {
	a.stopWait()
	a.att.Close()
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

// withStdin reports whether the container's standard input is attached.
func (p *Prepared) withStdin() bool { return p.initMode || p.spec.Stdin != nil }

// Prepare implements sandbox.Preparer: it creates the container for spec,
// and checks its profile, without giving it its work. A spec with trees
// may be served by a pooled container, already started and waiting.
func (d *Docker) Prepare(ctx context.Context, spec Spec) (sandbox.Prepared, error) {
	p, err := d.prepare(ctx, spec)
	if err != nil {
		return nil, err // an untyped nil, never a nil *Prepared
	}
	return p, nil
}

// resolve validates spec and fills in what the backend decides: limits,
// the runtime, StreamOut's caps.
func (d *Docker) resolve(spec Spec) (Spec, Limits, error) {
	if err := spec.Validate(); err != nil {
		return Spec{}, Limits{}, err
	}
	lim, err := spec.Limits.Resolve()
	if err != nil {
		return Spec{}, Limits{}, err
	}
	if spec.Runtime == "" {
		// The resolved name, so that the profile knows the runtime
		// even when it is the daemon's default.
		spec.Runtime = d.info.Runtime
	}
	if spec.StreamOut != nil {
		so, err := spec.StreamOut.Resolve()
		if err != nil {
			return Spec{}, Limits{}, err
		}
		spec.StreamOut = &so
	}
	return spec, lim, nil
}

func (d *Docker) prepare(ctx context.Context, spec Spec) (*Prepared, error) {
	return d.prepareFor(ctx, spec, true)
}

// prepareFor is prepare; without viaInit, trees are always laid out as
// volumes (a session's container never reads sginit's frame).
func (d *Docker) prepareFor(ctx context.Context, spec Spec, viaInit bool) (*Prepared, error) {
	spec, lim, err := d.resolve(spec)
	if err != nil {
		return nil, err
	}
	if len(spec.Trees) > 0 && !(viaInit && d.usesInit(spec)) {
		vspec, drop, err := sandbox.TreeVolumes(ctx, d, spec)
		if err != nil {
			drop(ctx)
			return nil, err
		}
		p, err := d.create(ctx, vspec, lim)
		if err != nil {
			drop(ctx)
			return nil, err
		}
		p.dropTrees = drop
		return p, nil
	}
	if len(spec.Trees) > 0 {
		if spec, err = treesThroughFirewall(ctx, spec); err != nil {
			return nil, err
		}
		if p := d.pool.take(ctx, spec, lim); p != nil {
			return p, nil
		}
	}
	return d.create(ctx, spec, lim)
}

// create makes the container for a resolved spec.
func (d *Docker) create(ctx context.Context, spec Spec, lim Limits) (*Prepared, error) {
	initMode := d.usesInit(spec)
	var vol string
	var share sharedDir
	if initMode {
		v, err := d.initVolume(ctx)
		if err != nil {
			return nil, err
		}
		vol = v
		if share, err = d.sharedDirOf(ctx, spec); err != nil {
			return nil, err
		}
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
	hc.Resources.CpusetCpus = d.cpuset
	if initMode {
		withInit(cfg, hc, spec, lim, vol, d.cfg.PoolMaxIdle+time.Minute, share)
	}
	created := time.Now()
	id, ins, err := d.createContainer(ctx, objectName(spec.Run, spec.Phase), cfg, hc)
	if err == nil && share.vol != "" {
		err = d.checkShared(ctx, spec.Image, share.vol)
	}
	if err != nil {
		if id != "" {
			d.removeContainer(ctx, id)
		}
		if errors.Is(err, errSharedGone) {
			// What the daemon made in its place, empty.
			_ = d.RemoveVolume(context.WithoutCancel(ctx), share.vol)
		}
		d.removeStreamVolume(ctx, streamVol)
		return nil, err
	}
	return &Prepared{d: d, id: id, imageID: ins.Image, spec: spec, lim: lim, streamVol: streamVol, initMode: initMode, created: created}, nil
}

// Close removes the container if Run has not; it is safe to call more
// than once and on every path.
func (p *Prepared) Close(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.used {
		p.used = true
		p.remove(ctx)
		if p.shape != nil {
			p.d.pool.released(p.shape)
		}
	}
}

// remove removes the container and what stands beside it: its stream-out
// volume, its tree volumes, its streams.
func (p *Prepared) remove(ctx context.Context) {
	if a := p.armed; a != nil {
		if !a.exited() {
			// A started container that never ran, or one that still
			// runs: killed, and its exit awaited, before it is removed,
			// so that the removal does not race the daemon's own work
			// on the exit (removeContainer retries the ones that still
			// do).
			kctx, cancel := p.d.cleanupCtx(ctx)
			if err := p.d.cli.ContainerKill(kctx, p.id, "SIGKILL"); err == nil {
				select {
				case <-a.gone:
				case <-time.After(10 * time.Second):
				case <-kctx.Done():
				}
			}
			cancel()
		}
		a.release()
	}
	p.d.removeContainer(ctx, p.id)
	p.d.removeStreamVolume(ctx, p.streamVol)
	if p.dropTrees != nil {
		p.dropTrees(ctx)
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

// arm attaches to the container, starts watching for its exit and starts
// it. Order matters: attach and wait are registered before start, so
// neither the first bytes nor a fast exit can be missed. ctx bounds the
// calls; the watch lasts until release.
func (p *Prepared) arm(ctx context.Context) (*armed, error) {
	d, id := p.d, p.id
	att, err := d.cli.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: p.withStdin(), Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("engine: attach: %w", err)
	}
	waitCtx, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	a := &armed{
		att: att, stopWait: stopWait,
		exitC: make(chan container.WaitResponse, 1), errC: make(chan error, 1), gone: make(chan struct{}),
		overflow: make(chan struct{}, 1), copyDone: make(chan error, 1),
	}
	waitC, werrC := d.cli.ContainerWait(waitCtx, id, container.WaitConditionNextExit)
	go func() {
		select {
		case st := <-waitC:
			a.exitC <- st
		case err := <-werrC:
			a.errC <- err
		}
		close(a.gone)
	}()
	outCap, killOnOver := p.stdoutCap()
	signalOver := func() {
		if killOnOver {
			select {
			case a.overflow <- struct{}{}:
			default:
			}
		}
	}
	// Only standard output, the graded stream, stops the container;
	// standard error past its cap is drained and dropped. Under sginit it
	// also carries the ready line first.
	errCap := p.lim.StderrBytes
	if p.initMode {
		errCap += int64(len(initproto.Ready))
	}
	a.stdout = &capbuf.Buffer{Max: outCap, OnOver: signalOver}
	a.stderr = &capbuf.Buffer{Max: errCap}
	var stdout io.Writer = a.stdout
	if d.outputRate > 0 {
		stdout = &slowWriter{w: a.stdout, rate: d.outputRate}
	}
	go func() { a.copyDone <- demux(att.Reader, stdout, a.stderr, nil) }()
	if err := d.startContainer(ctx, id); err != nil {
		a.release()
		return nil, fmt.Errorf("engine: start: %w", err)
	}
	if p.lim.CPU > 0 {
		a.meter = d.meterOf(ctx, id)
	}
	return a, nil
}

// meterOf opens the CPU meter of a started container, or returns nil when
// it cannot: the run then keeps to the wall clock.
func (d *Docker) meterOf(ctx context.Context, id string) *cpuMeter {
	ins, err := d.cli.ContainerInspect(ctx, id)
	if err != nil || ins.State == nil {
		return nil
	}
	m, err := openMeter(ins.State.Pid, id)
	if err != nil {
		d.log.Debug("no CPU meter; the CPU budget is a wall clock", "container", id, "err", err)
		return nil
	}
	return m
}

// startContainer starts a created container. The request is never cut short: a
// start cancelled while the daemon (20.10) runs it leaves a container that
// it lists as "Removal In Progress" and no longer knows by ID, which no
// removal reaches (seen when a backend closed while its pool was starting
// sandboxes). So the start runs to its end on a context of its own,
// bounded by the cleanup timeout, and a cancelled ctx is an error after
// it; the caller removes the container as on any failed start.
func (d *Docker) startContainer(ctx context.Context, id string) error {
	sctx, cancel := d.cleanupCtx(ctx)
	defer cancel()
	if err := d.cli.ContainerStart(sctx, id, container.StartOptions{}); err != nil {
		return err
	}
	return ctx.Err()
}

// Run gives the prepared container its work, waits for it under its
// limits, collects the requested paths and removes it. The wall-clock
// limit counts from here, not from the container's start.
func (p *Prepared) Run(ctx context.Context) (*Result, error) {
	p.mu.Lock()
	if p.used {
		p.mu.Unlock()
		return nil, fmt.Errorf("%w: a prepared container runs once", ErrSpec)
	}
	p.used = true
	p.mu.Unlock()
	// The container has ended (or is killed) when Run returns; removing
	// it is not the caller's wait. Leftovers and Close wait for it.
	defer p.d.removeLater(ctx, p.remove)
	if p.shape != nil {
		defer p.d.pool.released(p.shape)
	}
	if p.armed == nil {
		a, err := p.arm(ctx)
		if err != nil {
			return nil, err
		}
		p.armed = a
	}
	return p.drive(ctx)
}

// drive feeds the armed container, waits for its end and reads its result.
func (p *Prepared) drive(ctx context.Context) (*Result, error) {
	d, id, spec, lim, a := p.d, p.id, p.spec, p.lim, p.armed
	res := &Result{ID: id, ImageID: p.imageID}
	start := time.Now()
	// fed is set once the grader has written all of the container's
	// standard input (or given up on it): until then a read on it that
	// waits is a wait for the host (pipewait.go).
	var fed atomic.Bool
	if p.withStdin() {
		go func() {
			defer fed.Store(true)
			if p.initMode {
				if err := initproto.Write(a.att.Conn, initArgv(spec), initTrees(spec)); err != nil {
					_ = a.att.CloseWrite()
					return
				}
			}
			if spec.Stdin != nil {
				_, _ = io.Copy(a.att.Conn, spec.Stdin)
			}
			_ = a.att.CloseWrite()
		}()
	}

	// With a CPU budget and a meter, the budget decides and the wall
	// clock is the backstop; without a meter a wall clock of the budget
	// (sandbox.Unmetered) stands in for it, as on a backend without CPU
	// accounting.
	wall, m := lim.Wall, a.meter
	if lim.CPU > 0 && m == nil {
		wall = sandbox.Unmetered(lim.CPU)
	}
	var tick <-chan time.Time
	var cpu0 time.Duration
	if lim.CPU > 0 && m != nil {
		var err error
		if cpu0, err = m.usage(); err != nil {
			m = nil
			wall = sandbox.Unmetered(lim.CPU)
		} else {
			m.out.counting = func() bool { return !a.stdout.Truncated() && !a.stderr.Truncated() }
			m.out.feeding = func() bool { return !fed.Load() }
			m.begin()
			t := time.NewTicker(meterTick(lim.CPU))
			defer t.Stop()
			tick = t.C
		}
	}
	stretched := sandbox.Stretched(wall)
	var used time.Duration
	spent := func() bool {
		u, err := m.usage()
		if err != nil {
			return false // the cgroup is gone: the container has ended
		}
		used = u - cpu0
		return used >= lim.CPU
	}
	timer := time.NewTimer(wall)
	defer timer.Stop()
	var killedFor ExitKind
	var status container.WaitResponse
wait:
	for {
		select {
		case status = <-a.exitC:
		case err := <-a.errC:
			return nil, fmt.Errorf("engine: wait: %w", err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick:
			m.sample()
			if !spent() {
				continue wait
			}
			res.Limit = sandbox.LimitCPU
			killedFor = ExitTimeout
		case <-timer.C:
			// An exit that raced the timer is an exit, not a timeout.
			select {
			case status = <-a.exitC:
			default:
				killedFor = ExitTimeout
				res.Limit = sandbox.LimitWall
				if m != nil {
					m.sample()
					if spent() {
						res.Limit = sandbox.LimitCPU
						break
					}
					// Held back by the host, the backstop stretches, up to
					// its limit, so that the budget decides: by the time
					// that was not the workload's own (it slept waiting for
					// the grader to read its output, or it has ended and
					// the daemon is still draining that output); and while
					// the host starves it of CPU, by a backstop at a time.
					elapsed := time.Since(start)
					if elapsed < stretched {
						rest := wall - m.own(start, time.Now())
						if rest <= 0 && m.starved() {
							rest = wall
						}
						if rest > 0 {
							killedFor, res.Limit = "", ""
							timer.Reset(min(max(rest, meterTick(lim.CPU)), stretched-elapsed))
							continue wait
						}
					}
				}
			}
		case <-a.overflow:
			killedFor = ExitOutputLimit
		}
		break
	}
	if killedFor != "" {
		var err error
		if status, err = d.kill(ctx, id, a.exitC, a.errC); err != nil {
			return nil, err
		}
	}
	res.Duration = time.Since(start)
	if m != nil {
		// What the cgroup counted up to the end (it may be gone by now:
		// the last reading stands).
		spent()
		res.CPU, res.Waited, res.CPUMeasured = used, m.queuedSince(), true
		// At the end of the stretch, a run the host still held back (it
		// starved it, or the workload's own time was under the backstop)
		// says nothing about the workload.
		if res.Limit == sandbox.LimitWall && (m.starved() || m.own(start, start.Add(res.Duration)) < wall) {
			idle, _ := m.idleSince()
			return nil, fmt.Errorf("%w: container %.12s ran %v, its backstop of %v stretched as far as it goes, with %v of CPU time; it waited %v for a CPU, it waited %v for the grader to read its output, and its CPUs were idle %v in all",
				sandbox.ErrOverloaded, id, res.Duration.Round(time.Millisecond), wall, used.Round(time.Millisecond), res.Waited.Round(time.Millisecond), m.outputWait().Round(time.Millisecond), idle.Round(time.Millisecond))
		}
	}
	if status.Error != nil {
		return nil, fmt.Errorf("engine: wait: %s", status.Error.Message)
	}

	select {
	case err := <-a.copyDone:
		if err != nil {
			return nil, fmt.Errorf("engine: output stream: %w", err)
		}
	case <-time.After(drainTimeout):
		return nil, fmt.Errorf("engine: output stream did not end %v after exit", drainTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res.Stdout, res.StdoutTruncated = a.stdout.Result()
	res.Stderr, res.StderrTruncated = a.stderr.Result()

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
	if p.initMode {
		// Only sginit writes before the ready line, and the workload
		// exists only after it: without it the workload never ran, and
		// what is there is sginit's own account, not the workload's.
		rest, ok := bytes.CutPrefix(res.Stderr, []byte(initproto.Ready))
		switch {
		case ok:
			res.Stderr = rest
		case killedFor == ExitTimeout || final.State.OOMKilled:
			// The trees did not fit the limits (their size may be the
			// workload's, as a submission's artifacts are): the
			// sandbox's limit decided, as it would have later.
			res.Stderr, res.StderrTruncated = nil, false
		default:
			return nil, fmt.Errorf("engine: sginit did not start the workload (exit %d): %s", res.Code, bytes.TrimSpace(res.Stderr))
		}
	}
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

// slowWriter passes writes on at rate bytes a second (Docker.outputRate).
type slowWriter struct {
	w    io.Writer
	rate int64
}

func (s *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Duration(int64(len(p)) * int64(time.Second) / s.rate))
	return s.w.Write(p)
}
