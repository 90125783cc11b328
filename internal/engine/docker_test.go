//go:build engine

package engine_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
)

// These tests talk to a real Docker daemon. A missing daemon fails the run:
// it never skips silently.

var (
	eng        *engine.Docker
	probeImage string
	runSeq     atomic.Int64
)

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("STRICTGRADE_GC_HELPER") != "" {
		os.Exit(gcHelper())
	}
	ctx := context.Background()
	var err error
	eng, err = engine.NewDocker(ctx, engine.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine tests need a Docker daemon:", err)
		os.Exit(1)
	}
	probeImage, err = images.Ensure(ctx, eng, images.Probe(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe image:", err)
		os.Exit(1)
	}
	code := m.Run()
	eng.Close()
	os.Exit(code)
}

// newRun returns a run id unique to this test process and registers a
// check that nothing labelled with it survives the test.
func newRun(t testing.TB) string {
	run := fmt.Sprintf("t%d-%d", os.Getpid(), runSeq.Add(1))
	t.Cleanup(func() { assertNoLeftovers(t, run) })
	return run
}

func dockerClient(t testing.TB) *client.Client {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func leftovers(t testing.TB, run string) (cs []string, vs []string) {
	cli := dockerClient(t)
	f := filters.NewArgs(filters.Arg("label", engine.LabelRun+"="+run))
	ctx := context.Background()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		cs = append(cs, c.Names[0])
	}
	vl, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vl.Volumes {
		vs = append(vs, v.Name)
	}
	return cs, vs
}

func assertNoLeftovers(t testing.TB, run string) {
	_ = eng.Settle(context.Background()) // removals under way end first
	cs, vs := leftovers(t, run)
	if len(cs)+len(vs) > 0 {
		t.Errorf("run %s left containers %v and volumes %v", run, cs, vs)
		_, _ = eng.GC(context.Background(), engine.GCOptions{Run: run, All: true})
	}
}

func probe(run string, args ...string) engine.Spec {
	return engine.Spec{Run: run, Phase: "test", Image: probeImage, Cmd: append([]string{"/bin/probe"}, args...)}
}

func mustRun(t *testing.T, spec engine.Spec) *engine.Result {
	t.Helper()
	res, err := eng.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestProfileObservedFromInside(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	spec := probe(run, "observe")
	spec.Limits.TmpfsBytes = 8 << 20
	res := mustRun(t, spec)
	if res.Exit != engine.ExitExited || res.Code != 0 {
		t.Fatalf("exit %s %d: %s", res.Exit, res.Code, res.Stderr)
	}
	checkObservation(t, res.Stdout)
}

// checkObservation checks the probe's observe output against the
// hardened profile (/tmp at most 8 MiB).
func checkObservation(t *testing.T, stdout []byte) {
	t.Helper()
	var o struct {
		UID            int      `json:"uid"`
		CapEff         string   `json:"cap_eff"`
		CapBnd         string   `json:"cap_bnd"`
		NoNewPrivs     string   `json:"no_new_privs"`
		Seccomp        string   `json:"seccomp"`
		Interfaces     []string `json:"interfaces"`
		Routes         int      `json:"routes"`
		DialError      string   `json:"dial_error"`
		RootWriteError string   `json:"root_write_error"`
		TmpfsWritten   int64    `json:"tmpfs_written"`
		TmpfsError     string   `json:"tmpfs_error"`
	}
	if err := json.Unmarshal(stdout, &o); err != nil {
		t.Fatalf("probe output %q: %v", stdout, err)
	}
	t.Logf("observed: %+v", o)
	checks := []struct {
		name string
		ok   bool
	}{
		{"uid is 65532", o.UID == 65532},
		{"no effective capabilities", o.CapEff == "0000000000000000"},
		{"no bounding capabilities", o.CapBnd == "0000000000000000"},
		{"NoNewPrivs is 1", o.NoNewPrivs == "1"},
		{"seccomp filter mode (2)", o.Seccomp == "2"},
		{"only loopback", len(o.Interfaces) == 1 && o.Interfaces[0] == "lo"},
		{"no route out", o.Routes == 0},
		{"dial fails", o.DialError != ""},
		{"root filesystem read-only", strings.Contains(o.RootWriteError, "read-only file system")},
		{"tmpfs capped", o.TmpfsWritten <= 8<<20 && strings.Contains(o.TmpfsError, "no space left")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not observed", c.name)
		}
	}
}

func TestForkBombStopsAtPidsLimit(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	spec := probe(run, "forkbomb")
	spec.Limits.PIDs = 48
	spec.Limits.Wall = 60 * time.Second
	res := mustRun(t, spec)
	out := string(res.Stdout)
	var spawned int
	var rest string
	if _, err := fmt.Sscanf(out, "spawned=%d error=%s", &spawned, &rest); err != nil {
		// The Go runtime itself may die when it cannot make a thread;
		// that is the limit holding too.
		if !strings.Contains(string(res.Stderr), "resource temporarily unavailable") && !strings.Contains(string(res.Stderr), "pthread_create failed") {
			t.Fatalf("probe said %q / %q", out, res.Stderr)
		}
	} else if spawned >= 48 {
		t.Fatalf("spawned %d processes under a limit of 48", spawned)
	}
	if res.Exit == engine.ExitTimeout {
		t.Fatal("fork bomb ran into the wall-clock limit instead of the pids limit")
	}
	// The host is unaffected: it can still start processes.
	if err := exec.Command("true").Run(); err != nil {
		t.Fatalf("host cannot fork after the bomb: %v", err)
	}
	t.Logf("spawned=%d exit=%s code=%d", spawned, res.Exit, res.Code)
}

func TestMemoryHogIsOOMKilled(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	spec := probe(run, "memhog")
	spec.Limits.MemoryBytes = 64 << 20
	spec.Limits.Wall = 60 * time.Second
	res := mustRun(t, spec)
	if res.Exit != engine.ExitOOM {
		t.Fatalf("exit %s code %d, want oom; stderr tail %q", res.Exit, res.Code, tail(res.Stderr))
	}
}

func TestEndlessLoopTimesOut(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	spec := probe(run, "spin")
	spec.Limits.Wall = 2 * time.Second
	res := mustRun(t, spec)
	if res.Exit != engine.ExitTimeout {
		t.Fatalf("exit %s, want timeout", res.Exit)
	}
	if res.Duration < 2*time.Second || res.Duration > 20*time.Second {
		t.Fatalf("timed out after %v", res.Duration)
	}
}

func TestStdoutCapped(t *testing.T) {
	// Not parallel: it measures this process's allocations.
	run := newRun(t)
	spec := probe(run, "spew", "100000000")
	spec.Limits.StdoutBytes = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := mustRun(t, spec)
	runtime.ReadMemStats(&after)
	if res.Exit != engine.ExitExited || res.Code != 0 {
		t.Fatalf("exit %s %d: %s", res.Exit, res.Code, res.Stderr)
	}
	if !res.StdoutTruncated || len(res.Stdout) != 1<<20 {
		t.Fatalf("kept %d bytes, truncated=%v", len(res.Stdout), res.StdoutTruncated)
	}
	if !bytes.HasPrefix(res.Stdout, []byte("abcdefghijklmnopqrstuvwxyz")) {
		t.Fatalf("head of stdout lost: %q", res.Stdout[:32])
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("100 MB of stdout: %d KiB allocated by the caller", allocated>>10)
	if allocated > 24<<20 {
		t.Fatalf("caller allocated %d MiB for 100 MB of capped output", allocated>>20)
	}
}

func TestOutputLimitKills(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	spec := probe(run, "spew", "1000000000")
	spec.Limits.StdoutBytes = 64 << 10
	spec.Limits.KillOnOutputLimit = true
	res := mustRun(t, spec)
	if res.Exit != engine.ExitOutputLimit || !res.StdoutTruncated {
		t.Fatalf("exit %s truncated %v", res.Exit, res.StdoutTruncated)
	}
}

func TestStderrFloodIsDrainedNotKilled(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	spec := probe(run, "spewerr", "20000000")
	spec.Limits.StderrBytes = 64 << 10
	spec.Limits.KillOnOutputLimit = true
	res := mustRun(t, spec)
	if res.Exit != engine.ExitExited || res.Code != 0 || !res.StderrTruncated || len(res.Stderr) != 64<<10 {
		t.Fatalf("exit %s code %d truncated %v kept %d", res.Exit, res.Code, res.StderrTruncated, len(res.Stderr))
	}
}

func TestStdin(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	spec := probe(run, "cat")
	spec.Stdin = strings.NewReader("hello\nworld\n")
	res := mustRun(t, spec)
	if string(res.Stdout) != "hello\nworld\n" || res.Code != 0 {
		t.Fatalf("echoed %q code %d", res.Stdout, res.Code)
	}
}

// tarOf builds an archive of regular files.
func tarOf(t testing.TB, files map[string]string) *bytes.Buffer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func newVolume(t *testing.T, run, phase string) string {
	t.Helper()
	v, err := eng.NewVolume(t.Context(), run, phase)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.RemoveVolume(context.Background(), v); err != nil {
			t.Error(err)
		}
	})
	return v
}

func TestReadOnlyArtifactVolume(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	vol := newVolume(t, run, "artifacts")
	man, err := eng.CopyIn(t.Context(), run, vol, tarOf(t, map[string]string{"solution.py": "print(1)\n"}), engine.CopyInOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Files) != 1 {
		t.Fatalf("manifest %+v", man)
	}
	for _, target := range []string{"/artifacts/new.txt", "/artifacts/solution.py"} {
		spec := probe(run, "write", target)
		spec.Mounts = []engine.Mount{{Volume: vol, Target: "/artifacts", ReadOnly: true}}
		res := mustRun(t, spec)
		if !strings.Contains(string(res.Stdout), "read-only file system") {
			t.Errorf("writing %s: %q", target, res.Stdout)
		}
	}
}

func TestWritableVolumeCollect(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	vol := newVolume(t, run, "work")
	if _, err := eng.CopyIn(t.Context(), run, vol, tarOf(t, map[string]string{"seed.txt": "seed\n"}), engine.CopyInOptions{Writable: true}); err != nil {
		t.Fatal(err)
	}
	spec := probe(run, "mkfiles", "/work/out")
	spec.Mounts = []engine.Mount{{Volume: vol, Target: "/work"}}
	spec.Collect = []string{"/work"}
	res := mustRun(t, spec)
	if res.Code != 0 {
		t.Fatalf("mkfiles: %s", res.Stderr)
	}
	got := map[string]bool{}
	for _, f := range res.Collected["/work"].Manifest.Files {
		got[f.Path] = true
	}
	for _, want := range []string{"work/seed.txt", "work/out/a.txt", "work/out/sub/b.txt"} {
		if !got[want] {
			t.Errorf("collected files %v lack %s", got, want)
		}
	}
}

func TestSpecialFilesRefusedOnCollect(t *testing.T) {
	t.Parallel()
	for kind, sentinel := range map[string]error{
		"symlink":  firewall.ErrSymlink,
		"hardlink": firewall.ErrHardlink,
		"fifo":     firewall.ErrFIFO,
	} {
		t.Run(kind, func(t *testing.T) {
			run := newRun(t)
			vol := newVolume(t, run, "out")
			spec := probe(run, "mkspecial", "/out", kind)
			spec.Mounts = []engine.Mount{{Volume: vol, Target: "/out"}}
			spec.Collect = []string{"/out"}
			_, err := eng.Run(t.Context(), spec)
			if !errors.Is(err, engine.ErrCollect) || !errors.Is(err, sentinel) {
				t.Fatalf("collect of a %s: %v", kind, err)
			}
			var rej *firewall.RejectError
			if !errors.As(err, &rej) || !strings.HasPrefix(rej.Entry, "out/") {
				t.Fatalf("error does not name the entry: %v", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

func TestCopyInRejectsHostileArchive(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	vol := newVolume(t, run, "artifacts")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "ok.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("x"))
	_ = tw.WriteHeader(&tar.Header{Name: "evil", Linkname: "/etc/shadow", Typeflag: tar.TypeSymlink})
	_ = tw.Close()
	if _, err := eng.CopyIn(t.Context(), run, vol, &buf, engine.CopyInOptions{}); !errors.Is(err, firewall.ErrSymlink) {
		t.Fatalf("CopyIn of a symlink: %v", err)
	}
	// All or nothing: the accepted first entry did not reach the volume.
	spec := probe(run, "write", "/v/ok.txt")
	spec.Mounts = []engine.Mount{{Volume: vol, Target: "/v"}}
	spec.Collect = []string{"/v"}
	res := mustRun(t, spec)
	if files := res.Collected["/v"].Manifest.Files; len(files) != 1 || files[0].Size != 1 || !strings.Contains(string(res.Stdout), "written") {
		t.Fatalf("volume after a rejected copy: %+v %q", files, res.Stdout)
	}
}

func TestCancellationLeavesNothing(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	const rounds = 40
	cancelled := 0
	for i := range rounds {
		delay := time.Duration(rng.IntN(1200)) * time.Millisecond
		ctx, cancel := context.WithTimeout(t.Context(), delay)
		err := func() error {
			vol, err := eng.NewVolume(ctx, run, "work")
			if err != nil {
				return err
			}
			defer eng.RemoveVolume(context.WithoutCancel(ctx), vol)
			if _, err := eng.CopyIn(ctx, run, vol, tarOf(t, map[string]string{"a": "b"}), engine.CopyInOptions{}); err != nil {
				return err
			}
			spec := probe(run, "sleep", "300ms")
			spec.Mounts = []engine.Mount{{Volume: vol, Target: "/work"}}
			spec.Collect = []string{"/work"}
			// Without an init image, the tree is a volume made for the
			// container: a cancellation while the container is created
			// must still remove it.
			spec.Trees = []engine.Tree{{Dir: "/tree", Archive: tarOf(t, map[string]string{"c": "d"}).Bytes()}}
			_, err = eng.Run(ctx, spec)
			return err
		}()
		cancel()
		if err != nil {
			// The firewall reports a deadline as its time budget running out.
			budget := errors.Is(err, firewall.ErrLimit) && ctx.Err() != nil
			if !budget && !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "context deadline exceeded") {
				t.Fatalf("round %d (cancel after %v): unexpected error %v", i, delay, err)
			}
			cancelled++
		}
		if cs, vs := leftovers(t, run); len(cs)+len(vs) > 0 {
			t.Fatalf("round %d (cancel after %v, err %v): left %v %v", i, delay, err, cs, vs)
		}
	}
	t.Logf("%d of %d rounds were cancelled part-way; none left anything", cancelled, rounds)
	if cancelled == 0 {
		t.Fatal("no round was cancelled: the test exercised nothing")
	}
}

// gcHelper runs in a child process: it starts a long container and waits
// to be killed, leaving the container and its volume behind.
func gcHelper() int {
	ctx := context.Background()
	d, err := engine.NewDocker(ctx, engine.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	run := os.Getenv("STRICTGRADE_GC_HELPER")
	if img := os.Getenv("STRICTGRADE_INIT_IMAGE"); img != "" {
		// A pool of started sandboxes too, which the kill abandons.
		pd, err := engine.NewDocker(ctx, engine.Config{Pool: 2})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		pd.UseInit(img)
		spec := engine.Spec{Run: run, Phase: "pooled", Image: os.Getenv("STRICTGRADE_PROBE_IMAGE"), Cmd: []string{"/bin/probe", "observe"},
			Trees: []engine.Tree{{Dir: "/t", Archive: tarOf(&testing.T{}, map[string]string{"a": "b"}).Bytes()}}}
		pd.Warm(ctx, spec, 2)
	}
	vol, err := d.NewVolume(ctx, run, "work")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, err = d.Run(ctx, engine.Spec{Run: run, Phase: "agent", Image: os.Getenv("STRICTGRADE_PROBE_IMAGE"),
		Cmd: []string{"/bin/probe", "sleep", "10m"}, Mounts: []engine.Mount{{Volume: vol, Target: "/work"}},
		Limits: engine.Limits{Wall: 10 * time.Minute}})
	fmt.Fprintln(os.Stderr, "helper run ended:", err)
	return 1
}

func TestGCReapsKilledProcessLeftovers(t *testing.T) {
	t.Parallel()
	run := fmt.Sprintf("gc%d", os.Getpid())
	initImage, err := images.Ensure(t.Context(), eng, images.Init(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STRICTGRADE_GC_HELPER="+run, "STRICTGRADE_PROBE_IMAGE="+probeImage, "STRICTGRADE_INIT_IMAGE="+initImage)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		cs, vs := leftovers(t, run)
		if len(cs) > 0 && len(vs) > 0 && running(t, run) && len(pooledOf(t, cmd.Process.Pid)) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("helper never started its container")
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = cmd.Process.Kill() // SIGKILL: no deferred cleanup runs
	_ = cmd.Wait()
	cs, vs := leftovers(t, run)
	if len(cs) == 0 || len(vs) == 0 {
		t.Fatalf("expected leftovers after kill -9, got %v %v", cs, vs)
	}
	// The helper's pid is free now: its objects are abandoned, and the
	// default mode reaps them.
	rep, err := eng.GC(t.Context(), engine.GCOptions{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Containers) == 0 || len(rep.Volumes) == 0 || rep.Kept != 0 {
		t.Fatalf("gc report %+v", rep)
	}
	assertNoLeftovers(t, run)
	// The helper's pool (its started sandboxes and its sginit volume)
	// carries a run label of its own and the same owner: gc reaps it.
	pooled := pooledOf(t, cmd.Process.Pid)
	if len(pooled) < 2 {
		t.Fatalf("the helper's pooled sandboxes: %v", pooled)
	}
	poolRun := pooled[0].Labels[engine.LabelRun]
	if _, err := eng.GC(t.Context(), engine.GCOptions{Run: poolRun}); err != nil {
		t.Fatal(err)
	}
	if left := pooledOf(t, cmd.Process.Pid); len(left) != 0 {
		t.Errorf("gc left %d pooled sandboxes of the killed helper", len(left))
	}
	assertNoLeftovers(t, poolRun)
}

// pooledOf lists the pooled sandboxes that process pid made.
func pooledOf(t *testing.T, pid int) []container.Summary {
	t.Helper()
	f := filters.NewArgs(filters.Arg("label", engine.LabelOwnerPID+"="+strconv.Itoa(pid)),
		filters.Arg("label", engine.LabelPhase+"=pooled"))
	cs, err := dockerClient(t).ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestGCSparesLiveOwners(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	// A volume and a created container of this live process, as a grade
	// running elsewhere would have.
	vol := newVolume(t, run, "work")
	spec := probe(run, "sleep", "1s")
	spec.Mounts = []engine.Mount{{Volume: vol, Target: "/work"}}
	p, err := eng.Prepare(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	list, err := dockerClient(t).ContainerList(t.Context(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", engine.LabelRun+"="+run))})
	if err != nil || len(list) != 1 {
		t.Fatalf("containers of the run: %v, %v", list, err)
	}
	if got := list[0].Labels[engine.LabelOwnerPID]; got != fmt.Sprint(os.Getpid()) {
		t.Fatalf("owner pid label %q, want this process", got)
	}

	rep, err := eng.GC(t.Context(), engine.GCOptions{Run: run})
	if err != nil || len(rep.Containers)+len(rep.Volumes) != 0 || rep.Kept != 2 {
		t.Fatalf("default gc of a live owner's objects: %+v, %v", rep, err)
	}
	rep, err = eng.GC(t.Context(), engine.GCOptions{Run: run, All: true, DryRun: true})
	if err != nil || len(rep.Containers) != 1 || len(rep.Volumes) != 1 {
		t.Fatalf("dry run with --all: %+v, %v", rep, err)
	}
	if cs, vs := leftovers(t, run); len(cs) != 1 || len(vs) != 1 {
		t.Fatalf("a dry run removed something: %v %v left", cs, vs)
	}
	rep, err = eng.GC(t.Context(), engine.GCOptions{Run: run, All: true})
	if err != nil || len(rep.Containers) != 1 || len(rep.Volumes) != 1 {
		t.Fatalf("gc --all: %+v, %v", rep, err)
	}
}

func running(t testing.TB, run string) bool {
	cli := dockerClient(t)
	f := filters.NewArgs(filters.Arg("label", engine.LabelRun+"="+run), filters.Arg("status", "running"))
	list, err := cli.ContainerList(context.Background(), container.ListOptions{Filters: f})
	return err == nil && len(list) > 0
}

func TestPythonImageImportsPytest(t *testing.T) {
	t.Parallel()
	id, err := images.Ensure(t.Context(), eng, images.Python{}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	run := newRun(t)
	res := mustRun(t, engine.Spec{Run: run, Phase: "test", Image: id,
		Cmd: []string{"python3", "-c", "import pytest, sys; print(pytest.__version__, sys.version_info[:2])"}})
	if res.Exit != engine.ExitExited || res.Code != 0 {
		t.Fatalf("python3 under the default profile: %s %d %s", res.Exit, res.Code, res.Stderr)
	}
	if res.ImageID != id {
		t.Fatalf("ran image %s, want %s", res.ImageID, id)
	}
	t.Logf("pytest %s", bytes.TrimSpace(res.Stdout))
}

func tail(b []byte) string {
	if len(b) > 200 {
		b = b[len(b)-200:]
	}
	return string(b)
}

// firewallPolicy is the default strict policy.
func firewallPolicy() firewall.Policy { return firewall.Policy{} }

// A removal that the daemon refuses until its cleanup context ends is not
// forgotten: the backend's Leftovers tries it again, and so does Close.
func TestRefusedRemovalIsTriedAgain(t *testing.T) {
	t.Parallel()
	d, err := engine.NewDocker(t.Context(), engine.Config{CleanupTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			d.FailRemovals(false)
			d.Close()
		}
	}()
	for _, via := range []string{"Leftovers", "Close"} {
		run := newRun(t)
		d.FailRemovals(true)
		if _, err := d.Run(t.Context(), probe(run, "sleep", "0s")); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); d.Unsettled() == 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the refused removal was never given up")
			}
		}
		if cs, _ := leftovers(t, run); len(cs) != 1 {
			t.Fatalf("the refused removal left %v, want the container", cs)
		}
		d.FailRemovals(false)
		switch via {
		case "Leftovers":
			left, err := d.Leftovers(t.Context(), run)
			if err != nil || len(left) != 0 {
				t.Fatalf("Leftovers after the daemon took removals again: %v %v", left, err)
			}
		case "Close":
			closed = true
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if cs, vs := leftovers(t, run); len(cs)+len(vs) > 0 {
			t.Fatalf("after %s: left %v %v", via, cs, vs)
		}
	}
}
