package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/capbuf"
	"github.com/strictgrade/strictgrade/internal/streamout"
	"github.com/strictgrade/strictgrade/sandbox"
)

// logReadTimeout bounds reading a container's logs after it stopped.
const logReadTimeout = 30 * time.Second

// followGrace is how long the follower of a finished workload's standard
// output has to reach its end (the kubelet ends it once the container is
// no longer running) before its count is taken as it is.
const followGrace = 5 * time.Second

// prepared is a pod whose loader has its volumes and waits for the go.
type prepared struct {
	b       *Backend
	name    string
	spec    sandbox.Spec
	lim     sandbox.Limits
	gate    *io.PipeWriter // closing it ends the loader's input
	stop    context.CancelFunc
	loadErr *capbuf.Buffer
	loadRes chan error

	mu   sync.Mutex
	used bool
}

func podName(run, phase string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "sg-" + run + "-" + phase
	if len(name) > 200 {
		name = name[:200]
	}
	return name + "-" + hex.EncodeToString(b[:])
}

// check validates spec for this backend and returns its resolved limits.
func (b *Backend) check(spec *sandbox.Spec) (sandbox.Limits, error) {
	if err := spec.Validate(); err != nil {
		return sandbox.Limits{}, err
	}
	lim, err := spec.Limits.Resolve()
	if err != nil {
		return sandbox.Limits{}, err
	}
	if err := checkLabelValues(spec.Run, spec.Phase); err != nil {
		return sandbox.Limits{}, err
	}
	switch spec.Runtime {
	case "", b.cfg.RuntimeClass:
	default:
		if !(spec.Runtime == "runc" && b.cfg.RuntimeClass == "") {
			return sandbox.Limits{}, fmt.Errorf("%w: runtime %q: this backend runs %s", sandbox.ErrPreflight, spec.Runtime, b.Runtime())
		}
	}
	if err := checkCollect(*spec); err != nil {
		return sandbox.Limits{}, err
	}
	if spec.StreamOut != nil {
		so, err := spec.StreamOut.Resolve()
		if err != nil {
			return sandbox.Limits{}, err
		}
		spec.StreamOut = &so
	}
	return lim, nil
}

// Prepare implements sandbox.Preparer: the pod is created, scheduled and
// its loader started and given the volumes; the workload starts with Run.
func (b *Backend) Prepare(ctx context.Context, spec sandbox.Spec) (sandbox.Prepared, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	// A command that differs from run to run goes through the launcher,
	// so that a pod made before it was known can serve it.
	if l, ok := b.launchForm(spec, false); ok {
		spec = l
	}
	// Trees become controller-side read-only volumes, laid out by the
	// pod's init container like every other volume; a pod of the spec's
	// shape started ahead of time (Warm) is used when there is one.
	_, _, sizes, key, warmable := b.warmable(spec)
	return sandbox.PrepareWithTreeVolumes(ctx, b, spec, func(ctx context.Context, vspec sandbox.Spec) (sandbox.Prepared, error) {
		if warmable {
			p, err := b.prepareWarm(ctx, key, sizes, vspec)
			if err != nil {
				return nil, err
			}
			if p != nil {
				return p, nil
			}
		}
		p, err := b.prepare(ctx, vspec)
		if err != nil {
			return nil, err
		}
		return p, nil
	})
}

func (b *Backend) prepare(ctx context.Context, spec sandbox.Spec) (_ *prepared, err error) {
	lim, err := b.check(&spec)
	if err != nil {
		return nil, err
	}
	// The volumes' content goes to the loader when Run begins, so that
	// what a caller copies into a volume between Prepare and Run is there
	// (as it is on Docker, whose volumes are live). Their size now, and
	// the room a workload's own files get, size their emptyDirs.
	sizes, err := b.mountSizes(spec, lim)
	if err != nil {
		return nil, err
	}
	return b.start(ctx, spec, lim, sizes, false)
}

// mountSizes is the room of each mount's emptyDir: its volume's archives
// as they are now and what the workload may add (roomFor).
func (b *Backend) mountSizes(spec sandbox.Spec, lim sandbox.Limits) ([]int64, error) {
	sizes := make([]int64, len(spec.Mounts))
	for i, m := range spec.Mounts {
		var err error
		if _, sizes[i], err = b.vols.archives(m.Volume); err != nil {
			return nil, err
		}
		sizes[i] += roomFor(m, lim)
	}
	return sizes, nil
}

// roomFor is what the workload may add to mount m's emptyDir: a file of
// the largest size it may write, or for a writable mount as much as may
// come back out of it.
func roomFor(m sandbox.Mount, lim sandbox.Limits) int64 {
	if m.ReadOnly {
		return lim.FileBytes
	}
	total := m.Policy.MaxTotalBytes
	if total <= 0 {
		total = firewall.DefaultMaxTotalBytes
	}
	return max(lim.FileBytes, total)
}

// start creates the pod of spec, checked, with sizes as the room of its
// mounts' emptyDirs, and returns it once its loader waits for the volumes;
// session makes it a session's pod (see buildPod).
func (b *Backend) start(ctx context.Context, spec sandbox.Spec, lim sandbox.Limits, sizes []int64, session bool) (_ *prepared, err error) {
	name := podName(spec.Run, spec.Phase)
	pod := buildPod(podParams{name: name, namespace: b.cfg.Namespace, spec: spec, lim: lim, cfg: b.cfg, mountBytes: sizes, owner: ownerAnnotations(), session: session})
	// Registered before the create's error is checked: a create that
	// timed out on the client may still have made the pod.
	defer func() {
		if err != nil {
			_ = b.deletePod(ctx, name)
		}
	}()
	if _, err = b.cli.CoreV1().Pods(b.cfg.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("kubernetes: create pod: %w", err)
	}
	_, err = b.waitPod(ctx, name, b.cfg.StartTimeout, "loader started",
		untilRunning(loadContainer, "the loader ended before its input", loadContainer, workContainer))
	if err != nil {
		return nil, err
	}
	gr, gw := io.Pipe()
	actx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p := &prepared{b: b, name: name, spec: spec, lim: lim, gate: gw, stop: stop,
		loadErr: &capbuf.Buffer{Max: 4 << 10}, loadRes: make(chan error, 1)}
	go func() {
		err := b.attach(actx, name, loadContainer, gr, p.loadErr)
		// A writer still sending the volumes must not wait for a reader
		// that is gone.
		if err != nil {
			gr.CloseWithError(err)
		} else {
			gr.CloseWithError(errors.New("kubernetes: the loader's input ended"))
		}
		p.loadRes <- err
	}()
	return p, nil
}

// sendVolumes writes the loader's input, every mount's archives as they
// are now, and ends it.
func (p *prepared) sendVolumes() error {
	mounts := make([][]string, len(p.spec.Mounts))
	for i, m := range p.spec.Mounts {
		var err error
		if mounts[i], _, err = p.b.vols.archives(m.Volume); err != nil {
			p.gate.CloseWithError(err)
			return err
		}
	}
	// From here until keep reads them back, the writable mounts' volumes
	// have no known content.
	if err := p.markWritable(); err != nil {
		p.gate.CloseWithError(err)
		return err
	}
	if err := writeLoad(p.gate, mounts); err != nil {
		p.gate.CloseWithError(err)
		return fmt.Errorf("kubernetes: pod %s: sending the volumes: %w", p.name, err)
	}
	return p.gate.Close()
}

// begin sends the volumes, which starts the workload, and returns the pod
// once its work container runs or has ended.
func (p *prepared) begin(ctx context.Context) (*corev1.Pod, error) {
	if err := p.sendVolumes(); err != nil {
		return nil, err
	}
	return p.b.waitPod(ctx, p.name, p.b.cfg.StartTimeout, "workload started", func(pod *corev1.Pod) (bool, error) {
		if cs := containerStatus(pod, loadContainer); cs != nil && cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0 {
			msg, _ := p.loadErr.Result()
			return true, fmt.Errorf("kubernetes: pod %s: loader failed (%d): %s %s", p.name, cs.State.Terminated.ExitCode, msg, cs.State.Terminated.Message)
		}
		if cs := containerStatus(pod, workContainer); cs != nil && (cs.State.Running != nil || cs.State.Terminated != nil) {
			return true, nil
		}
		return false, podFailed(pod, loadContainer, workContainer)
	})
}

// Close implements sandbox.Prepared.
func (p *prepared) Close(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.used {
		p.used = true
		p.gate.CloseWithError(errors.New("closed"))
		p.stop()
		_ = p.b.deletePod(ctx, p.name)
	}
}

// Run implements sandbox.Runner: Prepare, then run.
func (b *Backend) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	p, err := b.Prepare(ctx, spec)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx)
}

// stdoutCap is the cap of standard output and whether passing it kills;
// with StreamOut, standard output is the archive, and passing its bound
// always kills.
func (p *prepared) stdoutCap() (int64, bool) {
	if so := p.spec.StreamOut; so != nil {
		return streamout.Cap(*so, p.spec.CollectPolicy), true
	}
	return p.lim.StdoutBytes, p.lim.KillOnOutputLimit
}

// Run implements sandbox.Prepared: it ends the loader's input, which
// starts the workload, then waits for it under the wall limit, reads its
// output and removes the pod.
func (p *prepared) Run(ctx context.Context) (*sandbox.Result, error) {
	p.mu.Lock()
	if p.used {
		p.mu.Unlock()
		return nil, fmt.Errorf("%w: a prepared pod runs once", sandbox.ErrSpec)
	}
	p.used = true
	p.mu.Unlock()
	b, name, spec, lim := p.b, p.name, p.spec, p.lim
	defer func() {
		p.stop()
		_ = b.deletePod(ctx, name)
	}()

	started, err := p.begin(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res := &sandbox.Result{ID: name}
	if cs := containerStatus(started, workContainer); cs != nil {
		res.ImageID = imageID(cs.ImageID)
	}

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	outCap, killOnOver := p.stdoutCap()
	overflow := make(chan struct{}, 1)
	// Standard output is followed from here to the end: the log holds
	// every byte from the first, so following it misses nothing, and the
	// follower reads on across a rotation of the log, which a read after
	// the end does not (it sees the last file alone). Only standard
	// output, the graded stream, stops the pod at its cap.
	followed := &followCount{max: outCap + 1, done: make(chan struct{})}
	if killOnOver {
		followed.onOver = func() {
			select {
			case overflow <- struct{}{}:
			default:
			}
		}
	}
	go func() {
		defer close(followed.done)
		followed.err = b.readLog(runCtx, name, corev1.LogStreamStdout, true, outCap+1, followed)
	}()
	// An attach that fails while the workload still runs lost its input:
	// the run cannot be graded. One that fails because the workload had
	// already ended lost nothing it would have read. The runtime knows of
	// the end before the API server does ("no running task found" while
	// the pod still reads Running), so the status is awaited a while.
	stdinLost := make(chan error, 1)
	if spec.Stdin != nil {
		go func() {
			err := b.attach(runCtx, name, workContainer, spec.Stdin, nil)
			if err == nil || runCtx.Err() != nil {
				return
			}
			if b.endsSoon(runCtx, name) {
				return
			}
			stdinLost <- fmt.Errorf("kubernetes: standard input of pod %s: %w", name, err)
		}()
	}

	done := make(chan struct{})
	var final *corev1.Pod
	var waitErr error
	go func() {
		defer close(done)
		final, waitErr = b.waitPod(runCtx, name, 0, "workload ended", func(pod *corev1.Pod) (bool, error) {
			if cs := containerStatus(pod, workContainer); cs != nil && cs.State.Terminated != nil {
				return true, nil
			}
			return false, podFailed(pod, workContainer)
		})
	}()
	// The kill waits ReportSlack past the limit for an end the kubelet
	// reports late; the runtime's times then tell whether it overran.
	// With a CPU budget and MeterCPU, the container's CPU time read from
	// its node (meter.go) decides and the wall clock is the backstop;
	// otherwise, or where it cannot be read, a wall clock of the budget
	// stands in for it (sandbox.Unmetered).
	wall := lim.Wall
	var watch *cpuWatch
	var spentC <-chan struct{}
	var lostC <-chan error
	if lim.CPU > 0 {
		if node := started.Spec.NodeName; node != "" && b.cfg.MeterCPU && b.meter.metered() {
			watch = b.meter.watch(runCtx, node, name, workContainer, lim.CPU)
			spentC, lostC = watch.spent, watch.lost
		} else {
			wall = sandbox.Unmetered(lim.CPU)
		}
	}
	timer := time.NewTimer(wall + b.cfg.ReportSlack)
	defer timer.Stop()
	var killedFor sandbox.ExitKind
	var limit sandbox.Limit
wait:
	for {
		select {
		case <-done:
			if waitErr == nil && overran(final, wall) {
				killedFor, limit = sandbox.ExitTimeout, sandbox.LimitWall
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			select {
			case <-done: // an exit that raced the timer is an exit
			default:
				killedFor, limit = sandbox.ExitTimeout, sandbox.LimitWall
			}
		case <-spentC:
			select {
			case <-done: // an exit that raced the meter is an exit
			default:
				killedFor, limit = sandbox.ExitTimeout, sandbox.LimitCPU
			}
		case err := <-lostC:
			// No reading can be taken: the budget becomes a wall clock,
			// counted from the start.
			b.log.Debug("kubernetes: the run's CPU budget is a wall clock", "pod", name, "err", err)
			watch, spentC, lostC = nil, nil, nil
			wall = sandbox.Unmetered(lim.CPU)
			timer.Reset(max(wall+b.cfg.ReportSlack-time.Since(start), 0))
			continue wait
		case <-overflow:
			killedFor = sandbox.ExitOutputLimit
		case err := <-stdinLost:
			return nil, err
		}
		break
	}
	res.Duration = time.Since(start)
	if watch != nil {
		res.CPU, res.CPUMeasured = watch.result()
		// A workload that ended by itself past its budget (the readings
		// are a quarter of a second apart) spent it all the same.
		if killedFor == "" && waitErr == nil && res.CPUMeasured && res.CPU >= lim.CPU {
			killedFor, limit = sandbox.ExitTimeout, sandbox.LimitCPU
		}
	}
	stdout := &capbuf.Buffer{Max: outCap}
	stderr := &capbuf.Buffer{Max: lim.StderrBytes}
	if killedFor != "" {
		// What was written up to the kill (or, for a workload that
		// overran and ended by itself, up to its end): read before the
		// pod, and
		// its logs, go. Nothing else is: the pod is the only way to
		// stop the workload, and its emptyDirs go with it, so the
		// writable mounts' volumes stay marked lost and nothing is
		// collected.
		cancelRun()
		<-done
		if err := b.readLogs(ctx, name, stdout, stderr); err != nil {
			return nil, err
		}
		if err := b.deletePod(ctx, name); err != nil {
			return nil, err
		}
		for _, m := range spec.Mounts {
			if !m.ReadOnly {
				_ = b.vols.markLost(m.Volume, fmt.Sprintf("pod %s, which mounted it writable, was deleted at its %s", name, killedFor))
			}
		}
		res.Exit, res.Code = killedFor, 128+9
		res.Limit = limit
		res.Stdout, res.StdoutTruncated = stdout.Result()
		res.Stderr, res.StderrTruncated = stderr.Result()
		if spec.StreamOut != nil {
			res.Stdout = nil
		}
		return res, nil
	}
	if waitErr != nil {
		return nil, waitErr
	}
	cs := containerStatus(final, workContainer)
	term := cs.State.Terminated
	if err := b.readLogs(ctx, name, stdout, stderr); err != nil {
		return nil, err
	}
	res.Stdout, res.StdoutTruncated = stdout.Result()
	read := int64(len(res.Stdout))
	if res.StdoutTruncated {
		read++ // a byte past the cap was read, and dropped
	}
	if err := followed.check(ctx, name, read); err != nil {
		return nil, err
	}
	res.Stderr, res.StderrTruncated = stderr.Result()
	if cs.ImageID != "" {
		res.ImageID = imageID(cs.ImageID)
	}
	res.Code = int(term.ExitCode)
	switch {
	case term.Reason == "OOMKilled":
		res.Exit = sandbox.ExitOOM
	case killOnOver && stdout.Truncated():
		res.Exit = sandbox.ExitOutputLimit
	default:
		res.Exit = sandbox.ExitExited
	}
	if so := spec.StreamOut; so != nil {
		archive := res.Stdout
		res.Stdout = nil
		res.Collected = map[string]sandbox.Collected{}
		if res.Exit == sandbox.ExitExited {
			c, err := collectStream(ctx, archive, so.Dir, streamout.QuotaPolicy(*so, spec.CollectPolicy))
			if err != nil {
				return nil, err
			}
			res.Collected[so.Dir] = c
		}
	}
	// The work container has ended (by itself, or at the memory limit),
	// and every process of it with it: what it left in the volumes is
	// read through the keeper.
	if needsKeeper(spec) {
		if err := p.keep(ctx, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// imageID turns what the kubelet reports ("sha256:…", or a repository
// digest "name@sha256:…") into "sha256:" and 64 hex digits.
func imageID(s string) string {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func collectStream(ctx context.Context, archive []byte, dir string, pol firewall.Policy) (sandbox.Collected, error) {
	var buf bytes.Buffer
	man, err := firewall.Filter(ctx, bytes.NewReader(archive), &buf, pol)
	switch {
	case err == nil:
		return sandbox.Collected{Archive: buf.Bytes(), Manifest: man}, nil
	case ctx.Err() != nil:
		return sandbox.Collected{}, fmt.Errorf("kubernetes: stream of %s: %w", dir, ctx.Err())
	}
	return sandbox.Collected{}, fmt.Errorf("%w: %s: %w", sandbox.ErrCollect, dir, err)
}

// readLogs reads both output streams of the work container, each up to
// one byte past its cap.
func (b *Backend) readLogs(ctx context.Context, name string, stdout, stderr *capbuf.Buffer) error {
	lctx, cancel := context.WithTimeout(ctx, logReadTimeout)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- b.readLog(lctx, name, corev1.LogStreamStdout, false, stdout.Max+1, stdout) }()
	go func() { errs <- b.readLog(lctx, name, corev1.LogStreamStderr, false, stderr.Max+1, stderr) }()
	return errors.Join(<-errs, <-errs)
}

func (b *Backend) readLog(ctx context.Context, name, stream string, follow bool, limit int64, w io.Writer) error {
	rc, err := b.cli.CoreV1().Pods(b.cfg.Namespace).GetLogs(name, &corev1.PodLogOptions{
		Container: workContainer, Follow: follow, Stream: &stream, LimitBytes: &limit,
	}).Stream(ctx)
	if err != nil {
		return fmt.Errorf("kubernetes: %s of pod %s: %w", strings.ToLower(stream), name, err)
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("kubernetes: %s of pod %s: %w", strings.ToLower(stream), name, err)
	}
	return nil
}

// attach streams stdin to a container's standard input (closed at its
// end) and its standard error to stderr when not nil.
func (b *Backend) attach(ctx context.Context, name, container string, stdin io.Reader, stderr io.Writer) error {
	req := b.cli.CoreV1().RESTClient().Post().Resource("pods").Namespace(b.cfg.Namespace).Name(name).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: stdin != nil, Stderr: stderr != nil}, scheme.ParameterCodec)
	exec, err := b.executor(req.URL())
	if err != nil {
		return fmt.Errorf("kubernetes: attach: %w", err)
	}
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stderr: stderr}); err != nil {
		return fmt.Errorf("kubernetes: attach to %s/%s: %w", name, container, err)
	}
	return nil
}

// stdinGrace is how long a workload whose input could not be attached has
// to be reported ended before its input counts as lost.
const stdinGrace = 10 * time.Second

// endsSoon reports whether the pod's workload is, or within stdinGrace is
// reported, terminated.
func (b *Backend) endsSoon(ctx context.Context, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, stdinGrace)
	defer cancel()
	for {
		pod, err := b.cli.CoreV1().Pods(b.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if cs := containerStatus(pod, workContainer); cs != nil && cs.State.Terminated != nil {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// overran tells whether the work container of a pod that ended ran longer
// than wall by the runtime's own start and finish times. The API keeps
// them to the whole second, so their difference may exceed the true run
// by up to a second: only a difference beyond wall plus that second is
// certain to be an overrun.
func overran(pod *corev1.Pod, wall time.Duration) bool {
	cs := containerStatus(pod, workContainer)
	if cs == nil || cs.State.Terminated == nil {
		return false
	}
	t := cs.State.Terminated
	if t.StartedAt.IsZero() || t.FinishedAt.IsZero() {
		return false
	}
	return t.FinishedAt.Sub(t.StartedAt.Time) > wall+time.Second
}

// followCount counts what a follower of standard output read, up to max
// bytes, and calls onOver, if set, when the count passes max-1 (the cap).
type followCount struct {
	max    int64
	n      atomic.Int64
	onOver func()
	done   chan struct{}
	err    error // the follower's, once done is closed
}

func (f *followCount) Write(b []byte) (int, error) {
	n := f.n.Add(int64(len(b)))
	if f.onOver != nil && n > f.max-1 {
		f.onOver()
	}
	return len(b), nil
}

// check compares what was read of a finished workload's standard output
// (read bytes, up to the cap and one more) with what its follower read.
// The kubelet rotates a running container's log once it passes the
// node's containerLogMaxSize (10 MiB unless configured), and a read after
// the end then returns only the last file: the head of the output is
// gone, and grading the tail could pass what the whole would fail. A
// follower that read more than the final read holds is such a rotation,
// and the run is an error of the node, not the workload's. The follower
// is given followGrace to reach the end; one that does not (or broke)
// and read no more than the final read cannot tell, and the read stands.
func (f *followCount) check(ctx context.Context, name string, read int64) error {
	select {
	case <-f.done:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(followGrace):
	}
	if seen := min(f.n.Load(), f.max); seen > read {
		return fmt.Errorf("kubernetes: standard output of pod %s: %d bytes were written and the log holds %d: the node rotated the log while the workload ran (its kubelet's containerLogMaxSize must exceed the output cap, %d bytes)",
			name, seen, read, f.max-1)
	}
	return nil
}
