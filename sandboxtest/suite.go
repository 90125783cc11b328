package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/tarball"
	"github.com/strictgrade/strictgrade/sandbox"
)

// Target is a backend under test and what the suite runs on it.
type Target struct {
	Backend sandbox.Backend
	// Probe is an image that runs strictgrade's probe as
	// ["/bin/probe", MODE, ARG…] (see Probe for the modes).
	Probe string
	// Shell is an image with a POSIX shell and the commands Runtime
	// knows (sh -c, echo, cat, mkdir, rm, ln, sleep), and whatever the
	// backend's StreamOut and sessions need (python3, sleep and timeout
	// for Docker): the strictgrade runtime image.
	Shell string
	// Seccomp is the seccomp mode the probe must report from inside:
	// "2" (a filter) when empty. A user-space kernel such as gVisor
	// filters by construction and reports "0".
	Seccomp string
	// NoOOM says the backend cannot tell a memory kill from another
	// kill, and skips that case.
	NoOOM bool
	// Lacks names the cases the backend does not pass yet, each with the
	// reason, which the case is skipped with. A name that is no case of
	// the suite fails the run, so that the list cannot go stale.
	Lacks map[string]string
	// UserSpaceKernel says the sandbox runs on a kernel of its own in
	// user space (gVisor), which changes one observation and no
	// guarantee: a FIFO a workload makes in a volume stays inside that
	// kernel, so the host never sees one to refuse; the suite then
	// requires that nothing of its name is collected.
	UserSpaceKernel bool
	// PodNetwork says the sandbox is attached to a cluster network, as
	// every Kubernetes pod is (the container runtime refuses a pod
	// without an address): it has an interface besides loopback, and the
	// suite then requires only that nothing off the node answers.
	// Keeping pods of the cluster apart is a NetworkPolicy's work, which
	// needs a network plugin that enforces it.
	PodNetwork bool
}

// Run is the conformance suite every sandbox.Backend must pass: the
// guarantees of package sandbox, as observed through its interfaces and
// from inside the sandbox. newTarget is called once per case; a case
// closes the backend it was given and requires that the run it made left
// nothing behind.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	cases := []struct {
		name string
		run  func(s *suite, t *testing.T)
	}{
		{"profile observed from inside", (*suite).profile},
		{"profile observed from inside, with trees", (*suite).profileWithTrees},
		{"trees are laid out read-only", (*suite).trees},
		{"trees refuse hostile archives", (*suite).treesRefuse},
		{"exit status", (*suite).exitStatus},
		{"stdin is streamed", (*suite).stdin},
		{"wall clock kills", (*suite).wallClock},
		{"cpu budget kills", (*suite).cpuBudget},
		{"stdout cap", (*suite).stdoutCap},
		{"stdout cap kills", (*suite).stdoutCapKills},
		{"stderr cap", (*suite).stderrCap},
		{"memory limit kills", (*suite).memory},
		{"pids limit", (*suite).pids},
		{"read-only places", (*suite).readOnly},
		{"copy in and collect through the firewall", (*suite).copyInCollect},
		{"a writable volume keeps what the workload left", (*suite).writableKeeps},
		{"collect refuses special files", (*suite).collectRefuses},
		{"copy in refuses hostile archives", (*suite).copyInRefuses},
		{"stream out", (*suite).streamOut},
		{"stream out refuses special files", (*suite).streamOutRefuses},
		{"stream out after the command left a process", (*suite).streamOutOrphan},
		{"stream out quota", (*suite).streamOutQuota},
		{"stream out after a kill", (*suite).streamOutKilled},
		{"prepared sandbox runs once", (*suite).prepared},
		{"prepared sandbox sees a volume's later content", (*suite).preparedLateVolume},
		{"session", (*suite).session},
		{"session files cross the firewall", (*suite).sessionFiles},
		{"session trees", (*suite).sessionTrees},
		{"labels and gc", (*suite).labelsGC},
		{"invalid specs", (*suite).invalidSpecs},
		{"cancellation leaves nothing", (*suite).cancellation},
	}
	var lacks map[string]string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := newTarget(t)
			if lacks == nil {
				lacks = tg.Lacks
			}
			if why, ok := tg.Lacks[c.name]; ok {
				if err := tg.Backend.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				t.Skipf("the backend lacks this: %s", why)
			}
			s := &suite{Target: tg, run: newRun()}
			if s.Seccomp == "" {
				s.Seccomp = "2"
			}
			t.Cleanup(func() {
				s.assertClean(t)
				if err := tg.Backend.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			c.run(s, t)
		})
	}
	for name := range lacks {
		if !slices.ContainsFunc(cases, func(c struct {
			name string
			run  func(s *suite, t *testing.T)
		}) bool {
			return c.name == name
		}) {
			t.Errorf("Target.Lacks names %q, which is no case of the suite", name)
		}
	}
}

type suite struct {
	Target
	run string
}

func newRun() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "ct" + hex.EncodeToString(b[:])
}

// assertClean fails when the case's run left anything, and reaps it.
func (s *suite) assertClean(t *testing.T) {
	t.Helper()
	left, err := s.Backend.Leftovers(context.Background(), s.run)
	if err != nil {
		t.Errorf("Leftovers: %v", err)
		return
	}
	if len(left) > 0 {
		t.Errorf("run %s left %v", s.run, left)
		_, _ = s.Backend.GC(context.Background(), sandbox.GCOptions{Run: s.run, All: true})
	}
}

func (s *suite) probe(args ...string) sandbox.Spec {
	return sandbox.Spec{Run: s.run, Phase: "test", Image: s.Probe, Cmd: append([]string{"/bin/probe"}, args...)}
}

func (s *suite) shell(script string) sandbox.Spec {
	return sandbox.Spec{Run: s.run, Phase: "test", Image: s.Shell, Cmd: []string{"sh", "-c", script},
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}
}

func (s *suite) mustRun(t *testing.T, spec sandbox.Spec) *sandbox.Result {
	t.Helper()
	res, err := s.Backend.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run %v: %v", spec.Cmd, err)
	}
	return res
}

// volume makes an empty volume, removed when the case ends.
func (s *suite) volume(t *testing.T) string {
	t.Helper()
	name, err := s.Backend.NewVolume(t.Context(), s.run, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.removeVolume(t, name) })
	return name
}

func (s *suite) removeVolume(t *testing.T, name string) {
	if err := s.Backend.RemoveVolume(context.Background(), name); err != nil {
		t.Errorf("RemoveVolume: %v", err)
	}
}

// files is a small archive of regular files, in order.
func files(kv ...string) []byte { return tarball.Files(kv...) }

// contents reads the regular files of a canonical archive by name.
func contents(t *testing.T, archive []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("collected archive: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			out[h.Name] = string(b)
		}
	}
}

func (s *suite) profile(t *testing.T) { s.observe(t, nil) }

// profileWithTrees observes the profile of a sandbox that was handed
// trees: however a backend lays them out (the Docker backend starts such a
// sandbox as root with three capabilities, which its init drops before the
// workload exists), the workload must see what any other sees.
func (s *suite) profileWithTrees(t *testing.T) {
	s.observe(t, []sandbox.Tree{
		{Dir: "/artifacts", Archive: files("solution.py", "print(1)\n")},
		{Dir: "/inputs", Archive: files("cases.json", "[]")},
	})
}

func (s *suite) observe(t *testing.T, trees []sandbox.Tree) {
	spec := s.probe("observe")
	spec.Limits.TmpfsBytes = 8 << 20
	spec.Trees = trees
	res := s.mustRun(t, spec)
	if res.Exit != sandbox.ExitExited || res.Code != 0 {
		t.Fatalf("observe ended %s (%d): %s", res.Exit, res.Code, res.Stderr)
	}
	var o Observation
	if err := json.Unmarshal(res.Stdout, &o); err != nil {
		t.Fatalf("observation %q: %v", res.Stdout, err)
	}
	noCaps := "0000000000000000"
	checks := []struct {
		what string
		ok   bool
	}{
		{"runs as " + sandbox.User, o.UID == sandbox.UID && o.GID == sandbox.UID},
		{"no effective capabilities", o.CapEff == noCaps},
		{"no bounding capabilities", o.CapBnd == noCaps},
		{"no_new_privs set", o.NoNewPrivs == "1"},
		{"seccomp mode " + s.Seccomp, o.Seccomp == s.Seccomp},
		{"loopback only", s.PodNetwork || slices.Equal(o.Interfaces, []string{"lo"}) || len(o.Interfaces) == 0},
		{"no routes", s.PodNetwork || o.Routes == 0},
		{"no network", o.DialError != ""},
		{"read-only root", o.RootWriteError != ""},
		{"/tmp capped", o.TmpfsError != "" && o.TmpfsWritten <= spec.Limits.TmpfsBytes},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: observed %+v", c.what, o)
		}
	}
}

func (s *suite) exitStatus(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"sleep", "0s"}, 0, ""},
		{[]string{"no-such-mode"}, 1, "unknown mode"},
	}
	for _, tc := range tests {
		res := s.mustRun(t, s.probe(tc.args...))
		if res.Exit != sandbox.ExitExited || res.Code != tc.code || !strings.Contains(string(res.Stderr), tc.stderr) {
			t.Errorf("%v: %s code %d stderr %q, want exited code %d", tc.args, res.Exit, res.Code, res.Stderr, tc.code)
		}
	}
}

func (s *suite) stdin(t *testing.T) {
	spec := s.probe("cat")
	spec.Stdin = strings.NewReader("hello\nworld\n")
	res := s.mustRun(t, spec)
	if res.Exit != sandbox.ExitExited || string(res.Stdout) != "hello\nworld\n" {
		t.Errorf("cat: %s %q", res.Exit, res.Stdout)
	}
}

func (s *suite) wallClock(t *testing.T) {
	for _, mode := range []string{"sleep", "spin"} {
		spec := s.probe(mode, "1h")
		spec.Limits.Wall = time.Second
		if res := s.mustRun(t, spec); res.Exit != sandbox.ExitTimeout {
			t.Errorf("%s past the wall clock: %s (%d)", mode, res.Exit, res.Code)
		}
	}
}

// cpuBudget: a spec with a CPU-time budget ends a workload that loops and
// one that sleeps as timeouts, each naming the limit it met. A backend that
// measures CPU time stops the loop at its budget (LimitCPU, having used
// about that much) and the sleeper at the backstop (LimitWall, having used
// next to none); one that does not stops both at a wall clock of the
// budget (sandbox.Unmetered, LimitWall).
func (s *suite) cpuBudget(t *testing.T) {
	for _, mode := range []string{"spin", "sleep"} {
		spec := s.probe(mode, "1h")
		spec.Limits.CPU = time.Second
		res := s.mustRun(t, spec)
		if res.Exit != sandbox.ExitTimeout {
			t.Errorf("%s past its CPU budget: %s (%d)", mode, res.Exit, res.Code)
			continue
		}
		want := sandbox.LimitWall
		if res.CPUMeasured && mode == "spin" {
			want = sandbox.LimitCPU
		}
		if res.Limit != want {
			t.Errorf("%s: limit %q, want %q (CPU %v measured %v, waited %v, after %v)", mode, res.Limit, want, res.CPU, res.CPUMeasured, res.Waited, res.Duration)
		}
		switch {
		case !res.CPUMeasured && res.CPU != 0:
			t.Errorf("%s: CPU %v reported but not measured", mode, res.CPU)
		case res.CPUMeasured && mode == "spin" && res.CPU < time.Second/2:
			t.Errorf("spin stopped at its budget after %v of CPU", res.CPU)
		case res.CPUMeasured && mode == "sleep" && res.CPU > time.Second/2:
			t.Errorf("sleep used %v of CPU", res.CPU)
		}
	}
}

func (s *suite) stdoutCap(t *testing.T) {
	spec := s.probe("spew", "100000")
	spec.Limits.StdoutBytes = 1000
	res := s.mustRun(t, spec)
	if res.Exit != sandbox.ExitExited || len(res.Stdout) != 1000 || !res.StdoutTruncated {
		t.Errorf("spew past the cap: %s, %d bytes, truncated %v", res.Exit, len(res.Stdout), res.StdoutTruncated)
	}
}

func (s *suite) stdoutCapKills(t *testing.T) {
	spec := s.probe("spew", strconv.Itoa(1<<30))
	spec.Limits.StdoutBytes = 1000
	spec.Limits.KillOnOutputLimit = true
	res := s.mustRun(t, spec)
	if res.Exit != sandbox.ExitOutputLimit || len(res.Stdout) != 1000 || !res.StdoutTruncated {
		t.Errorf("a flood past a killing cap: %s, %d bytes, truncated %v", res.Exit, len(res.Stdout), res.StdoutTruncated)
	}
}

func (s *suite) stderrCap(t *testing.T) {
	spec := s.probe("spewerr", "100000")
	spec.Limits.StderrBytes = 1000
	spec.Limits.KillOnOutputLimit = true // never for standard error
	res := s.mustRun(t, spec)
	if res.Exit != sandbox.ExitExited || len(res.Stderr) != 1000 || !res.StderrTruncated {
		t.Errorf("stderr past the cap: %s, %d bytes, truncated %v", res.Exit, len(res.Stderr), res.StderrTruncated)
	}
}

func (s *suite) memory(t *testing.T) {
	if s.NoOOM {
		t.Skip("the backend cannot tell a memory kill apart")
	}
	spec := s.probe("memhog")
	spec.Limits.MemoryBytes = 64 << 20
	if res := s.mustRun(t, spec); res.Exit != sandbox.ExitOOM {
		t.Errorf("memory hog: %s (%d)", res.Exit, res.Code)
	}
}

func (s *suite) pids(t *testing.T) {
	spec := s.probe("forkbomb")
	spec.Limits.PIDs = 16
	res := s.mustRun(t, spec)
	var n int
	if _, err := fmt.Sscanf(string(res.Stdout), "spawned=%d", &n); err != nil || n >= 16 {
		t.Errorf("fork bomb under 16 pids: %s %q", res.Exit, res.Stdout)
	}
}

// trees checks that a tree is there before the workload starts, with its
// content, owned by someone else and writable by nobody the workload is or
// can become, that standard input still reaches the workload after the
// trees, and that the next sandbox of the same spec starts afresh.
func (s *suite) trees(t *testing.T) {
	want := "read a.txt: \"alpha\" false\nread sub/b.txt: \"beta\" false\n" +
		"write a.txt: refused=true\nwrite new.txt: refused=true\nwrite sub/new.txt: refused=true\nfrom stdin\n"
	archive := files("a.txt", "alpha", "sub/b.txt", "beta")
	for i := range 3 {
		spec := s.probe("tree", "/t")
		spec.Trees = []sandbox.Tree{{Dir: "/t", Archive: archive}}
		spec.Stdin = strings.NewReader("from stdin\n")
		res := s.mustRun(t, spec)
		if res.Exit != sandbox.ExitExited || res.Code != 0 || string(res.Stdout) != want {
			t.Errorf("run %d: %s (%d)\nstdout %q\nwant   %q\nstderr %q", i, res.Exit, res.Code, res.Stdout, want, res.Stderr)
		}
		if len(res.Stderr) != 0 {
			t.Errorf("run %d: stderr %q, want nothing (the init's words are not the workload's)", i, res.Stderr)
		}
	}
}

// treesRefuse checks that a tree whose archive the firewall refuses is a
// spec error before anything runs, and leaves nothing.
func (s *suite) treesRefuse(t *testing.T) {
	var tw bytes.Buffer
	w := tar.NewWriter(&tw)
	_ = w.WriteHeader(&tar.Header{Name: "../escape", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	_, _ = w.Write([]byte("x"))
	_ = w.Close()
	spec := s.probe("observe")
	spec.Trees = []sandbox.Tree{{Dir: "/t", Archive: tw.Bytes()}}
	if res, err := s.Backend.Run(t.Context(), spec); err == nil {
		t.Fatalf("a tree with ../escape ran: %+v", res)
	}
	bad := s.probe("observe")
	bad.Trees = []sandbox.Tree{{Dir: "/tmp/t", Archive: files("a", "b")}}
	if _, err := s.Backend.Run(t.Context(), bad); !errors.Is(err, sandbox.ErrSpec) {
		t.Errorf("a tree inside /tmp: %v, want ErrSpec", err)
	}
}

func (s *suite) readOnly(t *testing.T) {
	in, _, err := s.Backend.NewVolumeWith(t.Context(), s.run, "test", bytes.NewReader(files("a.txt", "alpha")), sandbox.CopyInOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.removeVolume(t, in) })
	out := s.volume(t)
	tests := []struct {
		path    string
		written bool
	}{
		{"/probe-root-write", false},
		{"/in/new.txt", false}, // a read-only mount
		{"/in/a.txt", false},
		{"/out/new.txt", true}, // a writable volume's root belongs to the sandbox user
		{"/tmp/new.txt", true},
	}
	for _, tc := range tests {
		spec := s.probe("write", tc.path)
		spec.Mounts = []sandbox.Mount{{Volume: in, Target: "/in", ReadOnly: true}, {Volume: out, Target: "/out"}}
		res := s.mustRun(t, spec)
		if got := strings.HasPrefix(string(res.Stdout), "written"); got != tc.written {
			t.Errorf("write %s: %q, want written=%v", tc.path, res.Stdout, tc.written)
		}
	}
}

func (s *suite) copyInCollect(t *testing.T) {
	vol, man, err := s.Backend.NewVolumeWith(t.Context(), s.run, "test", bytes.NewReader(files("a.txt", "alpha", "sub/b.txt", "beta")), sandbox.CopyInOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.removeVolume(t, vol) })
	if len(man.Files) != 2 {
		t.Errorf("manifest of what went in: %+v", man.Files)
	}
	extra := files("c.txt", "gamma")
	if _, err := s.Backend.CopyIn(t.Context(), s.run, vol, bytes.NewReader(extra), sandbox.CopyInOptions{}); err != nil {
		t.Fatal(err)
	}
	out := s.volume(t)
	spec := s.probe("mkfiles", "/out")
	spec.Mounts = []sandbox.Mount{{Volume: vol, Target: "/in", ReadOnly: true}, {Volume: out, Target: "/out"}}
	spec.Collect = []string{"/in", "/out"}
	res := s.mustRun(t, spec)
	want := map[string]map[string]string{
		"/in":  {"in/a.txt": "alpha", "in/sub/b.txt": "beta", "in/c.txt": "gamma"},
		"/out": {"out/a.txt": "alpha\n", "out/sub/b.txt": "beta\n"},
	}
	for dir, w := range want {
		c, ok := res.Collected[dir]
		if !ok || c.Manifest == nil {
			t.Errorf("%s not collected", dir)
			continue
		}
		if got := contents(t, c.Archive); !mapsEqual(got, w) {
			t.Errorf("%s collected %v, want %v", dir, got, w)
		}
	}
}

// writableKeeps checks what the compat tier builds on: a volume mounted
// writable holds, for the next sandbox, exactly what the workload left in
// it: files added, changed and removed.
func (s *suite) writableKeeps(t *testing.T) {
	vol, _, err := s.Backend.NewVolumeWith(t.Context(), s.run, "test",
		bytes.NewReader(files("a.txt", "alpha", "gone.txt", "bye")), sandbox.CopyInOptions{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.removeVolume(t, vol) })
	spec := s.shell("echo changed > /w/a.txt && rm /w/gone.txt && mkdir /w/sub && echo gamma > /w/sub/c.txt")
	spec.Mounts = []sandbox.Mount{{Volume: vol, Target: "/w"}}
	if res := s.mustRun(t, spec); res.Exit != sandbox.ExitExited || res.Code != 0 {
		t.Fatalf("writing the volume: %s %d: %s", res.Exit, res.Code, res.Stderr)
	}
	read := s.probe("observe")
	read.Mounts = []sandbox.Mount{{Volume: vol, Target: "/r", ReadOnly: true}}
	read.Collect = []string{"/r"}
	res := s.mustRun(t, read)
	want := map[string]string{"r/a.txt": "changed\n", "r/sub/c.txt": "gamma\n"}
	if got := contents(t, res.Collected["/r"].Archive); !mapsEqual(got, want) {
		t.Errorf("the next sandbox sees %v, want %v", got, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (s *suite) collectRefuses(t *testing.T) {
	for _, kind := range []string{"symlink", "hardlink", "fifo"} {
		out := s.volume(t)
		spec := s.probe("mkspecial", "/out", kind)
		spec.Mounts = []sandbox.Mount{{Volume: out, Target: "/out"}}
		spec.Collect = []string{"/out"}
		res, err := s.Backend.Run(t.Context(), spec)
		if kind == "fifo" && s.UserSpaceKernel && err == nil {
			if c, ok := res.Collected["/out"]; !ok || slices.ContainsFunc(c.Manifest.Files, func(f firewall.File) bool { return path.Base(f.Path) != "target.txt" }) {
				t.Errorf("a fifo inside a user-space kernel: collected %+v, want only target.txt", c.Manifest)
			}
			continue
		}
		var rej *firewall.RejectError
		if !errors.Is(err, sandbox.ErrCollect) || !errors.As(err, &rej) {
			t.Errorf("a %s in a collected directory: %v, want ErrCollect from the firewall", kind, err)
		}
	}
}

// hostile archives, each refused by the firewall on the way in.
func hostile() map[string][]byte {
	link := func(name string, typ byte, target string) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Linkname: target, Mode: 0o777, Format: tar.FormatPAX})
		_ = tw.Close()
		return buf.Bytes()
	}
	return map[string][]byte{
		"symlink":   link("evil", tar.TypeSymlink, "/etc/passwd"),
		"hardlink":  link("evil", tar.TypeLink, "a.txt"),
		"traversal": files("../evil", "x"),
		"absolute":  files("/evil", "x"),
		"garbage":   []byte("this is not a tar archive"),
	}
}

func (s *suite) copyInRefuses(t *testing.T) {
	vol := s.volume(t)
	for name, archive := range hostile() {
		if _, _, err := s.Backend.NewVolumeWith(t.Context(), s.run, "test", bytes.NewReader(archive), sandbox.CopyInOptions{}); !isReject(err) {
			t.Errorf("NewVolumeWith %s: %v, want a firewall rejection", name, err)
		}
		if _, err := s.Backend.CopyIn(t.Context(), s.run, vol, bytes.NewReader(archive), sandbox.CopyInOptions{}); !isReject(err) {
			t.Errorf("CopyIn %s: %v, want a firewall rejection", name, err)
		}
	}
	// A refused archive made no volume: only vol is left.
	left, err := s.Backend.Leftovers(t.Context(), s.run)
	if err != nil || len(left) != 1 || !strings.HasSuffix(left[0], vol) {
		t.Errorf("after refused copies: %v %v, want only %s", left, err, vol)
	}
}

func isReject(err error) bool {
	var rej *firewall.RejectError
	return errors.As(err, &rej)
}

func (s *suite) streamSpec(script string) sandbox.Spec {
	spec := s.shell(script)
	spec.StreamOut = &sandbox.StreamOut{Dir: "/output", Bytes: 1 << 20, Inodes: 64}
	spec.CollectPolicy = firewall.Policy{MaxEntries: 64, MaxTotalBytes: 1 << 20, MaxFileBytes: 1 << 20}
	return spec
}

func (s *suite) streamOut(t *testing.T) {
	res := s.mustRun(t, s.streamSpec("mkdir /output/sub && echo alpha > /output/a.txt && echo beta > /output/sub/b.txt && echo printed"))
	if res.Exit != sandbox.ExitExited || res.Code != 0 {
		t.Fatalf("stream-out command: %s (%d): %s", res.Exit, res.Code, res.Stderr)
	}
	if len(res.Stdout) != 0 || !strings.Contains(string(res.Stderr), "printed") {
		t.Errorf("what the command prints goes to stderr: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	c, ok := res.Collected["/output"]
	if !ok {
		t.Fatal("no stream-out archive")
	}
	want := map[string]string{"output/a.txt": "alpha\n", "output/sub/b.txt": "beta\n"}
	if got := contents(t, c.Archive); !mapsEqual(got, want) {
		t.Errorf("streamed %v, want %v", got, want)
	}
}

// streamOutOrphan checks that a command which leaves a process running
// ends when it ends: the process is killed before the archive is written,
// on a backend whose wrapper is the container's init (a pod's) as on one
// with an init of its own.
func (s *suite) streamOutOrphan(t *testing.T) {
	spec := s.streamSpec("sleep 600 & echo alpha > /output/a.txt")
	spec.Limits.Wall = 30 * time.Second
	res := s.mustRun(t, spec)
	if res.Exit != sandbox.ExitExited || res.Code != 0 {
		t.Fatalf("a command that left a process: %s (%d) after %v: %s", res.Exit, res.Code, res.Duration, res.Stderr)
	}
	if got := contents(t, res.Collected["/output"].Archive); got["output/a.txt"] != "alpha\n" {
		t.Errorf("streamed %v", got)
	}
}

func (s *suite) streamOutRefuses(t *testing.T) {
	_, err := s.Backend.Run(t.Context(), s.streamSpec("echo x > /output/a.txt && ln -s /etc/passwd /output/link"))
	if !errors.Is(err, sandbox.ErrCollect) || !isReject(err) {
		t.Errorf("a link in the stream-out directory: %v, want ErrCollect from the firewall", err)
	}
}

func (s *suite) streamOutQuota(t *testing.T) {
	spec := s.streamSpec("mkdir /output/a && mkdir /output/b && mkdir /output/c && mkdir /output/d")
	spec.StreamOut.Inodes = 2
	res := s.mustRun(t, spec)
	if res.Exit != sandbox.ExitExited || res.Code == 0 {
		t.Errorf("four directories in two inodes: %s (%d)", res.Exit, res.Code)
	}
	if c, ok := res.Collected["/output"]; !ok || len(c.Manifest.Dirs) >= 4 {
		t.Errorf("stream-out quota not enforced: %+v", c.Manifest)
	}
}

func (s *suite) streamOutKilled(t *testing.T) {
	spec := s.streamSpec("echo x > /output/a.txt && sleep 3600")
	spec.Limits.Wall = time.Second
	res := s.mustRun(t, spec)
	if _, ok := res.Collected["/output"]; res.Exit != sandbox.ExitTimeout || ok {
		t.Errorf("killed stream-out run: %s, collected %v", res.Exit, ok)
	}
}

func (s *suite) prepared(t *testing.T) {
	pr, pw := io.Pipe()
	spec := s.probe("cat")
	spec.Stdin = pr
	p, err := s.Backend.Prepare(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	// The input arrives after the sandbox was made ready.
	go func() {
		_, _ = io.WriteString(pw, "late input")
		pw.Close()
	}()
	res, err := p.Run(t.Context())
	if err != nil || string(res.Stdout) != "late input" {
		t.Fatalf("prepared run: %v %+v", err, res)
	}
	if _, err := p.Run(t.Context()); !errors.Is(err, sandbox.ErrSpec) {
		t.Errorf("second run: %v, want ErrSpec", err)
	}
	unused, err := s.Backend.Prepare(t.Context(), s.probe("sleep", "0s"))
	if err != nil {
		t.Fatal(err)
	}
	unused.Close(t.Context())
	unused.Close(t.Context())
}

// preparedLateVolume checks that what is copied into a volume between
// Prepare and Run is what the workload finds: the strict tier prepares its
// judge before the candidate's outputs exist (ADR 0010).
func (s *suite) preparedLateVolume(t *testing.T) {
	vol := s.volume(t)
	spec := s.probe("tree", "/v")
	spec.Mounts = []sandbox.Mount{{Volume: vol, Target: "/v", ReadOnly: true}}
	spec.Stdin = strings.NewReader("from stdin\n")
	p, err := s.Backend.Prepare(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if _, err := s.Backend.CopyIn(t.Context(), s.run, vol, bytes.NewReader(files("a.txt", "alpha", "sub/b.txt", "beta")), sandbox.CopyInOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := "read a.txt: \"alpha\" false\nread sub/b.txt: \"beta\" false\n" +
		"write a.txt: refused=true\nwrite new.txt: refused=true\nwrite sub/new.txt: refused=true\nfrom stdin\n"
	if res.Exit != sandbox.ExitExited || res.Code != 0 || string(res.Stdout) != want {
		t.Errorf("%s (%d)\nstdout %q\nwant   %q\nstderr %q", res.Exit, res.Code, res.Stdout, want, res.Stderr)
	}
}

func (s *suite) startSession(t *testing.T) (sandbox.Session, string) {
	t.Helper()
	vol := s.volume(t)
	sess, err := s.Backend.Start(t.Context(), sandbox.Spec{
		Run: s.run, Phase: "test", Image: s.Shell, WorkDir: "/work",
		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Mounts: []sandbox.Mount{{Volume: vol, Target: "/work"}},
		Limits: sandbox.Limits{Wall: 5 * time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Registered after the volume's removal, so it runs before it.
	t.Cleanup(func() { sess.Close(context.Background()) })
	return sess, vol
}

func (s *suite) session(t *testing.T) {
	sess, _ := s.startSession(t)
	if sess.ID() == "" || sess.ImageID() == "" {
		t.Errorf("session ID %q, image %q", sess.ID(), sess.ImageID())
	}
	tests := []struct {
		cmd    []string
		stdin  string
		wall   time.Duration
		exit   sandbox.ExitKind
		code   int
		stdout string
	}{
		{cmd: []string{"echo", "hi"}, exit: sandbox.ExitExited, stdout: "hi\n"},
		{cmd: []string{"sh", "-c", "exit 3"}, exit: sandbox.ExitExited, code: 3},
		{cmd: []string{"cat"}, stdin: "piped", exit: sandbox.ExitExited, stdout: "piped"},
		{cmd: []string{"sleep", "3600"}, wall: time.Second, exit: sandbox.ExitTimeout, code: 137},
		// The session outlives one command's timeout.
		{cmd: []string{"sh", "-c", "echo alive > /work/alive.txt && cat /work/alive.txt"}, exit: sandbox.ExitExited, stdout: "alive\n"},
	}
	for _, tc := range tests {
		e := sandbox.ExecSpec{Cmd: tc.cmd, Wall: tc.wall}
		if tc.stdin != "" {
			e.Stdin = strings.NewReader(tc.stdin)
		}
		res, err := sess.Exec(t.Context(), e)
		if err != nil {
			t.Fatalf("%v: %v", tc.cmd, err)
		}
		if res.Exit != tc.exit || res.Code != tc.code || string(res.Stdout) != tc.stdout {
			t.Errorf("%v: %s (%d) %q %q, want %s (%d) %q", tc.cmd, res.Exit, res.Code, res.Stdout, res.Stderr, tc.exit, tc.code, tc.stdout)
		}
	}
	if err := sess.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Exec(t.Context(), sandbox.ExecSpec{Cmd: []string{"true"}}); err == nil {
		t.Error("a stopped session ran a command")
	}
	// A stopped session keeps its files.
	c, err := sess.CopyOut(t.Context(), "/work/alive.txt", firewall.Policy{})
	if err != nil || contents(t, c.Archive)["alive.txt"] != "alive\n" {
		t.Errorf("copy out of a stopped session: %v", err)
	}
	sess.Close(t.Context())
	if _, err := sess.Exec(t.Context(), sandbox.ExecSpec{Cmd: []string{"true"}}); !errors.Is(err, sandbox.ErrSessionClosed) {
		t.Errorf("exec after Close: %v, want ErrSessionClosed", err)
	}
}

// sessionTrees checks that a session's trees are in place when it starts,
// read-only to its user; the case's clean-up check sees them go with it.
func (s *suite) sessionTrees(t *testing.T) {
	sess, err := s.Backend.Start(t.Context(), sandbox.Spec{
		Run: s.run, Phase: "test", Image: s.Shell,
		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Trees:  []sandbox.Tree{{Dir: "/task", Archive: files("README", "the task")}},
		Limits: sandbox.Limits{Wall: 5 * time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	res, err := sess.Exec(t.Context(), sandbox.ExecSpec{Cmd: []string{"sh", "-c", "cat /task/README"}})
	if err != nil || res.Code != 0 || string(res.Stdout) != "the task" {
		t.Fatalf("the tree in the session: %v %+v", err, res)
	}
	res, err = sess.Exec(t.Context(), sandbox.ExecSpec{Cmd: []string{"sh", "-c", "echo more > /task/README"}})
	if err != nil || res.Code == 0 {
		t.Errorf("the session wrote into its tree: %v %+v", err, res)
	}
}

func (s *suite) sessionFiles(t *testing.T) {
	sess, _ := s.startSession(t)
	man, err := sess.CopyIn(t.Context(), "/work", bytes.NewReader(files("a.txt", "alpha")), sandbox.CopyInOptions{Writable: true})
	if err != nil || len(man.Files) != 1 {
		t.Fatalf("CopyIn: %v", err)
	}
	res, err := sess.Exec(t.Context(), sandbox.ExecSpec{Cmd: []string{"sh", "-c", "cat /work/a.txt && echo more > /work/a.txt && mkdir /work/d && ln -s /etc /work/d/l"}})
	if err != nil || res.Code != 0 || string(res.Stdout) != "alpha" {
		t.Fatalf("exec: %v %+v", err, res)
	}
	for name, archive := range hostile() {
		if _, err := sess.CopyIn(t.Context(), "/work", bytes.NewReader(archive), sandbox.CopyInOptions{}); !isReject(err) {
			t.Errorf("CopyIn %s: %v, want a firewall rejection", name, err)
		}
	}
	if _, err := sess.CopyIn(t.Context(), "/etc", bytes.NewReader(files("x", "y")), sandbox.CopyInOptions{}); !errors.Is(err, sandbox.ErrSpec) {
		t.Errorf("CopyIn outside a writable mount: %v, want ErrSpec", err)
	}
	c, err := sess.CopyOut(t.Context(), "/work/a.txt", firewall.Policy{})
	if err != nil || contents(t, c.Archive)["a.txt"] != "more\n" {
		t.Errorf("CopyOut of a file the agent changed: %v", err)
	}
	for _, p := range []string{"/work/d/l", "/work/d/l/passwd"} {
		if _, err := sess.CopyOut(t.Context(), p, firewall.Policy{}); !errors.Is(err, sandbox.ErrCollect) {
			t.Errorf("CopyOut %s (through a planted link): %v, want ErrCollect", p, err)
		}
	}
}

func (s *suite) labelsGC(t *testing.T) {
	vol, err := s.Backend.NewVolume(t.Context(), s.run, "test")
	if err != nil {
		t.Fatal(err)
	}
	left, err := s.Backend.Leftovers(t.Context(), s.run)
	if err != nil || !slices.Equal(left, []string{"volume/" + vol}) {
		t.Fatalf("Leftovers: %v %v, want the volume", left, err)
	}
	// This process is alive: by default GC keeps its objects.
	rep, err := s.Backend.GC(t.Context(), sandbox.GCOptions{Run: s.run})
	if err != nil || len(rep.Volumes) != 0 || rep.Kept != 1 {
		t.Errorf("default GC of a live owner's volume: %+v %v", rep, err)
	}
	rep, err = s.Backend.GC(t.Context(), sandbox.GCOptions{Run: s.run, All: true, DryRun: true})
	if err != nil || !slices.Equal(rep.Volumes, []string{vol}) {
		t.Errorf("dry run: %+v %v", rep, err)
	}
	rep, err = s.Backend.GC(t.Context(), sandbox.GCOptions{Run: s.run, All: true})
	if err != nil || !slices.Equal(rep.Volumes, []string{vol}) {
		t.Errorf("GC --all: %+v %v", rep, err)
	}
	if left, _ := s.Backend.Leftovers(t.Context(), s.run); len(left) != 0 {
		t.Errorf("after GC: %v", left)
	}
}

func (s *suite) invalidSpecs(t *testing.T) {
	bad := map[string]sandbox.Spec{
		"no run":        {Phase: "test", Image: s.Probe, Cmd: []string{"/bin/probe"}},
		"unsafe run":    {Run: "A/B", Phase: "test", Image: s.Probe, Cmd: []string{"/bin/probe"}},
		"memory above":  {Run: s.run, Phase: "test", Image: s.Probe, Limits: sandbox.Limits{MemoryBytes: sandbox.MaxLimits.MemoryBytes + 1}},
		"relative path": {Run: s.run, Phase: "test", Image: s.Probe, Collect: []string{"out"}},
	}
	for name, spec := range bad {
		if _, err := s.Backend.Run(t.Context(), spec); !errors.Is(err, sandbox.ErrSpec) {
			t.Errorf("Run %s: %v, want ErrSpec", name, err)
		}
		if _, err := s.Backend.Prepare(t.Context(), spec); !errors.Is(err, sandbox.ErrSpec) {
			t.Errorf("Prepare %s: %v, want ErrSpec", name, err)
		}
	}
	if _, err := s.Backend.NewVolume(t.Context(), "Not Safe", "test"); !errors.Is(err, sandbox.ErrSpec) {
		t.Errorf("NewVolume with an unsafe run: %v, want ErrSpec", err)
	}
}

func (s *suite) cancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	defer pw.Close()
	spec := s.probe("cat")
	spec.Stdin = pr
	go func() {
		// Cancel once the workload has read its first byte: it is running.
		_, _ = pw.Write([]byte("x"))
		cancel()
	}()
	if _, err := s.Backend.Run(ctx, spec); err == nil {
		t.Error("a cancelled run returned no error")
	}
}
