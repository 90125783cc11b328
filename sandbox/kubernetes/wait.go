package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// errDeleted means a pod was deleted, or marked for deletion, by someone
// other than the run that made it.
var errDeleted = errors.New("kubernetes: pod deleted from outside while it ran")

// rewatch bounds each watch, so that an API server that stops answering
// without closing the connection is noticed by the Get that follows.
const rewatch = 10 * time.Second

// waitPod watches the pod until cond says it is done or fails. A pod
// deleted meanwhile is errDeleted; an API server unreachable for longer
// than LostTimeout is an error; timeout, when positive, bounds the whole
// wait.
func (b *Backend) waitPod(ctx context.Context, name string, timeout time.Duration, what string, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	pods := b.cli.CoreV1().Pods(b.cfg.Namespace)
	check := func(p *corev1.Pod) (bool, error) {
		if p.DeletionTimestamp != nil {
			return true, errDeleted
		}
		return cond(p)
	}
	lastOK := time.Now()
	var lastErr error
	for {
		if err := ctx.Err(); err != nil {
			if timeout > 0 && errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("kubernetes: pod %s: %s not within %v", name, what, timeout)
			}
			return nil, err
		}
		if lastErr != nil {
			if time.Since(lastOK) > b.cfg.LostTimeout {
				return nil, fmt.Errorf("kubernetes: API server unreachable for %v while waiting for pod %s: %w", b.cfg.LostTimeout, name, lastErr)
			}
			select {
			case <-ctx.Done():
				continue
			case <-time.After(200 * time.Millisecond):
			}
		}
		gctx, cancel := context.WithTimeout(ctx, b.cfg.LostTimeout)
		pod, err := pods.Get(gctx, name, metav1.GetOptions{})
		cancel()
		if apierrors.IsNotFound(err) {
			return nil, errDeleted
		}
		if err != nil {
			lastErr = err
			continue
		}
		lastOK, lastErr = time.Now(), nil
		if done, err := check(pod); done || err != nil {
			return pod, err
		}
		wctx, cancel := context.WithTimeout(ctx, rewatch)
		w, err := pods.Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: pod.ResourceVersion})
		if err != nil {
			cancel()
			lastErr = err
			continue
		}
		p, done, err := drainWatch(wctx, w, check)
		w.Stop()
		cancel()
		if done || err != nil {
			return p, err
		}
	}
}

// drainWatch applies check to each event until it is done, the watch
// ends or ctx does (a watch need not close its channel with its context).
func drainWatch(ctx context.Context, w watch.Interface, check func(*corev1.Pod) (bool, error)) (*corev1.Pod, bool, error) {
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return nil, false, nil
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return nil, false, nil
		}
		switch ev.Type {
		case watch.Deleted:
			return nil, true, errDeleted
		case watch.Added, watch.Modified:
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if done, err := check(p); done || err != nil {
				return p, true, err
			}
		default:
			// An error event (such as a resource version too old):
			// start again from a fresh Get.
			return nil, false, nil
		}
	}
}

// containerStatus returns the status of the named container, init or not.
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// fatalWaiting are the reasons a container waits that never resolve by
// themselves.
var fatalWaiting = map[string]bool{
	"ErrImageNeverPull": true, "InvalidImageName": true, "CreateContainerConfigError": true,
	"CreateContainerError": true, "ImageInspectError": true, "RunContainerError": true,
	"ErrImagePull": true, "ImagePullBackOff": true,
}

// podFailed returns an error when the pod can no longer run what it was
// made for: failed as a whole, or a container stuck for good.
func podFailed(p *corev1.Pod, names ...string) error {
	if p.Status.Phase == corev1.PodFailed {
		return fmt.Errorf("kubernetes: pod %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message)
	}
	for _, n := range names {
		if cs := containerStatus(p, n); cs != nil && cs.State.Waiting != nil && fatalWaiting[cs.State.Waiting.Reason] {
			return fmt.Errorf("kubernetes: pod %s: container %s: %s: %s", p.Name, n, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		}
	}
	return nil
}

// untilRunning is a waitPod condition: done once container runs. Its end
// before that, or a pod failure that the containers in watch show, is an
// error; ended says what the end means.
func untilRunning(container, ended string, watch ...string) func(*corev1.Pod) (bool, error) {
	return func(p *corev1.Pod) (bool, error) {
		if err := podFailed(p, watch...); err != nil {
			return true, err
		}
		cs := containerStatus(p, container)
		switch {
		case cs == nil:
			return false, nil
		case cs.State.Running != nil:
			return true, nil
		case cs.State.Terminated != nil:
			return true, fmt.Errorf("kubernetes: pod %s: %s (exit %d, %s)", p.Name, ended, cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
		}
		return false, nil
	}
}
