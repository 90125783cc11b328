package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/capbuf"
	"github.com/strictgrade/strictgrade/internal/streamout"
	"github.com/strictgrade/strictgrade/sandbox"
)

// keepContainer is the container that outlives the workload in a pod
// with writable mounts or Spec.Collect. A container's files go with it, and
// a pod's emptyDirs with the pod; the keeper, the loader image's python3
// waiting for nothing, mounts the same emptyDirs, so that once the work
// container has ended (every process of it gone with its PID namespace)
// the backend can read them over an exec in the keeper: the stream-out
// wrapper's tree mode writes each as an archive, which crosses the
// firewall on the controller's side. It runs as the sandbox user with the
// hardened profile and is never given anything the workload wrote to run.
const keepContainer = "keep"

// keepWait is the keeper's main process: it waits until the pod goes.
const keepWait = "import signal\nwhile True:\n    signal.pause()\n"

// keepMemory and keepStorage are the keeper's own limits: two small
// interpreters and the listing of one directory at a time, which the
// tree writer bounds by the policy's entry count.
const (
	keepMemory  = 96 << 20
	keepStorage = 16 << 20
)

// needsKeeper reports whether a pod of spec, run to completion, needs the
// keeper.
func needsKeeper(spec sandbox.Spec) bool {
	return len(spec.Collect) > 0 || slices.ContainsFunc(spec.Mounts, func(m sandbox.Mount) bool { return !m.ReadOnly })
}

// kept reports whether the keeper of a run's pod mounts spec mount m: a
// writable one, or one that holds a collected path. A session's keeper
// mounts every volume.
func kept(spec sandbox.Spec, m sandbox.Mount, session bool) bool {
	return session || !m.ReadOnly || slices.ContainsFunc(spec.Collect, func(c string) bool { return sandbox.Within(c, m.Target) })
}

// checkCollect refuses a collected path that lies in no mount: the
// backend reads only what the pod's volumes hold.
func checkCollect(spec sandbox.Spec) error {
	for _, c := range spec.Collect {
		if !slices.ContainsFunc(spec.Mounts, func(m sandbox.Mount) bool { return sandbox.Within(c, m.Target) }) {
			return fmt.Errorf("%w: collect path %s is in no volume mount (this backend collects from volumes only)", sandbox.ErrSpec, c)
		}
	}
	return nil
}

// keeper is the keeper container of a pod of spec, or nil when it needs
// none (a session's pod needs one when it has volumes). It comes after the work container: the kubelet starts a pod's
// containers one after another, in order, once the loader has ended, and
// the workload's start is what a phase waits for. (A sidecar, an init
// container that keeps running, would start before the loader, but the
// kubelet stops sidecars once the main containers have ended: just when
// the keeper is needed.)
func keeper(spec sandbox.Spec, cfg Config, session bool) *corev1.Container {
	if session && len(spec.Mounts) == 0 || !session && !needsKeeper(spec) {
		return nil
	}
	var mounts []corev1.VolumeMount
	for i, m := range spec.Mounts {
		if kept(spec, m, session) {
			// Writable, so that the tree writer can give itself the
			// read permission a workload took from its own files.
			mounts = append(mounts, corev1.VolumeMount{Name: mountVolume(i), MountPath: m.Target})
		}
	}
	lim := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(1000, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(keepMemory, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(keepStorage, resource.BinarySI),
	}
	req := lim.DeepCopy()
	req[corev1.ResourceCPU] = *resource.NewMilliQuantity(10, resource.DecimalSI)
	return &corev1.Container{
		Name: keepContainer, Image: cfg.LoaderImage, ImagePullPolicy: corev1.PullNever,
		Command:      []string{"python3", "-I", "-S", "-c", keepWait},
		Env:          []corev1.EnvVar{{Name: "PATH", Value: "/usr/local/bin:/usr/bin:/bin"}},
		VolumeMounts: mounts, Resources: corev1.ResourceRequirements{Limits: lim, Requests: req},
		SecurityContext:          hardenedContext(cfg.SeccompProfile),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// markWritable marks every writable mount's volume lost before the
// workload starts (see volumeStore.markLost): only keep, after a clean
// end, gives them content again.
func (p *prepared) markWritable() error {
	for _, m := range p.spec.Mounts {
		if !m.ReadOnly {
			why := fmt.Sprintf("pod %s, which mounted it writable, did not end in a way that let its content be read back", p.name)
			if err := p.b.vols.markLost(m.Volume, why); err != nil {
				return err
			}
		}
	}
	return nil
}

// keep reads, after the workload ended by itself or at the memory limit,
// every collected path into res.Collected and every writable mount's
// content into its volume, each through the firewall. A tree the firewall
// refuses is ErrCollect: the workload's doing.
func (p *prepared) keep(ctx context.Context, res *sandbox.Result) error {
	spec := p.spec
	// A workload that ended at once may have ended before the keeper
	// started.
	if err := p.keeperRunning(ctx); err != nil {
		return err
	}
	if len(spec.Collect) > 0 && res.Collected == nil {
		res.Collected = make(map[string]sandbox.Collected, len(spec.Collect))
	}
	for _, c := range spec.Collect {
		var buf bytes.Buffer
		man, err := p.b.readTree(ctx, p.name, c, path.Base(c), spec.CollectPolicy, &buf)
		if err != nil {
			return err
		}
		res.Collected[c] = sandbox.Collected{Archive: buf.Bytes(), Manifest: man}
	}
	for _, m := range spec.Mounts {
		if m.ReadOnly {
			continue
		}
		err := p.b.vols.replace(m.Volume, func(w io.Writer) error {
			_, err := p.b.readTree(ctx, p.name, m.Target, "", m.Policy, w)
			return err
		})
		if err != nil {
			return fmt.Errorf("writable mount: %w", err)
		}
	}
	return nil
}

// keeperRunning waits until the pod's keeper runs.
func (p *prepared) keeperRunning(ctx context.Context) error {
	_, err := p.b.waitPod(ctx, p.name, p.b.cfg.StartTimeout, "keeper started",
		untilRunning(keepContainer, "the keeper ended", keepContainer))
	return err
}

// endReader notes whether a read reached the end its writer set: the
// writer closed the pipe, by io.EOF or with an error.
type endReader struct {
	r    io.Reader
	ends bool
}

func (e *endReader) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err != nil {
		e.ends = true
	}
	return n, err
}

// readTree has the keeper of pod name write the tree at dir as an
// archive, entries below base, and filters it through the firewall under
// pol into w. The tree writer ends its archive right after an entry the
// firewall refuses, so a workload's tree is judged whole; the firewall may
// still stop reading first, at a size bound. Either is ErrCollect. An exec
// that fails or exits non-zero before the firewall stopped reading is the
// backend's error: a tree cut short is never judged.
func (b *Backend) readTree(ctx context.Context, name, dir, base string, pol firewall.Policy, w io.Writer) (*firewall.Manifest, error) {
	pr, pw := io.Pipe()
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	stderr := &capbuf.Buffer{Max: 4 << 10}
	type outcome struct {
		code int
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		code, err := b.exec(ectx, name, keepContainer, streamout.TreeCommand(dir, base, pol), nil, pw, stderr)
		if err != nil {
			pw.CloseWithError(err)
		} else {
			pw.Close()
		}
		done <- outcome{code, err}
	}()
	er := &endReader{r: pr}
	man, ferr := firewall.Filter(ctx, er, w, pol)
	// A writer the firewall no longer reads must not wait for it.
	pr.CloseWithError(errors.New("kubernetes: the firewall stopped reading"))
	ended := er.ends
	if ferr != nil && !ended {
		cancel()
	}
	o := <-done
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("kubernetes: reading %s of pod %s: %w", dir, name, ctx.Err())
	case ferr != nil && !ended:
		// The firewall refused before the writer finished.
		return nil, fmt.Errorf("%w: %s: %w", sandbox.ErrCollect, dir, ferr)
	case o.err != nil:
		msg, _ := stderr.Result()
		return nil, fmt.Errorf("kubernetes: reading %s of pod %s: %w %s", dir, name, o.err, bytes.TrimSpace(msg))
	case o.code == streamout.TreeMissing:
		return nil, fmt.Errorf("%w: %s does not exist", sandbox.ErrCollect, dir)
	case o.code != 0:
		msg, _ := stderr.Result()
		return nil, fmt.Errorf("kubernetes: reading %s of pod %s: the tree writer exited %d: %s", dir, name, o.code, bytes.TrimSpace(msg))
	case ferr != nil:
		return nil, fmt.Errorf("%w: %s: %w", sandbox.ErrCollect, dir, ferr)
	}
	return man, nil
}

// exec runs cmd in a container of pod name, with stdin (when not nil),
// stdout and stderr streamed, and returns its exit code. An error is a
// failure to run it or to stream, never its exit status.
func (b *Backend) exec(ctx context.Context, name, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	req := b.cli.CoreV1().RESTClient().Post().Resource("pods").Namespace(b.cfg.Namespace).Name(name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container, Command: cmd,
			Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil,
		}, scheme.ParameterCodec)
	ex, err := b.executor(req.URL())
	if err != nil {
		return 0, fmt.Errorf("kubernetes: exec: %w", err)
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	var ee utilexec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return ee.ExitStatus(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("kubernetes: exec in %s/%s: %w", name, container, err)
	}
	return 0, nil
}

// executor streams a request to url over WebSocket, with SPDY as the
// fallback, as kubectl does.
func (b *Backend) executor(u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(b.rest, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(b.rest, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}
