package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/strslice"
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

func TestCapBufferNeverShortWrites(t *testing.T) {
	overs := 0
	c := &capBuffer{max: 10, onOver: func() { overs++ }}
	for range 5 {
		n, err := c.Write([]byte("abcd"))
		if n != 4 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got := c.buf.String(); got != "abcdabcdab" || !c.truncated || c.total != 20 || overs != 1 {
		t.Fatalf("buf %q truncated %v total %d overs %d", got, c.truncated, c.total, overs)
	}
}

func TestDemuxBoundedMemory(t *testing.T) {
	// 64 MiB through a 1 KiB cap: allocations stay far below the volume.
	var stream bytes.Buffer
	chunk := strings.Repeat("z", 32<<10)
	for range 2048 {
		stream.Write(frame(1, chunk))
	}
	out := &capBuffer{max: 1 << 10}
	allocs := testing.AllocsPerRun(1, func() {
		out.buf.Reset()
		if err := demux(bytes.NewReader(stream.Bytes()), out, io.Discard, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 100 {
		t.Fatalf("%v allocations for 64 MiB of output", allocs)
	}
	if out.buf.Len() != 1<<10 || !out.truncated {
		t.Fatalf("kept %d bytes, truncated=%v", out.buf.Len(), out.truncated)
	}
}

func TestLimitsResolve(t *testing.T) {
	l, err := Limits{}.resolve()
	if err != nil || l != DefaultLimits {
		t.Fatalf("zero limits resolved to %+v, %v", l, err)
	}
	if _, err := (Limits{MemoryBytes: MaxLimits.MemoryBytes + 1}).resolve(); !errors.Is(err, ErrSpec) {
		t.Fatalf("over-maximum memory: %v", err)
	}
	if _, err := (Limits{PIDs: -1}).resolve(); !errors.Is(err, ErrSpec) {
		t.Fatalf("negative pids: %v", err)
	}
	if _, err := (Limits{MemoryBytes: 1 << 20}).resolve(); !errors.Is(err, ErrSpec) {
		t.Fatalf("tiny memory: %v", err)
	}
	l, err = Limits{Wall: time.Second}.resolve()
	if err != nil || l.Wall != time.Second || l.PIDs != DefaultLimits.PIDs {
		t.Fatalf("partial limits: %+v %v", l, err)
	}
}

func TestValidateSpec(t *testing.T) {
	ok := Spec{Run: "r1", Phase: "candidate", Image: "img"}
	if err := validateSpec(ok); err != nil {
		t.Fatal(err)
	}
	bad := []Spec{
		{Phase: "p", Image: "i"},
		{Run: "R", Phase: "p", Image: "i"},
		{Run: "r", Phase: "p/q", Image: "i"},
		{Run: "r", Phase: "p"},
		{Run: "r", Phase: "p", Image: "i", Mounts: []Mount{{Volume: "v", Target: "rel"}}},
		{Run: "r", Phase: "p", Image: "i", Mounts: []Mount{{Volume: "v", Target: "/a/../b"}}},
		{Run: "r", Phase: "p", Image: "i", Mounts: []Mount{{Volume: "v", Target: "/"}}},
		{Run: "r", Phase: "p", Image: "i", Mounts: []Mount{{Volume: "v", Target: "/a"}, {Volume: "w", Target: "/a"}}},
		{Run: "r", Phase: "p", Image: "i", Collect: []string{"out"}},
		{Run: "r", Phase: "p", Image: "i", Env: []string{"NOEQUALS"}},
	}
	for i, s := range bad {
		if err := validateSpec(s); !errors.Is(err, ErrSpec) {
			t.Errorf("case %d: %v", i, err)
		}
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
	lim, _ := Limits{}.resolve()
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
			h.LogConfig.Type = "none"
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
	lim, _ := Limits{}.resolve()
	_, a := hardened(Spec{Run: "r", Phase: "p", Image: "i"}, lim, false)
	_, b := hardened(Spec{Run: "r", Phase: "p", Image: "i", Cmd: []string{"x"}, Env: []string{"A=1"}, WorkDir: "/w"}, lim, true)
	if a.Privileged || b.Privileged || len(b.CapAdd) != 0 || len(b.Binds) != 0 || b.NetworkMode != "none" || !b.ReadonlyRootfs {
		t.Fatal("spec fields leaked into the host configuration")
	}
	if !strings.Contains(b.Tmpfs["/tmp"], "noexec") || !strings.Contains(b.Tmpfs["/tmp"], "size=") {
		t.Fatalf("tmpfs options %q", b.Tmpfs["/tmp"])
	}
}
