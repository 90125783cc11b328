package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/strictgrade/strictgrade/firewall"
)

// Tree is a directory laid out inside a sandbox before its workload
// starts: the archive passes the firewall under Policy on the controller's
// side, and its canonical form appears at Dir owned by someone other than
// User and read-only to it (directories and files without write
// permission; files with an execute bit keep it). Nothing of a tree
// outlives its sandbox.
//
// Trees are how a phase hands a sandbox its inputs without a volume: a
// backend may send them on the sandbox's own input stream to a trusted
// init inside it (the Docker backend does, when it has one; ADR 0013), or
// fall back to read-only volumes (TreeVolumes).
type Tree struct {
	Dir     string // absolute, clean, not "/"; see Spec.Validate for where it may go
	Archive []byte
	Policy  firewall.Policy
}

// treeDirs returns the Dir of every tree.
func treeDirs(ts []Tree) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Dir
	}
	return out
}

// TreeVolumes lays out spec's trees as read-only volumes of vols, for a
// backend with no other way to do it: it returns spec with the trees turned
// into mounts, and a function that removes the volumes (call it on every
// path, after the sandbox is gone; it is never nil, and it removes on a
// cleanup context of its own, so a cancelled ctx, the usual reason for
// the failure it cleans up after, still removes them). A rejected archive is
// ErrSpec wrapping the firewall's error: trees come from the controller,
// never from the workload.
func TreeVolumes(ctx context.Context, vols Volumes, spec Spec) (Spec, func(context.Context), error) {
	var made []string
	remove := func(ctx context.Context) {
		if len(made) == 0 {
			return
		}
		cctx, cancel := CleanupContext(ctx, DefaultCleanupTimeout)
		defer cancel()
		for _, name := range made {
			_ = vols.RemoveVolume(cctx, name)
		}
	}
	if len(spec.Trees) == 0 {
		return spec, remove, nil
	}
	out := spec
	out.Trees = nil
	out.Mounts = slices.Clone(spec.Mounts)
	for _, t := range spec.Trees {
		name, _, err := vols.NewVolumeWith(ctx, spec.Run, spec.Phase, bytes.NewReader(t.Archive), CopyInOptions{Policy: t.Policy})
		if name != "" {
			made = append(made, name)
		}
		if err != nil {
			return Spec{}, remove, fmt.Errorf("sandbox: lay out %s: %w", t.Dir, err)
		}
		out.Mounts = append(out.Mounts, Mount{Volume: name, Target: t.Dir, ReadOnly: true})
	}
	return out, remove, nil
}

// PrepareWithTreeVolumes prepares spec with prepare after laying its trees
// out as read-only volumes (TreeVolumes); the volumes go when the returned
// sandbox has run or is closed. It is how a backend without a way of its
// own serves Spec.Trees.
func PrepareWithTreeVolumes(ctx context.Context, vols Volumes, spec Spec, prepare func(context.Context, Spec) (Prepared, error)) (Prepared, error) {
	vspec, drop, err := TreeVolumes(ctx, vols, spec)
	if err != nil {
		drop(ctx)
		return nil, err
	}
	p, err := prepare(ctx, vspec)
	if err != nil {
		drop(ctx)
		return nil, err
	}
	if len(spec.Trees) == 0 {
		return p, nil
	}
	return &treePrepared{Prepared: p, drop: drop}, nil
}

// treePrepared removes a prepared sandbox's tree volumes after it.
type treePrepared struct {
	Prepared
	drop func(context.Context)
	once sync.Once
}

func (t *treePrepared) Run(ctx context.Context) (*Result, error) {
	defer t.once.Do(func() { t.drop(ctx) })
	return t.Prepared.Run(ctx)
}

func (t *treePrepared) Close(ctx context.Context) {
	t.Prepared.Close(ctx)
	t.once.Do(func() { t.drop(ctx) })
}
