package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/strslice"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/capbuf"
	"github.com/strictgrade/strictgrade/internal/streamout"
)

func frame(stream byte, payload string) []byte {
	h := make([]byte, 8)
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestDemux(t *testing.T) {
	tests := []struct {
		name     string
		in       []byte
		out, err string
		wantErr  error
	}{
		{name: "interleaved", in: bytes.Join([][]byte{frame(1, "a"), frame(2, "b"), frame(1, "c")}, nil), out: "ac", err: "b"},
		{name: "empty", in: nil},
		{name: "empty frame", in: frame(1, ""), out: ""},
		{name: "stdin stream", in: frame(0, "x"), wantErr: ErrProtocol},
		{name: "unknown stream", in: frame(7, "x"), wantErr: ErrProtocol},
		{name: "reserved bytes", in: append([]byte{1, 1, 0, 0, 0, 0, 0, 1}, 'x'), wantErr: ErrProtocol},
		{name: "short header", in: []byte{1, 0, 0}, wantErr: ErrProtocol},
		{name: "short payload", in: frame(1, "abc")[:10], wantErr: ErrProtocol},
		// A frame that claims 4 GiB but carries 3 bytes must fail without
		// allocating by the claim.
		{name: "huge declared frame", in: append([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, "abc"...), wantErr: ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o, e bytes.Buffer
			err := demux(bytes.NewReader(tt.in), &o, &e, nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && (o.String() != tt.out || e.String() != tt.err) {
				t.Fatalf("got %q/%q, want %q/%q", o.String(), e.String(), tt.out, tt.err)
			}
		})
	}
}

func TestDemuxBoundedMemory(t *testing.T) {
	// 64 MiB through a 1 KiB cap: allocations stay far below the volume.
	var stream bytes.Buffer
	chunk := strings.Repeat("z", 32<<10)
	for range 2048 {
		stream.Write(frame(1, chunk))
	}
	var out *capbuf.Buffer
	allocs := testing.AllocsPerRun(1, func() {
		out = &capbuf.Buffer{Max: 1 << 10}
		if err := demux(bytes.NewReader(stream.Bytes()), out, io.Discard, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 100 {
		t.Fatalf("%v allocations for 64 MiB of output", allocs)
	}
	if kept, cut := out.Result(); len(kept) != 1<<10 || !cut {
		t.Fatalf("kept %d bytes, truncated=%v", len(kept), cut)
	}
}

// inspectOf builds the inspect response a faithful daemon would return.
func inspectOf(cfg *container.Config, hc *container.HostConfig) container.InspectResponse {
	h := *hc
	c := *cfg
	return container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{HostConfig: &h},
		Config:            &c,
		NetworkSettings:   &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{"none": {}}},
	}
}

func TestAssertAppliedCatchesWeakening(t *testing.T) {
	spec := Spec{Run: "r", Phase: "p", Image: "i", Mounts: []Mount{{Volume: "v", Target: "/work", ReadOnly: true}}}
	lim, _ := Limits{}.Resolve()
	cfg, hc := hardened(spec, lim, false)
	if err := assertApplied(inspectOf(cfg, hc), cfg, hc); err != nil {
		t.Fatalf("faithful daemon flagged: %v", err)
	}
	weaken := map[string]func(c *container.Config, h *container.HostConfig, r *container.InspectResponse){
		"root user": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) { c.User = "0" },
		"network": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.NetworkMode = "bridge"
		},
		"network enabled": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			c.NetworkDisabled = false
		},
		"bridge attached": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			r.NetworkSettings.Networks["bridge"] = nil
		},
		"writable root": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.ReadonlyRootfs = false
		},
		"privileged": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) { h.Privileged = true },
		"cap add": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.CapAdd = strslice.StrSlice{"SYS_ADMIN"}
		},
		"cap drop": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) { h.CapDrop = nil },
		"no nnp":   func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) { h.SecurityOpt = nil },
		"seccomp off": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.SecurityOpt = append(h.SecurityOpt, "seccomp=unconfined")
		},
		"docker's default seccomp": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.SecurityOpt = []string{"no-new-privileges=true"}
		},
		"another seccomp": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.SecurityOpt = []string{"no-new-privileges=true", `seccomp={"defaultAction":"SCMP_ACT_ALLOW"}`}
		},
		"bind": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.Binds = []string{"/:/host"}
		},
		"pid host": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) { h.PidMode = "host" },
		"ipc host": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) { h.IpcMode = "host" },
		"unmasked": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.MaskedPaths = []string{}
		},
		"no init": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) { h.Init = nil },
		"swap": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.MemorySwap = 2 * h.Memory
		},
		"pids dropped": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) { h.PidsLimit = nil },
		"cpu":          func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) { h.NanoCPUs = 0 },
		"ulimits": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.Ulimits = h.Ulimits[:1]
		},
		"oom kill off": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			v := true
			h.OomKillDisable = &v
		},
		"log driver": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.LogConfig.Type = "json-file"
		},
		"log driver options": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.LogConfig.Config = map[string]string{"max-size": "1g"}
		},
		"tmpfs": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.Tmpfs = map[string]string{"/tmp": "rw"}
		},
		"mount rw": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.Mounts = []mount.Mount{{Type: mount.TypeVolume, Source: "v", Target: "/work"}}
		},
		"bind mount": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			r.Mounts = []container.MountPoint{{Type: mount.TypeBind, Destination: "/x"}}
		},
		"docker socket": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			r.Mounts = []container.MountPoint{{Type: mount.TypeVolume, Source: "/var/run/docker.sock"}}
		},
		"devices": func(c *container.Config, h *container.HostConfig, r *container.InspectResponse) {
			h.Devices = []container.DeviceMapping{{PathOnHost: "/dev/kvm"}}
		},
	}
	for name, f := range weaken {
		t.Run(name, func(t *testing.T) {
			cfg, hc := hardened(spec, lim, false)
			got := inspectOf(cfg, hc)
			// Deep-copy the parts a mutation may touch.
			h := *hc
			h.Resources.Ulimits = append([]*container.Ulimit(nil), hc.Ulimits...)
			got.HostConfig = &h
			got.NetworkSettings.Networks = map[string]*network.EndpointSettings{"none": {}}
			f(got.Config, got.HostConfig, &got)
			if err := assertApplied(got, cfg, hc); !errors.Is(err, ErrProfile) {
				t.Fatalf("weakened profile accepted: %v", err)
			}
		})
	}
}

func TestHardenedIgnoresNothingFromSpec(t *testing.T) {
	// Spec has no field that reaches capabilities, binds or namespaces:
	// the configuration is the same whatever the spec's other fields.
	lim, _ := Limits{}.Resolve()
	_, a := hardened(Spec{Run: "r", Phase: "p", Image: "i"}, lim, false)
	_, b := hardened(Spec{Run: "r", Phase: "p", Image: "i", Cmd: []string{"x"}, Env: []string{"A=1"}, WorkDir: "/w"}, lim, true)
	if a.Privileged || b.Privileged || len(b.CapAdd) != 0 || len(b.Binds) != 0 || b.NetworkMode != "none" || !b.ReadonlyRootfs {
		t.Fatal("spec fields leaked into the host configuration")
	}
	if !strings.Contains(b.Tmpfs["/tmp"], "noexec") || !strings.Contains(b.Tmpfs["/tmp"], "size=") {
		t.Fatalf("tmpfs options %q", b.Tmpfs["/tmp"])
	}
}

func TestAbandoned(t *testing.T) {
	me := owner{host: "h", boot: "boot-1", pidns: "pid:[1]", pid: 10, start: "500"}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	young, old := now.Add(-time.Hour), now.Add(-DefaultMaxAge-time.Second)
	of := func(o owner) map[string]string {
		l := map[string]string{}
		o.add(l)
		return l
	}
	other := owner{host: "h", boot: "boot-1", pidns: "pid:[1]", pid: 42, start: "900"}
	procs := map[int]string{10: "500", 42: "900", 43: "", 44: "123"} // 43: unreadable
	probe := func(pid int) (bool, string) {
		start, ok := procs[pid]
		return ok, start
	}
	tests := []struct {
		name    string
		labels  map[string]string
		created time.Time
		want    bool
	}{
		{"live owner", of(other), young, false},
		{"live owner, too old", of(other), old, true},
		{"owner gone", of(owner{boot: "boot-1", pidns: "pid:[1]", pid: 7, start: "1"}), young, true},
		{"pid reused", of(owner{boot: "boot-1", pidns: "pid:[1]", pid: 44, start: "120"}), young, true},
		{"pid unreadable", of(owner{boot: "boot-1", pidns: "pid:[1]", pid: 43, start: "1"}), young, false},
		{"this process", of(me), young, false},
		{"another boot", of(owner{boot: "boot-0", pidns: "pid:[1]", pid: 7, start: "1"}), young, false},
		{"another boot, too old", of(owner{boot: "boot-0", pidns: "pid:[1]", pid: 7, start: "1"}), old, true},
		{"another pid namespace", of(owner{boot: "boot-1", pidns: "pid:[2]", pid: 7, start: "1"}), young, false},
		{"no owner labels", map[string]string{LabelManaged: "true"}, young, false},
		{"no owner labels, too old", map[string]string{LabelManaged: "true"}, old, true},
		{"malformed pid", map[string]string{LabelOwnerBoot: "boot-1", LabelOwnerPIDNS: "pid:[1]", LabelOwnerPID: "x7", LabelOwnerStart: "1"}, young, false},
	}
	for _, tt := range tests {
		if got := me.abandoned(tt.labels, tt.created, now, DefaultMaxAge, probe); got != tt.want {
			t.Errorf("%s: abandoned = %v, want %v", tt.name, got, tt.want)
		}
	}
	// Without /proc nothing is known of other processes.
	blind := owner{host: "h", pid: 10}
	if blind.abandoned(of(owner{boot: "boot-1", pidns: "pid:[1]", pid: 7, start: "1"}), young, now, DefaultMaxAge, probe) {
		t.Error("an owner that cannot be checked was taken for gone")
	}
}

func TestSelfOwner(t *testing.T) {
	o := self()
	if o.pid != os.Getpid() || o.boot == "" || o.pidns == "" || o.start == "" {
		t.Fatalf("this process as an owner: %+v", o)
	}
	exists, start := processProbe(o.pid)
	if !exists || start != o.start || o.state(labels("r", "p"), processProbe) != ownerAlive {
		t.Fatalf("this process is not seen alive: %v %q", exists, start)
	}
}

func TestStreamOutProfile(t *testing.T) {
	so, err := StreamOut{Dir: "/output", Bytes: 1 << 20}.Resolve()
	if err != nil || so.Inodes != DefaultStreamOutInodes {
		t.Fatalf("resolve: %+v %v", so, err)
	}
	spec := Spec{Run: "r", Phase: "p", Image: "i", Cmd: []string{"python3", "solution.py"}, StreamOut: &so}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	lim, _ := Limits{}.Resolve()
	cfg, hc := hardened(spec, lim, false)
	opts := hc.Tmpfs["/output"]
	for _, want := range []string{"noexec", "nosuid", "nodev", "size=1048576", "nr_inodes=4096", "uid=65532", "gid=65532"} {
		if !strings.Contains(opts, want) {
			t.Errorf("stream-out tmpfs %q lacks %s", opts, want)
		}
	}
	if hc.Tmpfs["/tmp"] == "" {
		t.Error("the /tmp tmpfs is gone")
	}
	cmd := []string(cfg.Cmd)
	if len(cmd) < 8 || cmd[0] != "python3" || cmd[1] != "-I" || cmd[2] != "-c" || cmd[3] != streamout.Script || cmd[4] != "/output" || cmd[5] != "output" {
		t.Errorf("wrapped command %q", cmd[:min(len(cmd), 3)])
	}
	if got := cmd[len(cmd)-2:]; got[0] != "python3" || got[1] != "solution.py" {
		t.Errorf("the command is not last: %q", got)
	}
	if err := assertApplied(inspectOf(cfg, hc), cfg, hc); err != nil {
		t.Fatalf("faithful daemon flagged: %v", err)
	}
	got := inspectOf(cfg, hc)
	h := *hc
	h.Tmpfs = map[string]string{"/tmp": hc.Tmpfs["/tmp"], "/output": "rw"}
	got.HostConfig = &h
	if err := assertApplied(got, cfg, hc); !errors.Is(err, ErrProfile) {
		t.Fatalf("an uncapped stream-out tmpfs was accepted: %v", err)
	}
	// The cap grows with both quotas and the names the policy allows.
	base := streamCap(so, firewall.Policy{})
	if streamCap(so, firewall.Policy{MaxNameLen: 4096}) <= base ||
		streamCap(StreamOut{Bytes: 2 << 20, Inodes: so.Inodes}, firewall.Policy{}) <= base ||
		streamCap(StreamOut{Bytes: so.Bytes, Inodes: 2 * so.Inodes}, firewall.Policy{}) <= base {
		t.Error("the stream cap ignores a quota or the name limit")
	}
}

// TestGVisorProcessBound: under runsc the workload's process bound is
// RLIMIT_NPROC, enforced by gVisor's kernel, and the host cgroup leaves that
// kernel room; under runc there is no RLIMIT_NPROC, which would count every
// process of the host's sandbox user.
func TestGVisorProcessBound(t *testing.T) {
	lim, err := Limits{PIDs: 16}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	nproc := func(hc *container.HostConfig) *container.Ulimit {
		for _, u := range hc.Ulimits {
			if u.Name == "nproc" {
				return u
			}
		}
		return nil
	}
	_, runc := hardened(Spec{Run: "r", Phase: "p", Image: "i", Runtime: "runc"}, lim, false)
	if *runc.PidsLimit != 16 || nproc(runc) != nil {
		t.Errorf("runc: pids %d, nproc %+v; want 16 and none", *runc.PidsLimit, nproc(runc))
	}
	_, runsc := hardened(Spec{Run: "r", Phase: "p", Image: "i", Runtime: "runsc"}, lim, false)
	if u := nproc(runsc); u == nil || u.Soft != 16 || u.Hard != 16 {
		t.Errorf("runsc: nproc %+v, want 16", u)
	}
	if want := int64(GVisorOwnPIDs + GVisorPIDsPerProcess*16); *runsc.PidsLimit != want {
		t.Errorf("runsc: pids %d, want %d", *runsc.PidsLimit, want)
	}
}

// TestSharedDirOverlaps: an image's shared directory may not overlap the
// sandbox's own mounts (trees, StreamOut, volumes, the reserved ones);
// such an image is refused with ErrSpec, and one that does not is mounted.
func TestSharedDirOverlaps(t *testing.T) {
	d := &Docker{shared: map[string]*sharedDir{}}
	spec := func(dir string, trees ...string) Spec {
		d.shared["img"] = &sharedDir{dir: dir, vol: "v"}
		s := Spec{Image: "img"}
		for _, tr := range trees {
			s.Trees = append(s.Trees, Tree{Dir: tr})
		}
		return s
	}
	for _, c := range []struct {
		dir   string
		trees []string
		ok    bool
	}{
		{"/usr/lib", []string{"/artifacts"}, true},
		{"/usr/lib", []string{"/usr/lib"}, false},
		{"/usr/lib", []string{"/usr/lib/x"}, false},
		{"/usr/lib", []string{"/usr"}, false},
		{"/usr/lib", []string{"/usr/libexec"}, true},
		{"/tmp", nil, false},
		{"/", nil, false},
		{"/etc/ssl", nil, false},
		{"/.sginit", nil, false},
		{"/proc/x", nil, false},
		{"/sbin", nil, false},
		{"/usr", []string{"/artifacts", "/inputs"}, true},
	} {
		got, err := d.sharedDirOf(t.Context(), spec(c.dir, c.trees...))
		if c.ok != (err == nil) || (c.ok && got != (sharedDir{c.dir, "v"})) {
			t.Errorf("dir %s, trees %v: %+v, %v", c.dir, c.trees, got, err)
		}
		if err != nil && !errors.Is(err, ErrSpec) {
			t.Errorf("dir %s: %v is not ErrSpec", c.dir, err)
		}
	}
	s := spec("/usr/lib")
	s.StreamOut = &StreamOut{Dir: "/usr/lib/out"}
	if _, err := d.sharedDirOf(t.Context(), s); !errors.Is(err, ErrSpec) {
		t.Errorf("StreamOut under the shared directory: %v", err)
	}
	s = spec("/usr/lib")
	s.Mounts = []Mount{{Volume: "w", Target: "/usr"}}
	if _, err := d.sharedDirOf(t.Context(), s); !errors.Is(err, ErrSpec) {
		t.Errorf("a volume over the shared directory: %v", err)
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{
		"0":         {0},
		"0-1":       {0, 1},
		"0-2,5,7-8": {0, 1, 2, 5, 7, 8},
		"":          nil,
		"3-1":       nil,
		"x":         nil,
		"0,-1":      nil,
	} {
		if got := parseCPUList(in); !slices.Equal(got, want) {
			t.Errorf("parseCPUList(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestQueueSpans: the container's wait for a CPU is the union of the spans
// its threads' readings report, so that waits several threads sat through
// together count once, and a wait reported late (the kernel adds it when
// the thread gets the CPU) counts whole, not cut to the interval between
// two readings.
func TestQueueSpans(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var s spans
	s.add(at(0), at(50))    // 0-50
	s.add(at(20), at(60))   // overlaps: 0-60
	s.add(at(100), at(120)) // apart: 0-60, 100-120
	if s.total != 80*time.Millisecond || len(s.list) != 2 {
		t.Fatalf("total %v in %d spans, want 80ms in 2", s.total, len(s.list))
	}
	// A wait of 600 ms reported at 700 covers 100-700 and swallows the
	// span before it that it overlaps, not the one it does not.
	s.add(at(100), at(700))
	if s.total != 660*time.Millisecond || len(s.list) != 2 {
		t.Fatalf("total %v in %d spans, want 660ms in 2", s.total, len(s.list))
	}
	// One reaching back past both merges all of them.
	s.add(at(10), at(800))
	if s.total != 800*time.Millisecond || len(s.list) != 1 {
		t.Fatalf("total %v in %d spans, want 800ms in 1", s.total, len(s.list))
	}
	// Touching ends merge.
	s.add(at(800), at(900))
	if s.total != 900*time.Millisecond || len(s.list) != 1 {
		t.Fatalf("total %v in %d spans, want 900ms in 1", s.total, len(s.list))
	}
}
