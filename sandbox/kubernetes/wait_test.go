package kubernetes

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/strictgrade/strictgrade/sandbox"
)

func fakePod(t *testing.T, b *Backend) *corev1.Pod {
	t.Helper()
	pod := buildPod(podParams{name: "sg-r-p-1", namespace: "grading", spec: sandbox.Spec{Run: "r", Phase: "p", Image: "i"},
		lim: sandbox.DefaultLimits, cfg: b.cfg, owner: ownerAnnotations()})
	if _, err := b.cli.CoreV1().Pods("grading").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pod
}

func terminated(p *corev1.Pod) (bool, error) {
	cs := containerStatus(p, workContainer)
	return cs != nil && cs.State.Terminated != nil, podFailed(p, workContainer)
}

func TestWaitPodEnds(t *testing.T) {
	b, cli := newFake(t)
	pod := fakePod(t, b)
	go func() {
		time.Sleep(100 * time.Millisecond)
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: workContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}}}
		_, _ = cli.CoreV1().Pods("grading").UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	}()
	p, err := b.waitPod(t.Context(), pod.Name, 10*time.Second, "end", terminated)
	if err != nil || containerStatus(p, workContainer).State.Terminated.ExitCode != 3 {
		t.Fatalf("waitPod: %v", err)
	}
}

func TestWaitPodDeleted(t *testing.T) {
	b, cli := newFake(t)
	pod := fakePod(t, b)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = cli.CoreV1().Pods("grading").Delete(t.Context(), pod.Name, metav1.DeleteOptions{})
	}()
	start := time.Now()
	if _, err := b.waitPod(t.Context(), pod.Name, 0, "end", terminated); !errors.Is(err, errDeleted) {
		t.Fatalf("a pod deleted while waited on: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("noticed after %v", time.Since(start))
	}
	// Marked for deletion is the same.
	pod = fakePod(t, b)
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	_, _ = cli.CoreV1().Pods("grading").Update(t.Context(), pod, metav1.UpdateOptions{})
	if _, err := b.waitPod(t.Context(), pod.Name, 0, "end", terminated); !errors.Is(err, errDeleted) {
		t.Fatalf("a pod marked for deletion: %v", err)
	}
}

func TestWaitPodFailed(t *testing.T) {
	b, cli := newFake(t)
	pod := fakePod(t, b)
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: workContainer, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}}
	_, _ = cli.CoreV1().Pods("grading").UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	if _, err := b.waitPod(t.Context(), pod.Name, 10*time.Second, "end", terminated); err == nil || !strings.Contains(err.Error(), "ErrImageNeverPull") {
		t.Fatalf("an image the node lacks: %v", err)
	}
}

func TestWaitPodTimeout(t *testing.T) {
	b, _ := newFake(t)
	pod := fakePod(t, b)
	start := time.Now()
	_, err := b.waitPod(t.Context(), pod.Name, 300*time.Millisecond, "started", terminated)
	if err == nil || !strings.Contains(err.Error(), "not within") || time.Since(start) > 5*time.Second {
		t.Fatalf("a pod that never starts: %v after %v", err, time.Since(start))
	}
}

func TestWaitPodUnreachable(t *testing.T) {
	b, cli := newFake(t)
	b.cfg.LostTimeout = time.Second
	pod := fakePod(t, b)
	down := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	cli.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, down })
	cli.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, nil, down })
	start := time.Now()
	_, err := b.waitPod(t.Context(), pod.Name, 0, "end", terminated)
	if err == nil || !strings.Contains(err.Error(), "unreachable") || !errors.Is(err, down) {
		t.Fatalf("an API server gone: %v", err)
	}
	if d := time.Since(start); d < time.Second || d > 5*time.Second {
		t.Errorf("gave up after %v, want about LostTimeout", d)
	}
}

// TestOverran: the runtime's start and finish times, to the second, make
// a timeout only when they are certain to be more than the limit apart.
func TestOverran(t *testing.T) {
	at := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	ended := func(ran time.Duration) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: workContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				StartedAt: metav1.NewTime(at), FinishedAt: metav1.NewTime(at.Add(ran))}}}}}}
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		wall time.Duration
		want bool
	}{
		{"well inside", ended(0), 2 * time.Second, false},
		{"at the limit", ended(2 * time.Second), 2 * time.Second, false},
		// 3 s apart in whole seconds may be 2.01 s of true run.
		{"within the second of rounding", ended(3 * time.Second), 2 * time.Second, false},
		{"beyond it", ended(4 * time.Second), 2 * time.Second, true},
		{"a fractional limit", ended(3 * time.Second), 1500 * time.Millisecond, true},
		{"no times", &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: workContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}}}, time.Second, false},
		{"still running", &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: workContainer,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}}}}, time.Second, false},
		{"no status", &corev1.Pod{}, time.Second, false},
	} {
		if got := overran(c.pod, c.wall); got != c.want {
			t.Errorf("%s: overran %v, want %v", c.name, got, c.want)
		}
	}
}
