package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// maxShapes bounds how many shapes of spec the pool keeps sandboxes for;
// the least recently asked one is drained to make room.
const maxShapes = 8

// pool keeps started, never-used sandboxes for specs that go through
// sginit, a few per shape (everything of a spec but its run, command,
// standard input and trees' content: what the container's configuration
// is made of). A sandbox leaves the pool once, to be used or discarded;
// nothing is ever put back (ADR 0013).
type pool struct {
	d      *Docker
	cond   *sync.Cond      // on mu: a sandbox became ready, or a filler stopped
	ctx    context.Context // for the fillers' calls; cancelled by close
	cancel context.CancelFunc
	mu     sync.Mutex
	shapes map[string]*shape
	closed bool
	// running counts sandboxes taken from any shape and still running:
	// while one runs, no shape is refilled (making sandboxes costs the
	// cores and the daemon the running one uses, and a limit measured in
	// wall-clock time must not depend on the pool's work).
	running int
	wg      sync.WaitGroup
}

// shape is the pooled sandboxes of one shape.
type shape struct {
	spec    Spec // the shape itself: run poolRun, no command, no input
	lim     Limits
	ready   []*Prepared // started and waiting, oldest first
	filling int         // sandboxes being made
	asked   time.Time
	// demand is the most recent Warm's count: with a pool, a shape is
	// kept filled to max(Pool, demand), so that the next phase of the
	// same task finds every sandbox it needs.
	demand int
	// warms counts sandboxes asked for by Warm and not yet taken, when
	// the backend keeps no pool: exactly these are made.
	warms int
	// fails counts sandboxes that could not be made: a caller waiting
	// for one stops waiting and makes its own, which reports the error.
	fails int
	// inUse counts sandboxes taken from the shape and still running;
	// later is the refill waiting for them all to end (see released).
	inUse int
	later *time.Timer
	// refillDue is set while later is pending.
	refillDue bool
	// waiting counts take calls waiting for a sandbox of the shape.
	waiting int
}

// refillDelay is how long a shape must have no sandbox running before it
// is refilled: making sandboxes costs the same cores the running ones
// use, so the pool refills between a task's phases and grades, not during
// them.
const refillDelay = 100 * time.Millisecond

// maxFillers bounds the sandboxes of one shape made at once ahead of need;
// each call waiting for one (take) has its own made besides.
const maxFillers = 2

// want is how many sandboxes the shape is filled to.
func (pl *pool) want(sh *shape) int {
	if pl.d.cfg.Pool > 0 {
		return max(pl.d.cfg.Pool, sh.demand)
	}
	return sh.warms
}

func newPool(d *Docker) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	pl := &pool{d: d, ctx: ctx, cancel: cancel, shapes: map[string]*shape{}}
	pl.cond = sync.NewCond(&pl.mu)
	if d.cfg.Pool > 0 {
		pl.wg.Add(1)
		go pl.janitor()
	}
	return pl
}

// shapeOf returns the shape of a resolved spec with trees, and its key:
// the hash of the configuration a container of that shape gets.
func (pl *pool) shapeOf(spec Spec, lim Limits) (Spec, string) {
	sh := spec
	sh.Run = pl.d.poolRun
	sh.Cmd = nil
	sh.Stdin = nil
	sh.Trees = make([]Tree, len(spec.Trees))
	for i, t := range spec.Trees {
		sh.Trees[i] = Tree{Dir: t.Dir}
	}
	cfg, hc := hardened(sh, lim, false)
	hc.Resources.CpusetCpus = pl.d.cpuset
	withInit(cfg, hc, sh, lim, "", 0, sharedDir{})
	// The owner labels are the same for every container of this process.
	// The limits enter whole but for the wall clock, which starts when the
	// work arrives: the output caps are set when the streams are attached.
	keyLim := lim
	keyLim.Wall = 0
	js, _ := json.Marshal(struct {
		C, H any
		L    Limits
		SO   any
		P    any
	}{cfg, hc, keyLim, sh.StreamOut, sh.CollectPolicy})
	sum := sha256.Sum256(js)
	return sh, hex.EncodeToString(sum[:])
}

// take hands out a started sandbox of spec's shape that has run nothing,
// or nil when there is none ready or being made, and has the shape
// refilled either way. When one is being made it waits for it (a start
// already under way ends sooner than a new one), unless ctx ends first.
// spec is resolved, and its trees have passed the firewall.
func (pl *pool) take(ctx context.Context, spec Spec, lim Limits) *Prepared {
	shSpec, key := pl.shapeOf(spec, lim)
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		return nil
	}
	sh := pl.shapes[key]
	if sh == nil {
		if pl.d.cfg.Pool <= 0 {
			// Nothing was warmed for this shape, and nothing is kept.
			pl.mu.Unlock()
			return nil
		}
		sh = &shape{spec: shSpec, lim: lim}
		pl.shapes[key] = sh
		pl.evictLocked()
	}
	sh.asked = time.Now()
	if sh.warms > 0 {
		// This call is what a Warm was for, whether or not its sandbox
		// is ready yet.
		sh.warms--
	}
	stop := context.AfterFunc(ctx, func() {
		pl.mu.Lock()
		pl.cond.Broadcast()
		pl.mu.Unlock()
	})
	defer stop()
	var got *Prepared
	var stale []*Prepared
	fails := sh.fails
	for got == nil && !pl.closed && ctx.Err() == nil && sh.fails == fails {
		if len(sh.ready) == 0 {
			// Keep one coming for this call and each other one waiting
			// (concurrent cases, grades in flight), then wait: a call
			// never queues behind another's sandbox being made.
			if sh.filling <= sh.waiting && !pl.fillOneLocked(sh) {
				break
			}
			sh.waiting++
			pl.cond.Wait()
			sh.waiting--
			continue
		}
		p := sh.ready[0]
		sh.ready = sh.ready[1:]
		if time.Since(p.created) > pl.d.cfg.PoolMaxIdle || p.armed.exited() {
			stale = append(stale, p)
			continue
		}
		got = p
	}
	if got != nil {
		pl.running++
		sh.inUse++
		if sh.later != nil && sh.later.Stop() {
			sh.refillDue = false
		}
	}
	pl.mu.Unlock()
	pl.discard(stale)
	pl.d.log.Debug("engine: pool: take", "phase", spec.Phase, "shape", key[:12], "hit", got != nil)
	if got == nil {
		return nil
	}
	got.shape = sh
	// The sandbox's configuration is the shape's; what it runs, on what
	// input and with which trees is this spec's, sent in the frame.
	mounts := got.spec.Mounts
	got.spec = spec
	got.spec.Mounts = mounts
	got.lim = lim
	return got
}

// released says a sandbox taken from sh has ended: once none of the
// shape's is running for refillDelay, the shape is refilled.
func (pl *pool) released(sh *shape) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	sh.inUse--
	pl.running--
	if pl.running > 0 || pl.closed {
		return
	}
	// Nothing runs: every shape that wants sandboxes gets them, once
	// nothing has run for refillDelay.
	for _, o := range pl.shapes {
		if o.later != nil {
			o.later.Stop()
		}
		o.refillDue = true
		o.later = time.AfterFunc(refillDelay, func() {
			pl.mu.Lock()
			defer pl.mu.Unlock()
			o.refillDue = false
			if pl.running == 0 {
				pl.refillLocked(o)
			}
		})
	}
}

// warm asks for n more sandboxes of a resolved spec's shape.
func (pl *pool) warm(spec Spec, lim Limits, n int) {
	shSpec, key := pl.shapeOf(spec, lim)
	pl.d.log.Debug("engine: pool: warm", "phase", spec.Phase, "shape", key[:12], "n", n)
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.closed {
		return
	}
	sh := pl.shapes[key]
	if sh == nil {
		sh = &shape{spec: shSpec, lim: lim}
		pl.shapes[key] = sh
		pl.evictLocked()
	}
	sh.asked = time.Now()
	n = min(n, 64)
	if pl.d.cfg.Pool > 0 {
		// A kept shape is kept at what its phases use.
		sh.demand = n
	} else {
		sh.warms = min(sh.warms+n, 64)
	}
	pl.refillLocked(sh)
}

// refillLocked starts fillers for the shape, up to maxFillers, until the
// sandboxes ready or being made reach what it wants; while a taken sandbox
// runs it starts none (released refills once none runs).
func (pl *pool) refillLocked(sh *shape) {
	if pl.running > 0 {
		return
	}
	for sh.filling < maxFillers && len(sh.ready)+sh.filling < pl.want(sh) {
		if !pl.fillOneLocked(sh) {
			return
		}
	}
}

// fillOneLocked starts making one sandbox of the shape; false when the
// pool is closed or the shape is gone.
func (pl *pool) fillOneLocked(sh *shape) bool {
	if pl.closed || pl.shapes[pl.keyOf(sh)] != sh {
		return false
	}
	sh.filling++
	pl.wg.Add(1)
	go pl.fill(sh)
	return true
}

// fill makes one sandbox of a shape, then starts the next if the shape
// still wants one.
func (pl *pool) fill(sh *shape) {
	defer pl.wg.Done()
	began := time.Now()
	p, err := pl.d.create(pl.ctx, sh.spec, sh.lim)
	if err == nil {
		var a *armed
		if a, err = p.arm(pl.ctx); err == nil {
			p.armed = a
		} else {
			p.Close(pl.ctx)
		}
	}
	pl.mu.Lock()
	sh.filling--
	defer pl.cond.Broadcast()
	switch {
	case err != nil:
		sh.fails++
		pl.mu.Unlock()
		pl.d.log.Warn("engine: pool: could not start a sandbox", "err", err)
		return
	case pl.closed || pl.shapes[pl.keyOf(sh)] != sh:
		pl.mu.Unlock()
		p.Close(pl.ctx)
		return
	}
	sh.ready = append(sh.ready, p)
	pl.refillLocked(sh)
	pl.mu.Unlock()
	pl.d.log.Debug("engine: pool: ready", "phase", sh.spec.Phase, "ms", time.Since(began).Milliseconds())
}

// keyOf finds a shape's key (shapes are few).
func (pl *pool) keyOf(sh *shape) string {
	for k, s := range pl.shapes {
		if s == sh {
			return k
		}
	}
	return ""
}

// evictLocked drains the least recently asked shapes beyond maxShapes.
func (pl *pool) evictLocked() {
	for len(pl.shapes) > maxShapes {
		var oldKey string
		var old *shape
		for k, s := range pl.shapes {
			if old == nil || s.asked.Before(old.asked) {
				oldKey, old = k, s
			}
		}
		delete(pl.shapes, oldKey)
		ready := old.ready
		old.ready = nil
		go pl.discard(ready)
	}
}

// discard removes sandboxes that will never be used.
func (pl *pool) discard(ps []*Prepared) {
	if len(ps) == 0 {
		return
	}
	ctx, cancel := pl.d.cleanupCtx(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Close(ctx)
		}()
	}
	wg.Wait()
}

// janitor discards sandboxes that waited longer than PoolMaxIdle, so that
// none is used late and none lingers.
func (pl *pool) janitor() {
	defer pl.wg.Done()
	tick := time.NewTicker(max(pl.d.cfg.PoolMaxIdle/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-pl.ctx.Done():
			return
		case <-tick.C:
		}
		var stale []*Prepared
		pl.mu.Lock()
		for _, sh := range pl.shapes {
			sh.ready = slices.DeleteFunc(sh.ready, func(p *Prepared) bool {
				if time.Since(p.created) > pl.d.cfg.PoolMaxIdle || p.armed.exited() {
					stale = append(stale, p)
					return true
				}
				return false
			})
		}
		pl.mu.Unlock()
		pl.discard(stale)
	}
}

// settle waits until no shape is being filled or waits to be refilled.
func (pl *pool) settle(ctx context.Context) error {
	for {
		pl.mu.Lock()
		busy := false
		for _, sh := range pl.shapes {
			busy = busy || sh.filling > 0 || sh.refillDue
		}
		pl.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ready counts the pooled sandboxes (for tests and bench).
func (pl *pool) readyCount() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	n := 0
	for _, sh := range pl.shapes {
		n += len(sh.ready)
	}
	return n
}

// close removes every pooled sandbox and waits for the fillers.
func (pl *pool) close(ctx context.Context) {
	pl.mu.Lock()
	pl.closed = true
	pl.cond.Broadcast()
	var all []*Prepared
	for _, sh := range pl.shapes {
		all = append(all, sh.ready...)
		sh.ready = nil
	}
	pl.mu.Unlock()
	pl.discard(all)
	pl.cancel()
	pl.wg.Wait()
	_ = ctx
}
