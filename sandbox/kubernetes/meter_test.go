package kubernetes

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestParseSummary reads the containers' CPU time from a kubelet summary
// as the kubelet writes it, and skips containers without a figure.
func TestParseSummary(t *testing.T) {
	raw := []byte(`{"node":{"nodeName":"n1","cpu":{"usageCoreNanoSeconds":99}},"pods":[
	 {"podRef":{"name":"p1","namespace":"ns","uid":"u"},"containers":[
	  {"name":"work","cpu":{"time":"2026-12-07T14:00:00Z","usageNanoCores":5,"usageCoreNanoSeconds":1500000000}},
	  {"name":"load","cpu":{"time":"2026-12-07T14:00:00Z"}},
	  {"name":"keep"}]},
	 {"podRef":{"name":"p2","namespace":"other"},"containers":[
	  {"name":"work","cpu":{"time":"2026-12-07T14:00:01Z","usageCoreNanoSeconds":7}}]}]}`)
	got, err := parseSummary(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d containers read, want 2: %v", len(got), got)
	}
	s := got[[3]string{"ns", "p1", "work"}]
	if s.used != 1500*time.Millisecond || !s.at.Equal(time.Date(2026, 12, 7, 14, 0, 0, 0, time.UTC)) {
		t.Errorf("p1/work: %+v", s)
	}
	if s := got[[3]string{"other", "p2", "work"}]; s.used != 7 {
		t.Errorf("p2/work: %+v", s)
	}
	if _, err := parseSummary([]byte("<html>")); err == nil {
		t.Error("a summary that is not JSON was read")
	}
}

// fakeNode stands in for a node's summary: the work container's CPU time
// is what used says, or the summary fails with err.
type fakeNode struct {
	mu    sync.Mutex
	used  time.Duration
	err   error
	calls int
}

func (f *fakeNode) fetch(ctx context.Context, node string) (map[[3]string]cpuSample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return map[[3]string]cpuSample{{"ns", "pod", workContainer}: {used: f.used, at: time.Now()}}, nil
}

func (f *fakeNode) set(used time.Duration, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used, f.err = used, err
}

func testMeter(f *fakeNode) *meter {
	m := newMeter(&Backend{cfg: Config{Namespace: "ns"}, log: slog.New(slog.DiscardHandler)})
	m.fetch = f.fetch
	return m
}

// TestWatchSpendsFromTheStart: the budget counts from the first reading
// (what the container used before is not the workload's), a failed
// reading is tried again, and the watch signals once the budget is used.
func TestWatchSpendsFromTheStart(t *testing.T) {
	f := &fakeNode{used: 3 * time.Second}
	w := testMeter(f).watch(t.Context(), "n1", "pod", workContainer, time.Second)
	time.Sleep(2 * meterEvery)
	select {
	case <-w.spent:
		t.Fatal("the CPU time used before the start was charged")
	default:
	}
	f.set(0, errors.New("the kubelet is slow")) // tried again, not lost
	time.Sleep(2 * meterEvery)
	f.set(3*time.Second+900*time.Millisecond, nil)
	// Polled, not slept on: a loaded machine may hold the watch back.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		used, ok := w.result()
		if ok && used == 900*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("used %v (measured %v), want 900ms", used, ok)
		}
	}
	f.set(4*time.Second+100*time.Millisecond, nil)
	select {
	case <-w.spent:
	case err := <-w.lost:
		t.Fatalf("lost: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the budget was used and the watch did not say")
	}
	if used, _ := w.result(); used < time.Second {
		t.Errorf("spent at %v", used)
	}
}

// TestWatchWithoutTheRight: a cluster that refuses the summary (no right
// to the node proxy) leaves the run unmetered, and every later run of the
// backend too, without asking again.
func TestWatchWithoutTheRight(t *testing.T) {
	f := &fakeNode{err: apierrors.NewForbidden(schema.GroupResource{Resource: "nodes/proxy"}, "n1", errors.New("no"))}
	m := testMeter(f)
	w := m.watch(t.Context(), "n1", "pod", workContainer, time.Second)
	select {
	case err := <-w.lost:
		if !errors.Is(err, errUnmetered) {
			t.Errorf("lost with %v, want errUnmetered", err)
		}
	case <-w.spent:
		t.Fatal("spent without a reading")
	case <-time.After(5 * time.Second):
		t.Fatal("a refused summary did not end the watch")
	}
	if m.metered() {
		t.Error("the backend still meters after the cluster refused it")
	}
	calls := f.calls
	if _, _, err := m.read(t.Context(), "n2", "pod", workContainer); !errors.Is(err, errUnmetered) || f.calls != calls {
		t.Errorf("a later read: %v after %d more requests", err, f.calls-calls)
	}
}

// TestNodeReadingsShared: runs on one node share its readings.
func TestNodeReadingsShared(t *testing.T) {
	f := &fakeNode{used: time.Second}
	m := testMeter(f)
	start := time.Now()
	for range 10 {
		if _, ok, err := m.read(t.Context(), "n1", "pod", workContainer); err != nil || !ok {
			t.Fatalf("read: %v %v", ok, err)
		}
	}
	// One request per interval that has begun (a loaded machine may
	// stretch ten reads past one).
	if most := 1 + int(time.Since(start)/meterEvery); f.calls > most || f.calls < 1 {
		t.Errorf("10 reads in %v made %d requests, want 1 to %d", time.Since(start), f.calls, most)
	}
}
