package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/strictgrade/strictgrade/sandbox"
)

// Config configures the Docker engine. The zero value is usable.
type Config struct {
	// Runtime is the OCI runtime to require and use by default ("runsc"
	// for gVisor); empty means the daemon's default runtime.
	Runtime string
	// CleanupTimeout bounds each removal done on the way out; default 30s.
	CleanupTimeout time.Duration
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
	// InitImage is the image holding sginit (images.Init). With it, a
	// spec's trees travel on the sandbox's standard input and sginit lays
	// them out (ADR 0013); without it they become read-only volumes.
	InitImage string
	// Pool is how many started, never-used sandboxes to keep ready per
	// shape of spec (image, limits, trees' places, environment …) for
	// specs that go through sginit; zero keeps none.
	Pool int
	// PoolMaxIdle is how long a pooled sandbox may wait before it is
	// discarded unused; zero means DefaultPoolMaxIdle.
	PoolMaxIdle time.Duration
}

// DefaultPoolMaxIdle is the default of Config.PoolMaxIdle.
const DefaultPoolMaxIdle = 2 * time.Minute

// Docker is the Engine backed by a Docker daemon.
type Docker struct {
	cli *client.Client
	cfg Config
	// cpuset pins every sandbox to these CPUs ("0", "0-1"); empty for
	// all. Only the tests set it (PinTo), to starve a sandbox on one CPU
	// while the others run on.
	cpuset string
	// outputRate, when set, slows the reading of every sandbox's standard
	// output to that many bytes a second. Only the tests set it
	// (SlowOutput), to stand in for a host too busy to drain the stream.
	outputRate int64
	log        *slog.Logger
	info       PreflightInfo
	loaderM    sync.Mutex
	loader     string // image ID of the loader image, once made
	// poolRun labels what the backend makes for itself rather than for a
	// run: pooled sandboxes and the container that fills the sginit volume.
	poolRun string
	initM   sync.Mutex
	initVol string // the sginit volume, once found or made
	// sginitPrefix and sharedPrefix name the image volumes (a test's own
	// in tests).
	sginitPrefix, sharedPrefix string
	sharedM                    sync.Mutex
	shared                     map[string]*sharedDir // by image, as specs name it
	// initWG is UseInit's making of the volume in the background; Close
	// waits for it before removing what it made.
	initWG sync.WaitGroup
	pool   *pool
	// removals are the removals of ended sandboxes still under way.
	removals inflight
	// unsettled are the containers (by ID or name) whose removal gave up
	// when its cleanup context ended, and those whose create timed out
	// on the client, which the daemon may still finish: Leftovers and
	// Close try them again, so that a removal the daemon refused for a
	// while on a busy host (see removeContainer) is not left to GC.
	unsettledM sync.Mutex
	unsettled  map[string]bool
	// failRemovals makes container removals fail before they reach the
	// daemon, as a busy daemon's do. Only the tests set it (FailRemovals).
	failRemovals atomic.Bool
}

// markUnsettled remembers a container whose removal did not go through.
func (d *Docker) markUnsettled(ref string) {
	d.unsettledM.Lock()
	defer d.unsettledM.Unlock()
	if d.unsettled == nil {
		d.unsettled = map[string]bool{}
	}
	d.unsettled[ref] = true
}

// settle tries the unsettled removals again, each on a fresh cleanup
// context; the ones that fail again stay for the next try.
func (d *Docker) settle(ctx context.Context) {
	d.unsettledM.Lock()
	refs := make([]string, 0, len(d.unsettled))
	for ref := range d.unsettled {
		refs = append(refs, ref)
	}
	clear(d.unsettled)
	d.unsettledM.Unlock()
	var wg sync.WaitGroup
	for _, ref := range refs {
		wg.Go(func() { d.removeContainer(ctx, ref) })
	}
	wg.Wait()
}

// removeLater runs remove on its own goroutine, on a context that survives
// ctx's cancellation; Leftovers and Close wait for every such removal.
func (d *Docker) removeLater(ctx context.Context, remove func(context.Context)) {
	d.removals.Add(1)
	cctx := context.WithoutCancel(ctx)
	go func() {
		defer d.removals.Done()
		remove(cctx)
	}()
}

var _ Engine = (*Docker)(nil)

// PreflightInfo is what the preflight learned about the daemon.
type PreflightInfo struct {
	ServerVersion string
	APIVersion    string
	Runtime       string
	CgroupVersion string
	Rootless      bool
	UserNS        bool
}

// NewDocker connects to the daemon named by the environment, negotiates the
// API version and runs the preflight once: the daemon must report seccomp,
// the memory, swap and pids controllers, and the configured runtime.
func NewDocker(ctx context.Context, cfg Config) (*Docker, error) {
	if cfg.CleanupTimeout <= 0 {
		cfg.CleanupTimeout = 30 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("engine: docker client: %w", err)
	}
	if cfg.PoolMaxIdle <= 0 {
		cfg.PoolMaxIdle = DefaultPoolMaxIdle
	}
	d := &Docker{cli: cli, cfg: cfg, log: log, poolRun: "pool-" + randomSuffix()}
	if err := d.preflight(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	d.pool = newPool(d)
	d.sginitPrefix, d.sharedPrefix = sginitPrefix, sharedPrefix
	d.shared = map[string]*sharedDir{}
	return d, nil
}

// Close drains the pool and releases the client's connections. The sginit
// volume stays for the daemon's next backend (initVolume).
func (d *Docker) Close() error {
	ctx, cancel := d.cleanupCtx(context.Background())
	defer cancel()
	d.pool.close(ctx)
	d.removals.Wait()
	d.initWG.Wait()
	d.settle(context.Background())
	return d.cli.Close()
}

// Info returns what the preflight found.
func (d *Docker) Info() PreflightInfo { return d.info }

// Runtime implements sandbox.Backend: "docker/" and the OCI runtime the
// preflight found, as verdicts record it.
func (d *Docker) Runtime() string { return "docker/" + d.info.Runtime }

func (d *Docker) preflight(ctx context.Context) error {
	if _, err := d.cli.Ping(ctx); err != nil {
		return fmt.Errorf("%w: docker daemon not reachable: %v", ErrPreflight, err)
	}
	info, err := d.cli.Info(ctx)
	if err != nil {
		return fmt.Errorf("%w: docker info: %v", ErrPreflight, err)
	}
	var problems []string
	seccomp := false
	for _, o := range info.SecurityOptions {
		switch {
		case strings.HasPrefix(o, "name=seccomp"):
			seccomp = !strings.Contains(o, "profile=unconfined")
		case strings.HasPrefix(o, "name=rootless"):
			d.info.Rootless = true
		case strings.HasPrefix(o, "name=userns"):
			d.info.UserNS = true
		}
	}
	if !seccomp {
		problems = append(problems, "seccomp is not enabled")
	}
	if !info.MemoryLimit {
		problems = append(problems, "no memory limit support")
	}
	if !info.SwapLimit {
		problems = append(problems, "no swap limit support")
	}
	if !info.PidsLimit {
		problems = append(problems, "no pids limit support")
	}
	rt := d.cfg.Runtime
	if rt == "" {
		rt = info.DefaultRuntime
	}
	if _, ok := info.Runtimes[rt]; !ok {
		have := make([]string, 0, len(info.Runtimes))
		for name := range info.Runtimes {
			have = append(have, name)
		}
		slices.Sort(have)
		problems = append(problems, fmt.Sprintf("runtime %q not available (the daemon has %s)", rt, strings.Join(have, ", ")))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrPreflight, strings.Join(problems, "; "))
	}
	d.info.ServerVersion = info.ServerVersion
	d.info.APIVersion = d.cli.ClientVersion()
	d.info.Runtime = rt
	d.info.CgroupVersion = info.CgroupVersion
	return nil
}

// cleanupCtx returns a context for removals that survives the caller's
// cancellation but not forever.
func (d *Docker) cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return sandbox.CleanupContext(ctx, d.cfg.CleanupTimeout)
}

func randomSuffix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

// objectName gives every container and volume a unique, recognisable name,
// so that an object whose create call was interrupted can still be found
// and removed by name.
func objectName(run, phase string) string {
	return "sg-" + run + "-" + phase + "-" + randomSuffix()
}

// NewVolume creates an empty volume whose root directory belongs to the
// sandbox user.
func (d *Docker) NewVolume(ctx context.Context, run, phase string) (string, error) {
	name, _, err := d.newVolume(ctx, run, phase, nil, CopyInOptions{})
	return name, err
}

// RemoveVolume removes a volume; a missing one is not an error. A volume
// still held by a container that is being removed (by us or from outside)
// is retried for a few seconds.
func (d *Docker) RemoveVolume(ctx context.Context, name string) error {
	delay := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := d.cli.VolumeRemove(ctx, name, true)
		switch {
		case err == nil || errdefs.IsNotFound(err):
			return nil
		case errdefs.IsConflict(err) && attempt < 8:
			select {
			case <-time.After(delay):
				delay *= 2
				continue
			case <-ctx.Done():
			}
		}
		return fmt.Errorf("engine: remove volume %s: %w", name, err)
	}
}

// removeContainer force-removes a container on a cleanup context and logs
// (rather than returns) a failure: GC is the backstop.
//
// A removal can fail on the daemon's side while it still writes the
// container's state just after the exit ("unable to remove filesystem …:
// directory not empty"); the daemon then lists the container as dead,
// "Removal In Progress", until someone removes it again. So a failed
// removal is tried again, with growing pauses, until the cleanup context
// ends.
func (d *Docker) removeContainer(ctx context.Context, id string) {
	cctx, cancel := d.cleanupCtx(ctx)
	defer cancel()
	pause := 100 * time.Millisecond
	for {
		var err error
		if d.failRemovals.Load() {
			err = errors.New("a removal failed by the tests")
		} else {
			err = d.cli.ContainerRemove(cctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		}
		if err == nil || errdefs.IsNotFound(err) {
			return
		}
		select {
		case <-time.After(pause):
			pause = min(2*pause, 2*time.Second)
			d.log.Debug("container removal failed; trying again", "container", id, "err", err)
			continue
		case <-cctx.Done():
		}
		d.markUnsettled(id)
		d.log.Warn("container removal failed; it is tried again when the backend lists leftovers or closes", "container", id, "err", err)
		return
	}
}

// create makes a container with the given configuration under a fresh name,
// treats any daemon warning as fatal, and asserts the profile by inspect.
// When it returns a non-empty id the caller owns its removal, also on error.
func (d *Docker) createContainer(ctx context.Context, name string, cfg *container.Config, hc *container.HostConfig) (string, container.InspectResponse, error) {
	// The create call itself is not interrupted by ctx: a request cut
	// off mid-flight can leave a container the client never heard of.
	// Cancellation is honoured right after it instead.
	cctx, cancel := d.cleanupCtx(ctx)
	resp, err := d.cli.ContainerCreate(cctx, cfg, hc, nil, nil, name)
	timedOut := cctx.Err() != nil
	cancel()
	id := resp.ID
	if err != nil {
		d.removeContainer(ctx, name)
		if timedOut {
			// The daemon may still be making it, after the removal
			// found nothing under its name.
			d.markUnsettled(name)
		}
		return "", container.InspectResponse{}, fmt.Errorf("engine: create container: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return id, container.InspectResponse{}, err
	}
	if len(resp.Warnings) > 0 {
		return id, container.InspectResponse{}, fmt.Errorf("%w: daemon warnings: %s", ErrProfile, strings.Join(resp.Warnings, "; "))
	}
	ins, err := d.cli.ContainerInspect(ctx, id)
	if err != nil {
		return id, ins, fmt.Errorf("engine: inspect container: %w", err)
	}
	if err := assertApplied(ins, cfg, hc); err != nil {
		return id, ins, err
	}
	return id, ins, nil
}

// Leftovers implements sandbox.Reaper: the containers ("container/ID") and
// volumes ("volume/NAME") labelled with run that still exist. After a
// grade has returned, there should be none.
func (d *Docker) Leftovers(ctx context.Context, run string) ([]string, error) {
	d.removals.Wait()
	d.settle(ctx)
	f := filters.NewArgs(filters.Arg("label", LabelRun+"="+run))
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("engine: list containers: %w", err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, "container/"+c.ID)
	}
	vs, err := d.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("engine: list volumes: %w", err)
	}
	for _, v := range vs.Volumes {
		out = append(out, "volume/"+v.Name)
	}
	return out, nil
}

// GC removes managed containers and volumes that match opts. Without
// opts.All it removes only the abandoned ones (see GCOptions); a container
// goes before the volumes it may hold.
func (d *Docker) GC(ctx context.Context, opts GCOptions) (GCReport, error) {
	return d.gc(ctx, opts, time.Now(), processProbe)
}

func (d *Docker) gc(ctx context.Context, opts GCOptions, now time.Time, p probe) (GCReport, error) {
	var rep GCReport
	maxAge := opts.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	me := self()
	// pick says whether an object created at created with labels l is
	// removed, counting the ones kept for a live owner.
	pick := func(l map[string]string, created time.Time) bool {
		switch {
		case opts.OlderThan > 0 && now.Sub(created) < opts.OlderThan:
			return false
		case opts.All || me.abandoned(l, created, now, maxAge, p):
			return true
		}
		rep.Kept++
		return false
	}
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	if opts.Run != "" {
		f.Add("label", LabelRun+"="+opts.Run)
	}
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return rep, fmt.Errorf("engine: list containers: %w", err)
	}
	var errs []error
	for _, c := range cs {
		if !pick(c.Labels, time.Unix(c.Created, 0)) {
			continue
		}
		if !opts.DryRun {
			err := d.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
			if err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
		}
		rep.Containers = append(rep.Containers, c.ID)
	}
	vs, err := d.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return rep, errors.Join(append(errs, fmt.Errorf("engine: list volumes: %w", err))...)
	}
	for _, v := range vs.Volumes {
		created, err := time.Parse(time.RFC3339, v.CreatedAt)
		if err != nil {
			// No creation time to judge the age by: only the owner
			// (or All) can make it removable.
			created = now
		}
		if !pick(v.Labels, created) {
			continue
		}
		if !opts.DryRun {
			if err := d.RemoveVolume(ctx, v.Name); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		rep.Volumes = append(rep.Volumes, v.Name)
	}
	if opts.Run == "" {
		if err := d.gcImageVolumes(ctx, opts.All, opts.DryRun, &rep); err != nil {
			errs = append(errs, err)
		}
	}
	slices.Sort(rep.Containers)
	slices.Sort(rep.Volumes)
	return rep, errors.Join(errs...)
}

// inflight counts work under way, like a sync.WaitGroup whose Add may run
// while another goroutine waits at zero (a sandbox ending while Settle or
// Leftovers waits for the removals before it): Wait returns once the count
// is zero, including what was added while it waited.
type inflight struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int
}

func (f *inflight) Add(n int) {
	f.mu.Lock()
	f.n += n
	if f.n == 0 && f.cond != nil {
		f.cond.Broadcast()
	}
	f.mu.Unlock()
}

func (f *inflight) Done() { f.Add(-1) }

func (f *inflight) Wait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cond == nil {
		f.cond = sync.NewCond(&f.mu)
	}
	for f.n > 0 {
		f.cond.Wait()
	}
}
