package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The pod's CPU time comes from its node's kubelet: the summary API
// (stats/summary, the figures metrics-server is built on), reached through
// the API server's node proxy like every other request of the backend. The
// kubelet reads each container's cgroup (under gVisor, the cgroup of the
// sandbox's user-space kernel, which does the workload's work) through the
// runtime when it is asked, so a reading is the container's CPU time at
// that moment, never anything the workload writes. The proxy needs the
// right to get nodes/proxy (a ClusterRole); a backend without it, a node
// whose address the API server will not proxy to (a loopback one), or a
// kubelet that does not answer leaves the budget to a wall clock, as
// before (sandbox.Unmetered).

// meterEvery is how often a run reads its container's CPU time. Readings
// of one node are shared (nodeStats), so runs on one node cost one request
// per interval between them.
const meterEvery = 250 * time.Millisecond

// statsSummary is the part of the kubelet's summary the meter reads.
type statsSummary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		Containers []struct {
			Name string `json:"name"`
			CPU  *struct {
				Time                 time.Time `json:"time"`
				UsageCoreNanoSeconds *uint64   `json:"usageCoreNanoSeconds"`
			} `json:"cpu"`
		} `json:"containers"`
	} `json:"pods"`
}

// cpuSample is one container's CPU time as its node read it.
type cpuSample struct {
	used time.Duration
	at   time.Time
}

// nodeStats shares the readings of one node's summary between the runs on
// it: a reading younger than meterEvery is reused.
type nodeStats struct {
	mu   sync.Mutex
	at   time.Time
	cpu  map[[3]string]cpuSample // namespace, pod, container
	err  error
	busy bool
}

// meter is the backend's source of CPU time for its pods.
type meter struct {
	b     *Backend
	mu    sync.Mutex
	nodes map[string]*nodeStats
	// off is set once the cluster refused the summary for good (no
	// right to the node proxy): the budget is a wall clock from then on.
	off error
	// fetch reads one node's summary (fetchSummary; the unit tests
	// replace it).
	fetch func(ctx context.Context, node string) (map[[3]string]cpuSample, error)
}

func newMeter(b *Backend) *meter {
	m := &meter{b: b, nodes: map[string]*nodeStats{}}
	m.fetch = m.fetchSummary
	return m
}

// errUnmetered says that the pods' CPU time cannot be read, for good;
// other errors of a reading (a kubelet slow to answer) are tried again.
var errUnmetered = errors.New("kubernetes: no CPU accounting")

// metered reports whether the pods' CPU time may be read.
func (m *meter) metered() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.off == nil
}

// read returns the CPU time of container c of pod name on node, and
// whether the summary listed it (a container that has ended is no longer
// listed).
func (m *meter) read(ctx context.Context, node, name, c string) (cpuSample, bool, error) {
	m.mu.Lock()
	if m.off != nil {
		m.mu.Unlock()
		return cpuSample{}, false, m.off
	}
	ns := m.nodes[node]
	if ns == nil {
		ns = &nodeStats{}
		m.nodes[node] = ns
	}
	m.mu.Unlock()

	ns.mu.Lock()
	defer ns.mu.Unlock()
	if time.Since(ns.at) >= meterEvery {
		cpu, err := m.fetch(ctx, node)
		ns.at, ns.cpu, ns.err = time.Now(), cpu, err
		if err != nil && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) || apierrors.IsBadRequest(err)) {
			m.mu.Lock()
			if m.off == nil {
				m.off = fmt.Errorf("%w: node %s's summary: %v", errUnmetered, node, err)
				m.b.log.Warn("kubernetes: the pods' CPU time cannot be read; CPU budgets are wall clocks", "node", node, "err", err)
			}
			ns.err = m.off
			m.mu.Unlock()
		}
	}
	if ns.err != nil {
		return cpuSample{}, false, ns.err
	}
	s, ok := ns.cpu[[3]string{m.b.cfg.Namespace, name, c}]
	return s, ok, nil
}

// fetchSummary reads node's summary once, through the API server.
func (m *meter) fetchSummary(ctx context.Context, node string) (map[[3]string]cpuSample, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := m.b.cli.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/nodes", node, "proxy", "stats", "summary").
		Param("only_cpu_and_memory", "true").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out, err := parseSummary(raw)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: node %s's summary: %w", node, err)
	}
	return out, nil
}

// parseSummary reads each container's CPU time from a kubelet's summary.
func parseSummary(raw []byte) (map[[3]string]cpuSample, error) {
	var sum statsSummary
	if err := json.Unmarshal(raw, &sum); err != nil {
		return nil, err
	}
	out := map[[3]string]cpuSample{}
	for _, p := range sum.Pods {
		for _, c := range p.Containers {
			if c.CPU == nil || c.CPU.UsageCoreNanoSeconds == nil {
				continue
			}
			out[[3]string{p.PodRef.Namespace, p.PodRef.Name, c.Name}] = cpuSample{used: time.Duration(*c.CPU.UsageCoreNanoSeconds), at: c.CPU.Time}
		}
	}
	return out, nil
}

// cpuWatch follows one run's container CPU time from the run's start.
type cpuWatch struct {
	budget time.Duration
	spent  chan struct{} // closed when the budget is used
	lost   chan error    // no reading can be taken: the run is unmetered

	mu       sync.Mutex
	base     time.Duration
	based    bool
	used     time.Duration // since base, at the last reading
	readings int           // readings after the base
}

// watch starts following container c of pod name on node until ctx ends.
func (m *meter) watch(ctx context.Context, node, name, c string, budget time.Duration) *cpuWatch {
	w := &cpuWatch{budget: budget, spent: make(chan struct{}), lost: make(chan error, 1)}
	go func() {
		t := time.NewTicker(meterEvery)
		defer t.Stop()
		for {
			s, ok, err := m.read(ctx, node, name, c)
			if ctx.Err() != nil {
				return
			}
			w.mu.Lock()
			switch {
			case errors.Is(err, errUnmetered):
				w.mu.Unlock()
				w.lost <- err
				return
			case err == nil && ok && !w.based:
				// The container has waited for its start until now:
				// what it used before is the loader's hand-over, not
				// the workload's.
				w.base, w.based = s.used, true
			case err == nil && ok:
				w.used, w.readings = max(w.used, s.used-w.base), w.readings+1
				if w.used >= w.budget {
					w.mu.Unlock()
					close(w.spent)
					return
				}
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// result is the CPU time the run used at the last reading, and whether
// any reading after the start was taken.
func (w *cpuWatch) result() (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.used, w.readings > 0
}
