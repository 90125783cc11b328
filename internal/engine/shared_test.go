//go:build engine

package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
)

// sharedCheck runs in a sandbox of the Python image under sginit: it
// reports whether /usr is a read-only mount of its own, whether the
// sandbox user can write there, and that the interpreter's standard
// library loads from it.
const sharedCheck = `
import errno, json, os
mounts = [l.split() for l in open("/proc/self/mountinfo")]
own = [m for m in mounts if m[4] == "/usr"]
try:
    open("/usr/lib/strictgrade-write-test", "w")
    write = "written"
except OSError as e:
    write = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"mounted": len(own) == 1, "ro": bool(own) and "ro" in own[0][5].split(","),
    "write": write, "json": json.__file__, "uid": os.getuid()}))
`

// TestSharedDirectoryVolume: the Python image names /usr as its shared
// directory; the first sandbox reads the image's own copy while the volume
// is made in the background; later ones, in this backend and the next,
// mount the volume read-only (the sandbox user cannot write there, the
// standard library loads from it); GC removes it.
func TestSharedDirectoryVolume(t *testing.T) {
	ctx := t.Context()
	img := pythonImage(t)
	initImage, err := images.Ensure(ctx, eng, images.Init(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "sgtest-shared-" + time.Now().Format("150405.000000")[7:] + "-"
	ours := func() []string { return volumesNamed(t, engine.LabelShared, prefix) }
	bare := func() *engine.Docker {
		d, err := engine.NewDocker(context.Background(), engine.Config{InitImage: initImage})
		if err != nil {
			t.Fatal(err)
		}
		d.UseSginitPrefix(prefix)
		return d
	}
	backend := func() *engine.Docker {
		d := bare()
		d.UseInit(initImage)
		return d
	}
	t.Cleanup(func() {
		// A backend that makes no sginit volume in the background, or GC
		// would race it and leave one.
		d := bare()
		defer d.Close()
		if _, err := d.GCInit(context.Background(), true); err != nil {
			t.Errorf("GC: %v", err)
		}
		if left := ours(); len(left) != 0 {
			t.Errorf("after GC --all: %v", left)
		}
		if left := volumesNamed(t, "", prefix); len(left) != 0 {
			t.Errorf("after GC --all: %v", left)
		}
	})
	type seen struct {
		Mounted, RO bool
		Write, JSON string
		UID         int
	}
	sandbox := func(run string) engine.Spec {
		spec := engine.Spec{Run: run, Phase: "candidate", Image: img, Cmd: []string{"python3", "-I", "-c", sharedCheck},
			Trees: []engine.Tree{{Dir: "/artifacts", Archive: tarOf(t, map[string]string{"a.py": "x = 1\n"}).Bytes()}}}
		spec.Limits.TmpfsBytes = 8 << 20
		return spec
	}
	check := func(d *engine.Docker) seen {
		t.Helper()
		run := newRun(t)
		res, err := d.Run(ctx, sandbox(run))
		if err != nil {
			t.Fatal(err)
		}
		if res.Exit != engine.ExitExited || res.Code != 0 {
			t.Fatalf("exit %s %d: %s", res.Exit, res.Code, res.Stderr)
		}
		var s seen
		if err := json.Unmarshal(res.Stdout, &s); err != nil {
			t.Fatalf("%v: %s", err, res.Stdout)
		}
		_ = d.Settle(ctx)
		assertNoLeftovers(t, run)
		return s
	}

	d := backend()
	first := check(d)
	if first.UID != 65532 || !strings.HasPrefix(first.JSON, "/usr/lib/python3") {
		t.Fatalf("first sandbox: %+v", first)
	}
	d.WaitImageVolumes()
	if vs := ours(); len(vs) != 2 {
		t.Fatalf("after the background fill: volumes %v, want a marker and the volume", vs)
	}
	want := seen{Mounted: true, RO: true, Write: "EROFS", JSON: first.JSON, UID: 65532}
	if got := check(d); got != want {
		t.Errorf("a sandbox after the fill: %+v, want %+v", got, want)
	}
	d.Close()
	// The next backend finds the volume at once: its first sandbox mounts it.
	d = backend()
	if got := check(d); got != want {
		t.Errorf("a later backend's first sandbox: %+v, want %+v", got, want)
	}
	if vs := ours(); len(vs) != 2 || !strings.HasPrefix(vs[1], vs[0]+"-") {
		t.Errorf("volumes after both backends: %v, want one marker and the volume it names", vs)
	}

	// The volumes removed between two sandboxes (as gc --all does): the
	// next one is the grader's error, not a sandbox with an empty
	// /usr, and the daemon's empty stand-in goes; the one after reads
	// the image's copy and the volume is made again.
	for _, v := range ours() {
		if err := dockerClient(t).VolumeRemove(ctx, v, false); err != nil {
			t.Fatal(err)
		}
	}
	run := newRun(t)
	if res, err := d.Run(ctx, sandbox(run)); err == nil {
		t.Errorf("a sandbox after its shared volume went ran: %s %d %s", res.Exit, res.Code, res.Stdout)
	}
	assertNoLeftovers(t, run)
	if vs := ours(); len(vs) != 0 {
		t.Errorf("after the failed sandbox: %v", vs)
	}
	if got := check(d); got.Mounted || got.UID != 65532 {
		t.Errorf("the sandbox after: %+v", got)
	}
	d.WaitImageVolumes()
	if vs := ours(); len(vs) != 2 {
		t.Errorf("made again: %v", vs)
	}
	d.Close()
}

// volumesNamed lists the volumes whose name starts with prefix, sorted,
// those with label only when label is not empty.
func volumesNamed(t *testing.T, label, prefix string) []string {
	t.Helper()
	opts := volume.ListOptions{}
	if label != "" {
		opts.Filters = filters.NewArgs(filters.Arg("label", label))
	}
	vs, err := dockerClient(t).VolumeList(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vs.Volumes {
		if strings.HasPrefix(v.Name, prefix) {
			names = append(names, v.Name)
		}
	}
	slices.Sort(names)
	return names
}
