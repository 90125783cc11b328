package kubernetes

import (
	"context"
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strictgrade/strictgrade/sandbox"
)

var idPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// resolveRun and resolvePhase label the pods ImageID makes.
const (
	resolveRun   = "images"
	resolvePhase = "resolve"
)

// ImageID implements sandbox.Images. The API server knows no images, so
// the node is asked: a pod with ref as its only container, whose command
// does not exist, is created; the kubelet reports the image it resolved
// for the container as soon as the container is made, and the pod is
// removed. The answer is kept for the backend's lifetime. An image the
// node does not hold is an error (pods never pull).
func (b *Backend) ImageID(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("%w: empty image reference", sandbox.ErrSpec)
	}
	b.imgMu.Lock()
	id, ok := b.images[ref]
	b.imgMu.Unlock()
	if ok {
		return id, nil
	}
	lim, _ := sandbox.Limits{}.Resolve()
	spec := sandbox.Spec{Run: resolveRun, Phase: resolvePhase, Image: ref, Cmd: []string{"/nonexistent/strictgrade-resolve"}}
	name := podName(resolveRun, resolvePhase)
	pod := buildPod(podParams{name: name, namespace: b.cfg.Namespace, spec: spec, lim: lim, cfg: b.cfg, owner: ownerAnnotations()})
	pod.Spec.InitContainers = nil
	defer b.deletePod(ctx, name)
	if _, err := b.cli.CoreV1().Pods(b.cfg.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("kubernetes: create pod: %w", err)
	}
	var got string
	_, err := b.waitPod(ctx, name, b.cfg.StartTimeout, "image resolved", func(p *corev1.Pod) (bool, error) {
		if cs := containerStatus(p, workContainer); cs != nil && cs.ImageID != "" {
			got = imageID(cs.ImageID)
			return true, nil
		}
		return false, podFailed(p, workContainer)
	})
	if err != nil {
		return "", fmt.Errorf("kubernetes: image %s: %w", ref, err)
	}
	if !idPattern.MatchString(got) {
		return "", fmt.Errorf("kubernetes: image %s: the node reported %q", ref, got)
	}
	b.imgMu.Lock()
	b.images[ref] = got
	b.imgMu.Unlock()
	return got, nil
}
