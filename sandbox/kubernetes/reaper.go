package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/strictgrade/strictgrade/sandbox"
)

func selector(run string) string {
	set := labels.Set{sandbox.LabelManaged: "true"}
	if run != "" {
		set[sandbox.LabelRun] = run
	}
	return labels.SelectorFromSet(set).String()
}

// listPods lists the managed pods of run (all runs when empty), with
// those already being deleted.
func (b *Backend) listPods(ctx context.Context, run string) ([]corev1.Pod, error) {
	l, err := b.cli.CoreV1().Pods(b.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(run)})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list pods: %w", err)
	}
	return l.Items, nil
}

// Leftovers implements sandbox.Reaper: the run's pods ("pod/NAME") and
// host-side volumes ("volume/NAME"), sorted.
func (b *Backend) Leftovers(ctx context.Context, run string) ([]string, error) {
	if !sandbox.ValidName(run) {
		return nil, fmt.Errorf("%w: run %q", sandbox.ErrSpec, run)
	}
	pods, err := b.listPods(ctx, run)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods {
		out = append(out, "pod/"+p.Name)
	}
	vols, err := b.vols.list()
	if err != nil {
		return nil, err
	}
	for name, rec := range vols {
		if rec.Run == run {
			out = append(out, "volume/"+name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// GC implements sandbox.Reaper with sandbox.GCOptions' semantics: pods go
// in GCReport.Containers, host-side volumes in GCReport.Volumes.
func (b *Backend) GC(ctx context.Context, opts sandbox.GCOptions) (sandbox.GCReport, error) {
	return b.gc(ctx, opts, time.Now(), processProbe)
}

func (b *Backend) gc(ctx context.Context, opts sandbox.GCOptions, now time.Time, p probe) (sandbox.GCReport, error) {
	var rep sandbox.GCReport
	if opts.Run != "" && !sandbox.ValidName(opts.Run) {
		return rep, fmt.Errorf("%w: run %q", sandbox.ErrSpec, opts.Run)
	}
	maxAge := opts.MaxAge
	if maxAge <= 0 {
		maxAge = sandbox.DefaultMaxAge
	}
	pick := func(owner map[string]string, created time.Time) bool {
		switch {
		case opts.OlderThan > 0 && now.Sub(created) < opts.OlderThan:
			return false
		case opts.All || abandoned(owner, created, now, maxAge, p):
			return true
		}
		rep.Kept++
		return false
	}
	pods, err := b.listPods(ctx, opts.Run)
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, pod := range pods {
		if !pick(pod.Annotations, pod.CreationTimestamp.Time) {
			continue
		}
		if !opts.DryRun {
			if err := b.deletePod(ctx, pod.Name); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
		}
		rep.Containers = append(rep.Containers, pod.Name)
	}
	vols, err := b.vols.list()
	if err != nil {
		return rep, errors.Join(append(errs, err)...)
	}
	for _, name := range slices.Sorted(mapsKeys(vols)) {
		rec := vols[name]
		if opts.Run != "" && rec.Run != opts.Run {
			continue
		}
		if !pick(rec.Owner, rec.Created) {
			continue
		}
		if !opts.DryRun {
			if err := b.vols.remove(name); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		rep.Volumes = append(rep.Volumes, name)
	}
	slices.Sort(rep.Containers)
	return rep, errors.Join(errs...)
}

func mapsKeys[M ~map[K]V, K comparable, V any](m M) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
