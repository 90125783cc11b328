package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/strictgrade/strictgrade/sandbox"
)

// NetworkPolicyName is the deny-all NetworkPolicy New creates in the
// namespace: it selects every managed pod and allows no traffic either way.
const NetworkPolicyName = "strictgrade-deny-all"

// Config configures the Kubernetes backend. The zero value reads the
// kubeconfig named by $KUBECONFIG (or ~/.kube/config), uses its context's
// namespace (or "default") and needs LoaderImage.
type Config struct {
	// Kubeconfig is the path of the kubeconfig file; empty means
	// $KUBECONFIG, then ~/.kube/config, then the in-cluster
	// configuration.
	Kubeconfig string
	// Namespace holds every pod; empty means the kubeconfig context's
	// namespace, or "default". It must exist.
	Namespace string
	// RuntimeClass is the pods' runtimeClassName ("gvisor"); empty means
	// the cluster's default runtime, recorded as runc.
	RuntimeClass string
	// LoaderImage is the image of the init container that lays out
	// volumes: any image with python3 (3.9 or later) at /usr/bin or
	// /usr/local/bin, such as the strictgrade runtime image. Required.
	LoaderImage string
	// NodeName, when set, binds every pod to that node (a cluster without
	// a scheduler needs it); empty leaves pods to the scheduler.
	NodeName string
	// StartTimeout bounds how long a pod may take to be scheduled and to
	// start a container; zero means 120s (a busy node has been seen to
	// take more than 60 s). A pod that never starts is an error after it.
	StartTimeout time.Duration
	// ReportSlack is how long past a run's wall limit the backend still
	// waits to see the workload end before it deletes the pod as a
	// timeout; zero means 5s. The kubelet notices a container's exit at
	// its next relist (every second by default) and reports it through
	// the API server, later still on a busy node, so an end seen after
	// the limit may have come well before it. The runtime's own start and
	// finish times (the API keeps them to the second) decide instead: a
	// workload whose finish is more than the limit plus one second after
	// its start overran, and is a timeout though it ended by itself.
	ReportSlack time.Duration
	// LostTimeout bounds how long the API server may be unreachable while
	// a run waits on it; zero means 20s.
	LostTimeout time.Duration
	// CleanupTimeout bounds each removal on the way out; zero means 30s.
	CleanupTimeout time.Duration
	// VolumeDir holds the host-side volumes; empty means
	// $TMPDIR/strictgrade-kubernetes-volumes, created 0700.
	VolumeDir string
	// Pool is how many pods of each shape the backend was asked to warm
	// (sandbox.Warmer) it keeps started, never used, refilling the shape
	// as its pods are taken: the pod starts of a stream of grades then
	// happen while earlier grades run. Zero keeps only what Warm asks
	// for, and refills nothing.
	Pool int
	// PoolMaxIdle bounds how long a pod started ahead of time (Warm) may
	// wait for its work; an older one is deleted unused. Zero means 2m.
	PoolMaxIdle time.Duration
	// SeccompProfile is the seccomp profile of every container, as a
	// Localhost profile: a path under the kubelet's seccomp directory
	// (<kubelet root>/seccomp) of each node. Empty means
	// DefaultSeccompProfile, strictgrade's sandbox profile
	// (internal/seccomp, ADR 0020), which each node must hold there:
	// install SeccompProfileJSON as that file. RuntimeDefaultSeccomp keeps
	// the runtime's default profile instead, under which sandboxes can
	// signal each other through locks, watches and the page cache of the
	// image layers they share (TAXONOMY V11.9 to V11.11).
	SeccompProfile string
	// MeterCPU makes a CPU-time budget (Limits.CPU) CPU time, read from
	// each pod's node (the kubelet's summary through the API server's
	// node proxy, which needs the right to get nodes/proxy), with
	// Limits.Wall as its backstop. Off, the budget is a wall clock of the
	// budget plus 2 s (sandbox.Unmetered). It is off by default: under
	// gVisor each reading has the runtime's shim run runsc once per
	// container of the node, and with four proof matrices on one
	// two-core node the cost has not been measured apart from the load
	// (docs/time-limits.md).
	MeterCPU bool
	// QPS and Burst bound the client's request rate; zero means 100 and
	// 200.
	QPS   float32
	Burst int
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
}

// Backend is the Kubernetes sandbox.Backend.
type Backend struct {
	cfg  Config
	rest *rest.Config
	cli  kubernetes.Interface
	log  *slog.Logger
	vols *volumeStore

	pool  *warmPool // pods started ahead of time
	meter *meter    // the pods' CPU time, from their nodes

	imgMu  sync.Mutex
	images map[string]string // image ref → image ID, resolved once
}

var (
	_ sandbox.Backend = (*Backend)(nil)
	_ sandbox.Warmer  = (*Backend)(nil)
)

// New connects to the API server named by cfg, checks that the namespace
// exists, creates the deny-all NetworkPolicy there and runs one pod with
// the loader image that checks the whole path, the two output streams
// kept apart included (sandbox.ErrPreflight when any of it fails). Close
// the backend when done.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	rc, ns, err := restConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: kubeconfig: %v", sandbox.ErrPreflight, err)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = ns
	}
	if cfg.SeccompProfile == "" {
		cfg.SeccompProfile = DefaultSeccompProfile
	}
	cli, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: kubernetes client: %v", sandbox.ErrPreflight, err)
	}
	b, err := newBackend(ctx, cfg, rc, cli)
	if err != nil {
		return nil, err
	}
	if err := b.preflight(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// preflight runs one pod through the whole path (loader, attach, logs)
// and checks that its two output streams come back apart: the API server
// and the kubelet must both serve PodLogOptions.Stream, or standard error
// would be graded as standard output.
func (b *Backend) preflight(ctx context.Context) error {
	res, err := b.Run(ctx, sandbox.Spec{
		Run: "preflight", Phase: "logs", Image: b.cfg.LoaderImage,
		Cmd:   []string{"python3", "-I", "-S", "-c", "import sys; sys.stdout.write(sys.stdin.read()); sys.stderr.write('err')"},
		Stdin: strings.NewReader("out"),
	})
	if err != nil {
		return fmt.Errorf("%w: a pod with the loader image: %v", sandbox.ErrPreflight, err)
	}
	if string(res.Stdout) != "out" || string(res.Stderr) != "err" || res.Exit != sandbox.ExitExited || res.Code != 0 {
		return fmt.Errorf("%w: output streams not kept apart (stdout %q, stderr %q): the API server and kubelet need PodLogsQuerySplitStreams",
			sandbox.ErrPreflight, res.Stdout, res.Stderr)
	}
	return nil
}

// newBackend finishes New with a given client (a fake one in tests).
func newBackend(ctx context.Context, cfg Config, rc *rest.Config, cli kubernetes.Interface) (*Backend, error) {
	if cfg.LoaderImage == "" {
		return nil, fmt.Errorf("%w: a loader image (with python3) is required", sandbox.ErrPreflight)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 120 * time.Second
	}
	if cfg.LostTimeout <= 0 {
		cfg.LostTimeout = 20 * time.Second
	}
	if cfg.ReportSlack <= 0 {
		cfg.ReportSlack = 5 * time.Second
	}
	if cfg.CleanupTimeout <= 0 {
		cfg.CleanupTimeout = 30 * time.Second
	}
	if cfg.PoolMaxIdle <= 0 {
		cfg.PoolMaxIdle = 2 * time.Minute
	}
	if cfg.VolumeDir == "" {
		cfg.VolumeDir = filepath.Join(os.TempDir(), "strictgrade-kubernetes-volumes")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	vols, err := openVolumeStore(cfg.VolumeDir)
	if err != nil {
		return nil, fmt.Errorf("%w: volume directory: %v", sandbox.ErrPreflight, err)
	}
	b := &Backend{cfg: cfg, rest: rc, cli: cli, log: log, vols: vols, images: map[string]string{}}
	b.meter = newMeter(b)
	if _, err := cli.CoreV1().Namespaces().Get(ctx, cfg.Namespace, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("%w: namespace %q: %v", sandbox.ErrPreflight, cfg.Namespace, err)
	}
	if err := b.checkRuntimeClass(ctx); err != nil {
		return nil, err
	}
	if err := b.ensureNetworkPolicy(ctx); err != nil {
		return nil, fmt.Errorf("%w: network policy: %v", sandbox.ErrPreflight, err)
	}
	b.pool = newWarmPool(b)
	return b, nil
}

// checkRuntimeClass refuses a RuntimeClass the cluster does not have, by
// name, before any pod is made. A client that may not read RuntimeClasses
// (they are cluster-wide; a grading fleet's role may be namespaced) is let
// through: the preflight pod then meets the same refusal from admission.
func (b *Backend) checkRuntimeClass(ctx context.Context) error {
	if b.cfg.RuntimeClass == "" {
		return nil
	}
	_, err := b.cli.NodeV1().RuntimeClasses().Get(ctx, b.cfg.RuntimeClass, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: the cluster has no RuntimeClass %q", sandbox.ErrPreflight, b.cfg.RuntimeClass)
	case apierrors.IsForbidden(err):
		b.log.Debug("RuntimeClass not readable; the preflight pod checks it", "class", b.cfg.RuntimeClass, "error", err)
		return nil
	}
	return fmt.Errorf("%w: RuntimeClass %q: %v", sandbox.ErrPreflight, b.cfg.RuntimeClass, err)
}

func restConfig(cfg Config) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", err
	}
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	if rc.QPS <= 0 {
		rc.QPS = 100
	}
	if rc.Burst <= 0 {
		rc.Burst = 200
	}
	return rc, ns, nil
}

// denyAll is the NetworkPolicy that isolates every managed pod.
func denyAll(namespace string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: NetworkPolicyName, Namespace: namespace,
			Labels: map[string]string{sandbox.LabelManaged: "true"},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{sandbox.LabelManaged: "true"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

func (b *Backend) ensureNetworkPolicy(ctx context.Context) error {
	np := denyAll(b.cfg.Namespace)
	_, err := b.cli.NetworkingV1().NetworkPolicies(b.cfg.Namespace).Create(ctx, np, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Someone may have loosened it: put ours back.
		cur, gerr := b.cli.NetworkingV1().NetworkPolicies(b.cfg.Namespace).Get(ctx, NetworkPolicyName, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		np.ResourceVersion = cur.ResourceVersion
		_, err = b.cli.NetworkingV1().NetworkPolicies(b.cfg.Namespace).Update(ctx, np, metav1.UpdateOptions{})
	}
	return err
}

// Runtime implements sandbox.Backend: "kubernetes/" and the runtime class,
// or "kubernetes/runc" for the cluster's default.
func (b *Backend) Runtime() string {
	if b.cfg.RuntimeClass != "" {
		return "kubernetes/" + b.cfg.RuntimeClass
	}
	return "kubernetes/runc"
}

// Namespace is the namespace that holds the backend's pods.
func (b *Backend) Namespace() string { return b.cfg.Namespace }

// Close implements sandbox.Backend: it deletes the pods started ahead of
// time and not used, and ends the starts under way. Every pod a run made
// is already gone.
func (b *Backend) Close() error {
	b.pool.close()
	return nil
}

func (b *Backend) cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return sandbox.CleanupContext(ctx, b.cfg.CleanupTimeout)
}

// deletePod removes a pod at once (grace period zero), on a context that
// survives ctx, retrying until that context ends so that an API server
// that is back within CleanupTimeout still gets the removal; a missing pod
// is not an error.
func (b *Backend) deletePod(ctx context.Context, name string) error {
	cctx, cancel := b.cleanupCtx(ctx)
	defer cancel()
	zero := int64(0)
	for {
		err := b.cli.CoreV1().Pods(b.cfg.Namespace).Delete(cctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		b.log.Debug("delete pod failed", "pod", name, "err", err)
		select {
		case <-cctx.Done():
			return fmt.Errorf("kubernetes: delete pod %s: %w", name, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
