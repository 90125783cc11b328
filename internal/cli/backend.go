package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"k8s.io/klog/v2"

	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/sandbox/kubernetes"
)

// Backend names the --backend flag takes.
const (
	backendDocker     = "docker"
	backendKubernetes = "kubernetes"
)

// backendArgs chooses where sandboxes run and how a grade uses them: the
// flags every command that grades shares.
type backendArgs struct {
	backend      string
	runtime      string
	kubeconfig   string
	namespace    string
	node         string
	seccomp      string
	caseParallel int
}

// register adds the backend flags to fs, defaulting from the environment.
func (b *backendArgs) register(fs *flag.FlagSet) {
	b.registerWhere(fs)
	n, _ := strconv.Atoi(os.Getenv("STRICTGRADE_CASE_PARALLEL"))
	fs.IntVar(&b.caseParallel, "case-parallel", n,
		"how many containers of one grade run at once for a task with a container per case (default $STRICTGRADE_CASE_PARALLEL, else half the CPUs, at least 2); 1 runs them one after another")
}

// registerWhere adds the flags that say where sandboxes run, for a
// command that grades nothing (gc).
func (b *backendArgs) registerWhere(fs *flag.FlagSet) {
	fs.StringVar(&b.backend, "backend", envOr("STRICTGRADE_BACKEND", backendDocker),
		"where sandboxes run: docker (the daemon named by $DOCKER_HOST) or kubernetes (the cluster of --kubeconfig); $STRICTGRADE_BACKEND sets the default")
	fs.StringVar(&b.runtime, "runtime", os.Getenv("STRICTGRADE_RUNTIME"),
		"OCI runtime the sandboxes run with, e.g. runsc for gVisor: on docker a runtime the daemon lists, on kubernetes a RuntimeClass name (default $STRICTGRADE_RUNTIME, else the default one); refused when missing")
	fs.StringVar(&b.kubeconfig, "kubeconfig", "",
		"kubernetes: the kubeconfig file (default $KUBECONFIG, then ~/.kube/config, then in-cluster)")
	fs.StringVar(&b.namespace, "namespace", os.Getenv("STRICTGRADE_K8S_NAMESPACE"),
		"kubernetes: the namespace that holds the pods; it must exist (default $STRICTGRADE_K8S_NAMESPACE, else the kubeconfig's)")
	fs.StringVar(&b.node, "node", os.Getenv("STRICTGRADE_K8S_NODE"),
		"kubernetes: bind every pod to this node instead of leaving it to the scheduler (default $STRICTGRADE_K8S_NODE)")
	fs.StringVar(&b.seccomp, "seccomp-profile", os.Getenv("STRICTGRADE_K8S_SECCOMP_PROFILE"),
		"kubernetes: the pods' seccomp profile, a path under each node's kubelet seccomp directory (default $STRICTGRADE_K8S_SECCOMP_PROFILE, else "+kubernetes.DefaultSeccompProfile+", strictgrade's sandbox profile, which the nodes must hold); RuntimeDefault keeps the runtime's default and the channels ADR 0020 closes")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// check refuses a backend name or a combination of flags that cannot work,
// before anything connects.
func (b *backendArgs) check() error {
	switch b.backend {
	case backendDocker:
		if b.kubeconfig != "" || b.node != "" || b.seccomp != "" {
			return usagef("--kubeconfig, --node and --seccomp-profile select a Kubernetes cluster; add --backend kubernetes")
		}
	case backendKubernetes:
	default:
		return usagef("--backend %q: want docker or kubernetes", b.backend)
	}
	if b.caseParallel < 0 {
		return usagef("--case-parallel %d: want 1 or more (0 for the default)", b.caseParallel)
	}
	return nil
}

// configure fills cfg's backend for the chosen one and returns what to
// call once the controller made from it is closed. Docker needs nothing
// here (the controller connects itself); Kubernetes gets its backend, and
// the runtime and judge images by the references `images build` tags them
// with, which the cluster must hold (see .ci/cluster.sh): a cluster finds
// no images by recipe, and nothing is built for it.
func (b *backendArgs) configure(ctx context.Context, stdio IO, cfg *controller.Config) (func(), error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	cfg.CaseParallel = b.caseParallel
	cfg.Runtime = b.runtime
	if b.backend != backendKubernetes {
		return func() {}, nil
	}
	if cfg.RuntimeImage == "" {
		cfg.RuntimeImage = os.Getenv("STRICTGRADE_RUNTIME_IMAGE")
	}
	if cfg.JudgeImage == "" {
		cfg.JudgeImage = os.Getenv("STRICTGRADE_JUDGE_IMAGE")
	}
	for _, s := range []struct {
		ref *string
		img images.Image
	}{{&cfg.RuntimeImage, images.Python{}}, {&cfg.JudgeImage, images.Judge()}} {
		if *s.ref != "" {
			continue
		}
		ref, err := images.Ref(ctx, s.img)
		if err != nil {
			return nil, err
		}
		*s.ref = ref
	}
	quietKlog(stdio.Log)
	// The pool as controller.Config.Pool sets it for Docker: MaxInFlight
	// pods per shape unless told otherwise, none for a one-shot grade.
	pool := cfg.Pool
	if pool == 0 {
		pool = max(cfg.MaxInFlight, 1)
	}
	kb, err := kubernetes.New(ctx, kubernetes.Config{
		Kubeconfig: b.kubeconfig, Namespace: b.namespace, NodeName: b.node, RuntimeClass: b.runtime,
		SeccompProfile: b.seccomp, LoaderImage: cfg.RuntimeImage, Logger: stdio.Log, Pool: max(pool, 0),
	})
	if err != nil {
		return nil, fmt.Errorf("kubernetes backend: %w", err)
	}
	cfg.Backend = kb
	return func() { _ = kb.Close() }, nil
}

// open makes the controller the flags select for cfg. With build set and
// the Docker backend, missing images are built first (newController); a
// Kubernetes cluster's images are never built here. Call the returned
// function when done: it closes the controller and the backend.
func (b *backendArgs) open(ctx context.Context, stdio IO, cfg controller.Config, build bool) (*controller.Controller, func(), error) {
	done, err := b.configure(ctx, stdio, &cfg)
	if err != nil {
		return nil, nil, err
	}
	var ctrl *controller.Controller
	if build && cfg.Backend == nil {
		ctrl, err = newController(ctx, stdio, cfg)
	} else {
		ctrl, err = controller.New(ctx, cfg)
	}
	if err != nil {
		done()
		if b.backend == backendKubernetes && errors.Is(err, controller.ErrImageMissing) {
			return nil, nil, fmt.Errorf("%w (on Kubernetes the node must hold the images `strictgrade images build` tags: .ci/cluster.sh imports them)", err)
		}
		return nil, nil, err
	}
	return ctrl, func() { _ = ctrl.Close(); done() }, nil
}

// quietKlog sends what client-go logs through klog (its own "unhandled"
// errors, such as a stream that ended while being closed, which the
// backend sees and handles itself) to log at debug level, instead of
// klog's default of standard error, where a user would take them for the
// grade's failure.
func quietKlog(log *slog.Logger) {
	klog.SetSlogLogger(slog.New(debugHandler{log.Handler()}))
}

// debugHandler passes every record to h at debug level.
type debugHandler struct{ h slog.Handler }

func (d debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugHandler) Handle(ctx context.Context, r slog.Record) error {
	if !d.h.Enabled(ctx, slog.LevelDebug) {
		return nil // a caller that asked no Enabled first
	}
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d debugHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugHandler{d.h.WithAttrs(attrs)}
}

func (d debugHandler) WithGroup(name string) slog.Handler { return debugHandler{d.h.WithGroup(name)} }
