package kubernetes

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/sandbox"
)

// maxWarmPerShape bounds the pods one shape holds started or starting, so
// that Warm calls whose pods go unused (a grade that failed before its
// judge) cannot fill a namespace.
const maxWarmPerShape = 8

// warmPool holds pods started before their work exists (sandbox.Warmer).
// A pod's command, environment, limits, volumes and whether its workload
// reads standard input are fixed when it is created, so a shape here is
// all of a spec but its run, its trees' content, its input's content and
// the wall clock's start: a spec without a command (unless the launcher
// can take it: launchForm), or with volume mounts of its own, is not
// warmed. Every pod leaves the pool once, to be used or discarded; one
// that waited longer than Config.PoolMaxIdle, or whose loader's stream
// ended, is discarded, never used.
type warmPool struct {
	b      *Backend
	run    string // the run label of every pooled pod
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	shapes map[string]*warmShape
}

// warmShape is the pods of one shape.
type warmShape struct {
	spec  sandbox.Spec // the shape, as the pods are made
	lim   sandbox.Limits
	sizes []int64

	ready  []*warmPod
	making int
	wake   chan struct{} // closed, and replaced, when a start ends
}

type warmPod struct {
	p       *prepared
	created time.Time
}

func newWarmPool(b *Backend) *warmPool {
	var id [4]byte
	_, _ = rand.Read(id[:])
	ctx, cancel := context.WithCancel(context.Background())
	pl := &warmPool{b: b, run: "pool" + hex.EncodeToString(id[:]), ctx: ctx, cancel: cancel, shapes: map[string]*warmShape{}}
	pl.wg.Add(1)
	go pl.janitor()
	return pl
}

// warmable is the shape of spec, its resolved limits, the room each of
// its trees' volumes gets, and the shape's key; ok is false when spec
// cannot be started ahead of time on this backend.
func (b *Backend) warmable(spec sandbox.Spec) (shape sandbox.Spec, lim sandbox.Limits, sizes []int64, key string, ok bool) {
	if len(spec.Cmd) == 0 || len(spec.Trees) == 0 || len(spec.Mounts) > 0 || len(spec.Collect) > 0 {
		return sandbox.Spec{}, sandbox.Limits{}, nil, "", false
	}
	shape = spec
	shape.Run = b.pool.run
	shape.Trees = nil
	if spec.Stdin != nil {
		// Only that it reads input shapes the pod; the input comes at Run.
		shape.Stdin = strings.NewReader("")
	}
	shape.Mounts = make([]sandbox.Mount, len(spec.Trees))
	for i, t := range spec.Trees {
		// A placeholder volume: the pod's emptyDirs are filled from the
		// take's volumes, which replace these.
		shape.Mounts[i] = sandbox.Mount{Volume: "warm", Target: t.Dir, ReadOnly: true}
	}
	lim, err := b.check(&shape)
	if err != nil {
		return sandbox.Spec{}, sandbox.Limits{}, nil, "", false
	}
	sizes = make([]int64, len(spec.Trees))
	for i, t := range spec.Trees {
		total := t.Policy.MaxTotalBytes
		if total == 0 {
			total = firewall.DefaultMaxTotalBytes
		}
		sizes[i] = total + lim.FileBytes
	}
	// The key is the pod itself, as created, with the limits and the
	// output handling that Run reads from the spec.
	pod := buildPod(podParams{name: "shape", namespace: b.cfg.Namespace, spec: shape, lim: lim, cfg: b.cfg, mountBytes: sizes})
	js, err := json.Marshal(struct {
		Pod any
		L   sandbox.Limits
		SO  any
		P   any
	}{pod.Spec, lim, shape.StreamOut, shape.CollectPolicy})
	if err != nil {
		return sandbox.Spec{}, sandbox.Limits{}, nil, "", false
	}
	sum := sha256.Sum256(js)
	return shape, lim, sizes, hex.EncodeToString(sum[:]), true
}

// Warm implements sandbox.Warmer: it has n pods of spec's shape started
// in the background, each with its loader waiting for the trees, for the
// next n Prepare or Run calls of that shape. It reports false, starting
// nothing, for a spec it cannot start ahead of time (see warmPool).
func (b *Backend) Warm(ctx context.Context, spec sandbox.Spec, n int) bool {
	if n <= 0 || spec.Validate() != nil {
		return false
	}
	if l, ok := b.launchForm(spec, true); ok {
		spec = l
	}
	shape, lim, sizes, key, ok := b.warmable(spec)
	if !ok {
		return false
	}
	return b.pool.warm(shape, lim, sizes, key, n)
}

func (pl *warmPool) warm(shape sandbox.Spec, lim sandbox.Limits, sizes []int64, key string, n int) bool {
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		return false
	}
	sh := pl.shapes[key]
	if sh == nil {
		sh = &warmShape{spec: shape, lim: lim, sizes: sizes, wake: make(chan struct{})}
		pl.shapes[key] = sh
	}
	// The shape is topped up to n pods ready or starting (Config.Pool,
	// if more): pods left from an earlier call, or made again after a
	// take, count.
	add := pl.topUpLocked(sh, max(n, pl.b.cfg.Pool))
	pl.mu.Unlock()
	pl.b.log.Debug("kubernetes: pool: warm", "phase", shape.Phase, "shape", key[:12], "n", n, "starting", add)
	return true
}

// topUpLocked starts as many pods of sh as it takes to have want ready or
// starting, within maxWarmPerShape, and returns how many.
func (pl *warmPool) topUpLocked(sh *warmShape, want int) int {
	add := min(want, maxWarmPerShape) - sh.making - len(sh.ready)
	if add <= 0 {
		return 0
	}
	sh.making += add
	for range add {
		pl.wg.Add(1)
		go pl.fill(sh, sh.spec, sh.lim, sh.sizes)
	}
	return add
}

// fill starts one pod of sh's shape and puts it in the pool.
func (pl *warmPool) fill(sh *warmShape, shape sandbox.Spec, lim sandbox.Limits, sizes []int64) {
	defer pl.wg.Done()
	began := time.Now()
	p, err := pl.b.start(pl.ctx, shape, lim, sizes, false)
	pl.mu.Lock()
	sh.making--
	keep := err == nil && !pl.closed
	if keep {
		sh.ready = append(sh.ready, &warmPod{p: p, created: time.Now()})
	}
	close(sh.wake)
	sh.wake = make(chan struct{})
	pl.mu.Unlock()
	switch {
	case err != nil:
		if pl.ctx.Err() == nil {
			pl.b.log.Warn("kubernetes: pool: could not start a pod", "err", err)
		}
	case !keep:
		pl.discard(p)
	default:
		pl.b.log.Debug("kubernetes: pool: ready", "phase", shape.Phase, "ms", time.Since(began).Milliseconds())
	}
}

// stale reports whether w may no longer be used: it waited too long, or
// its loader's input stream is gone (the pod was deleted or failed).
func (pl *warmPool) stale(w *warmPod) bool {
	if time.Since(w.created) > pl.b.cfg.PoolMaxIdle {
		return true
	}
	select {
	case err := <-w.p.loadRes:
		w.p.loadRes <- err
		return true
	default:
		return false
	}
}

// take hands out a ready pod of the shape key that has run nothing, or
// nil when there is none ready or starting. When one is starting it waits
// for it, unless ctx ends first.
func (pl *warmPool) take(ctx context.Context, key string) *prepared {
	for {
		pl.mu.Lock()
		sh := pl.shapes[key]
		if pl.closed || sh == nil {
			pl.mu.Unlock()
			return nil
		}
		var got *prepared
		var drop []*prepared
		for got == nil && len(sh.ready) > 0 {
			w := sh.ready[0]
			sh.ready = sh.ready[1:]
			if pl.stale(w) {
				drop = append(drop, w.p)
				continue
			}
			got = w.p
		}
		if got != nil && pl.b.cfg.Pool > 0 {
			// A standing pool is refilled as it is used, so that the
			// next grade's pod starts while this one runs.
			pl.topUpLocked(sh, pl.b.cfg.Pool)
		}
		making, wake := sh.making, sh.wake
		pl.mu.Unlock()
		for _, p := range drop {
			pl.wg.Add(1)
			go func() { defer pl.wg.Done(); pl.discard(p) }()
		}
		if got != nil || making == 0 {
			return got
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil
		}
	}
}

// discard removes a pod that will never be used.
func (pl *warmPool) discard(p *prepared) {
	ctx, cancel := pl.b.cleanupCtx(context.Background())
	defer cancel()
	p.Close(ctx)
}

// janitor discards the pods that waited longer than PoolMaxIdle, so that
// a backend left open and idle holds no pod for long.
func (pl *warmPool) janitor() {
	defer pl.wg.Done()
	tick := time.NewTicker(max(pl.b.cfg.PoolMaxIdle/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-pl.ctx.Done():
			return
		case <-tick.C:
		}
		var drop []*prepared
		pl.mu.Lock()
		for key, sh := range pl.shapes {
			kept := sh.ready[:0]
			for _, w := range sh.ready {
				if pl.stale(w) {
					drop = append(drop, w.p)
				} else {
					kept = append(kept, w)
				}
			}
			sh.ready = kept
			if len(sh.ready) == 0 && sh.making == 0 {
				delete(pl.shapes, key)
			}
		}
		pl.mu.Unlock()
		for _, p := range drop {
			pl.discard(p)
		}
	}
}

// close ends every start under way and removes every pooled pod.
func (pl *warmPool) close() {
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		return
	}
	pl.closed = true
	var drop []*prepared
	for _, sh := range pl.shapes {
		for _, w := range sh.ready {
			drop = append(drop, w.p)
		}
		sh.ready = nil
	}
	pl.mu.Unlock()
	pl.cancel()
	var wg sync.WaitGroup
	for _, p := range drop {
		wg.Add(1)
		go func() { defer wg.Done(); pl.discard(p) }()
	}
	wg.Wait()
	pl.wg.Wait()
}

// prepareWarm prepares spec, whose trees are laid out as volumes, in a
// pooled pod of its shape when there is one: the pod's loader gets the
// volumes when Run begins, as a pod prepared now would. It returns nil
// when the pool has none, or when a volume outgrew the room the pod gave
// it (then the pod is discarded).
func (b *Backend) prepareWarm(ctx context.Context, key string, sizes []int64, vspec sandbox.Spec) (*prepared, error) {
	var p *prepared
	for {
		p = b.pool.take(ctx, key)
		if p == nil {
			return nil, nil
		}
		// The loader's stream may not yet know of a pod deleted or
		// evicted while it waited: the API server is asked.
		if b.warmAlive(ctx, p) {
			break
		}
		b.pool.discard(p)
	}
	if len(vspec.Mounts) != len(sizes) {
		b.pool.discard(p)
		return nil, fmt.Errorf("kubernetes: pool: %d volumes for a shape of %d", len(vspec.Mounts), len(sizes))
	}
	for i, m := range vspec.Mounts {
		_, size, err := b.vols.archives(m.Volume)
		if err != nil {
			b.pool.discard(p)
			return nil, err
		}
		if m.Target != p.spec.Mounts[i].Target || size+p.lim.FileBytes > sizes[i] {
			b.pool.discard(p)
			return nil, nil
		}
	}
	if _, err := b.check(&vspec); err != nil {
		b.pool.discard(p)
		return nil, err
	}
	p.spec = vspec
	return p, nil
}

// Settle waits until no pod is being started ahead of time: for
// measurements that must not charge the pool's background work to the
// time of what runs beside it (strictgrade bench).
func (b *Backend) Settle(ctx context.Context) error {
	for {
		b.pool.mu.Lock()
		var wake chan struct{}
		for _, sh := range b.pool.shapes {
			if sh.making > 0 {
				wake = sh.wake
				break
			}
		}
		b.pool.mu.Unlock()
		if wake == nil {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// warmAlive reports whether a pooled pod still exists, not being deleted,
// with its loader running.
func (b *Backend) warmAlive(ctx context.Context, p *prepared) bool {
	pod, err := b.cli.CoreV1().Pods(b.cfg.Namespace).Get(ctx, p.name, metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp != nil {
		return false
	}
	cs := containerStatus(pod, loadContainer)
	return cs != nil && cs.State.Running != nil
}
