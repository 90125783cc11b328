//go:build engine

package engine_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/errdefs"

	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
)

// pooled returns a backend of its own with sginit and a pool, closed (and
// checked to leave nothing of its own) when the test ends.
func pooled(t *testing.T, cfg engine.Config) *engine.Docker {
	t.Helper()
	initImage, err := images.Ensure(t.Context(), eng, images.Init(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	d, err := engine.NewDocker(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.UseInit(initImage)
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		assertNoLeftovers(t, d.PoolRun())
	})
	return d
}

// treeSpec is a probe run with one tree.
func treeSpec(t *testing.T, run string, args ...string) engine.Spec {
	s := probe(run, args...)
	s.Trees = []engine.Tree{{Dir: "/t", Archive: tarOf(t, map[string]string{"a.txt": "alpha"}).Bytes()}}
	s.Limits.TmpfsBytes = 8 << 20
	return s
}

// waitPooled waits until the pool holds n sandboxes and returns their IDs.
func waitPooled(t *testing.T, d *engine.Docker, n int) []string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ids := d.PooledIDs()
		if len(ids) >= n {
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool holds %d sandboxes after a minute, want %d", len(ids), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func exists(t *testing.T, id string) bool {
	_, err := dockerClient(t).ContainerInspect(context.Background(), id)
	if err != nil && !errdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestPoolHandsOutOnce shows that a pooled sandbox is handed out once:
// used, it is gone, and the pool refills with a new one; and that the
// profile observed inside a pooled sandbox is the hardened one.
func TestPoolHandsOutOnce(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	d := pooled(t, engine.Config{Pool: 1})
	if !d.Warm(t.Context(), treeSpec(t, run, "observe"), 1) {
		t.Fatal("Warm refused a spec with trees")
	}
	var used []string
	for i := range 4 {
		waiting := waitPooled(t, d, 1)
		if slices.ContainsFunc(waiting, func(id string) bool { return slices.Contains(used, id) }) {
			t.Fatalf("a used sandbox is back in the pool: %v (used %v)", waiting, used)
		}
		res, err := d.Run(t.Context(), treeSpec(t, run, "observe"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(waiting, res.ID) {
			t.Errorf("run %d used %.12s, not one of the pooled %v", i, res.ID, waiting)
		}
		if res.Exit != engine.ExitExited || res.Code != 0 {
			t.Fatalf("run %d: %s %d: %s", i, res.Exit, res.Code, res.Stderr)
		}
		checkObservation(t, res.Stdout)
		if err := d.Settle(t.Context()); err != nil { // its removal is under way
			t.Fatal(err)
		}
		if exists(t, res.ID) {
			t.Errorf("run %d: the used sandbox %.12s still exists", i, res.ID)
		}
		used = append(used, res.ID)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(used)))) != len(used) {
		t.Errorf("a sandbox served twice: %v", used)
	}
}

// TestPoolDiscardsIdle shows that a pooled sandbox nobody used is
// discarded after PoolMaxIdle, never handed out late.
func TestPoolDiscardsIdle(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	d := pooled(t, engine.Config{Pool: 1, PoolMaxIdle: 2 * time.Second})
	d.Warm(t.Context(), treeSpec(t, run, "observe"), 1)
	idle := waitPooled(t, d, 1)[0]
	deadline := time.Now().Add(30 * time.Second)
	for exists(t, idle) {
		if time.Now().After(deadline) {
			t.Fatalf("the idle sandbox %.12s was not discarded", idle)
		}
		time.Sleep(200 * time.Millisecond)
	}
	res, err := d.Run(t.Context(), treeSpec(t, run, "observe"))
	if err != nil {
		t.Fatal(err)
	}
	if res.ID == idle {
		t.Errorf("the discarded sandbox %.12s was handed out", idle)
	}
}

// TestPoolWallCountsFromWork shows that the wall clock of a pooled
// sandbox starts when its work arrives, not when it started.
func TestPoolWallCountsFromWork(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	d := pooled(t, engine.Config{Pool: 1})
	spec := treeSpec(t, run, "sleep", "300ms")
	spec.Limits.Wall = 2 * time.Second
	d.Warm(t.Context(), spec, 1)
	waitPooled(t, d, 1)
	time.Sleep(3 * time.Second) // longer than the wall limit
	res, err := d.Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != engine.ExitExited || res.Code != 0 {
		t.Errorf("a pooled sandbox that waited longer than its wall limit ended %s (%d): %s", res.Exit, res.Code, res.Stderr)
	}
}

// TestPoolCloseDrains shows that Close removes every pooled sandbox and
// the sginit volume.
func TestPoolCloseDrains(t *testing.T) {
	t.Parallel()
	initImage, err := images.Ensure(t.Context(), eng, images.Init(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	d, err := engine.NewDocker(t.Context(), engine.Config{Pool: 3})
	if err != nil {
		t.Fatal(err)
	}
	d.UseInit(initImage)
	run := newRun(t)
	d.Warm(t.Context(), treeSpec(t, run, "observe"), 2)
	waitPooled(t, d, 3)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	f := filters.NewArgs(filters.Arg("label", engine.LabelRun+"="+d.PoolRun()))
	cs, err := dockerClient(t).ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := dockerClient(t).VolumeList(context.Background(), volume.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs)+len(vs.Volumes) != 0 {
		t.Errorf("after Close: %d containers and %d volumes of the pool remain", len(cs), len(vs.Volumes))
	}
}

// TestSginitVolumeShared: backends on one daemon share one sginit volume,
// published once however many race to make it; it outlives them; a marker
// naming a volume that is gone is replaced; GC removes the ones whose init
// image is gone.
func TestSginitVolumeShared(t *testing.T) {
	ctx := t.Context()
	initImage, err := images.Ensure(ctx, eng, images.Init(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "sgtest-sginit-" + time.Now().Format("150405.000000")[7:] + "-"
	ours := func() []string { return volumesNamed(t, engine.LabelSginit, prefix) }
	backend := func() *engine.Docker {
		d, err := engine.NewDocker(context.Background(), engine.Config{InitImage: initImage})
		if err != nil {
			t.Fatal(err)
		}
		d.UseSginitPrefix(prefix)
		return d
	}
	gcAll := func() {
		d := backend()
		defer d.Close()
		if removed, err := d.GCInit(context.Background(), true); err != nil || len(removed) == 0 {
			t.Errorf("GC removed %v: %v", removed, err)
		}
	}
	t.Cleanup(gcAll)

	const racers = 4
	got := make([]string, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			d := backend()
			defer d.Close()
			var err error
			if got[i], err = d.InitVolume(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, v := range got {
		if v != got[0] {
			t.Fatalf("racing backends got different volumes: %v", got)
		}
	}
	left := ours()
	if len(left) != 2 || !slices.Contains(left, got[0]) {
		t.Fatalf("after the race and Close: %v, want the marker and %s", left, got[0])
	}
	d := backend()
	again, err := d.InitVolume(ctx)
	d.Close()
	if err != nil || again != got[0] {
		t.Fatalf("a later backend got %q (%v), want the shared %s", again, err, got[0])
	}

	// A marker whose volume is gone is replaced, not trusted.
	if err := dockerClient(t).VolumeRemove(ctx, got[0], false); err != nil {
		t.Fatal(err)
	}
	d = backend()
	fresh, err := d.InitVolume(ctx)
	d.Close()
	if err != nil || fresh == got[0] || !strings.HasPrefix(fresh, prefix) {
		t.Fatalf("after the volume went: %q (%v)", fresh, err)
	}

	// GC keeps the volumes of an image that exists and removes the rest.
	stale := prefix + "0000"
	if _, err := dockerClient(t).VolumeCreate(ctx, volume.CreateOptions{Name: stale, Driver: "local",
		Labels: map[string]string{engine.LabelSginit: "sha256:" + strings.Repeat("0", 64)}}); err != nil {
		t.Fatal(err)
	}
	d = backend()
	removed, err := d.GCInit(ctx, false)
	d.Close()
	if err != nil || !slices.Equal(removed, []string{stale}) {
		t.Fatalf("GC removed %v (%v), want only %s", removed, err, stale)
	}
	if left := ours(); len(left) != 2 || !slices.Contains(left, fresh) {
		t.Fatalf("after GC: %v", left)
	}
}
