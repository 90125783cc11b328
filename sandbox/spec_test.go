package sandbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/sandbox"
)

func TestLimitsResolve(t *testing.T) {
	l, err := sandbox.Limits{}.Resolve()
	if err != nil || l != sandbox.DefaultLimits {
		t.Fatalf("zero limits resolved to %+v, %v", l, err)
	}
	l, err = sandbox.Limits{Wall: time.Second}.Resolve()
	if err != nil || l.Wall != time.Second || l.PIDs != sandbox.DefaultLimits.PIDs {
		t.Fatalf("partial limits: %+v %v", l, err)
	}
	for name, bad := range map[string]sandbox.Limits{
		"over-maximum memory": {MemoryBytes: sandbox.MaxLimits.MemoryBytes + 1},
		"over-maximum wall":   {Wall: sandbox.MaxLimits.Wall + 1},
		"negative pids":       {PIDs: -1},
		"tiny memory":         {MemoryBytes: 1 << 20},
	} {
		if _, err := bad.Resolve(); !errors.Is(err, sandbox.ErrSpec) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCPULimitResolve: a CPU-time budget takes a wall-clock backstop of
// twice it plus 2 s unless the spec sets one; starvation is a share of the
// wall time spent waiting for a CPU.
func TestCPULimitResolve(t *testing.T) {
	l, err := sandbox.Limits{CPU: 3 * time.Second}.Resolve()
	if err != nil || l.CPU != 3*time.Second || l.Wall != 8*time.Second || l.Wall != sandbox.Backstop(l.CPU) {
		t.Fatalf("cpu 3s resolved to cpu %v wall %v, %v", l.CPU, l.Wall, err)
	}
	l, err = sandbox.Limits{CPU: time.Second, Wall: 30 * time.Second}.Resolve()
	if err != nil || l.Wall != 30*time.Second {
		t.Fatalf("an explicit backstop: wall %v, %v", l.Wall, err)
	}
	if got := sandbox.Stretched(l.Wall); got != 600*time.Second {
		t.Errorf("stretched %v, want 600s", got)
	}
	if sandbox.Backstop(sandbox.MaxLimits.Wall) != sandbox.MaxLimits.Wall || sandbox.Stretched(sandbox.MaxLimits.Wall) != sandbox.MaxLimits.Wall {
		t.Error("a backstop passes the maximum wall clock")
	}
	for name, bad := range map[string]sandbox.Limits{
		"negative cpu":     {CPU: -1},
		"over-maximum cpu": {CPU: sandbox.MaxLimits.Wall + 1},
	} {
		if _, err := bad.Resolve(); !errors.Is(err, sandbox.ErrSpec) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, tt := range []struct {
		waited, wall time.Duration
		want         bool
	}{
		{0, time.Second, false},
		{499 * time.Millisecond, time.Second, false},
		{500 * time.Millisecond, time.Second, true},
		{3 * time.Second, time.Second, true}, // threads' waits add up
		{time.Second, 0, false},
	} {
		if got := sandbox.Starved(tt.waited, tt.wall); got != tt.want {
			t.Errorf("Starved(%v, %v) = %v", tt.waited, tt.wall, got)
		}
	}
}

func TestStreamOutResolve(t *testing.T) {
	so, err := sandbox.StreamOut{Dir: "/output", Bytes: 1 << 20}.Resolve()
	if err != nil || so.Inodes != sandbox.DefaultStreamOutInodes || so.Bytes != 1<<20 {
		t.Fatalf("resolve: %+v %v", so, err)
	}
	for name, bad := range map[string]sandbox.StreamOut{
		"negative bytes":  {Dir: "/o", Bytes: -1},
		"too many bytes":  {Dir: "/o", Bytes: sandbox.MaxStreamOutBytes + 1},
		"too many inodes": {Dir: "/o", Inodes: sandbox.MaxStreamOutInodes + 1},
	} {
		if _, err := bad.Resolve(); !errors.Is(err, sandbox.ErrSpec) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	ok := sandbox.Spec{Run: "r1", Phase: "candidate", Image: "img"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	out := &sandbox.StreamOut{Dir: "/output"}
	tests := map[string]sandbox.Spec{
		"no run":              {Phase: "p", Image: "i"},
		"upper-case run":      {Run: "R", Phase: "p", Image: "i"},
		"slash in phase":      {Run: "r", Phase: "p/q", Image: "i"},
		"no image":            {Run: "r", Phase: "p"},
		"relative mount":      {Run: "r", Phase: "p", Image: "i", Mounts: []sandbox.Mount{{Volume: "v", Target: "rel"}}},
		"unclean mount":       {Run: "r", Phase: "p", Image: "i", Mounts: []sandbox.Mount{{Volume: "v", Target: "/a/../b"}}},
		"mount at root":       {Run: "r", Phase: "p", Image: "i", Mounts: []sandbox.Mount{{Volume: "v", Target: "/"}}},
		"two mounts":          {Run: "r", Phase: "p", Image: "i", Mounts: []sandbox.Mount{{Volume: "v", Target: "/a"}, {Volume: "w", Target: "/a"}}},
		"relative collect":    {Run: "r", Phase: "p", Image: "i", Collect: []string{"out"}},
		"env without =":       {Run: "r", Phase: "p", Image: "i", Env: []string{"NOEQUALS"}},
		"stream-out, no cmd":  {Run: "r", Phase: "p", Image: "i", StreamOut: out},
		"stream-out in /tmp":  {Run: "r", Phase: "p", Image: "i", Cmd: []string{"x"}, StreamOut: &sandbox.StreamOut{Dir: "/tmp/o"}},
		"stream-out on mount": {Run: "r", Phase: "p", Image: "i", Cmd: []string{"x"}, StreamOut: out, Mounts: []sandbox.Mount{{Volume: "v", Target: "/output/x"}}},
		"stream-out collects": {Run: "r", Phase: "p", Image: "i", Cmd: []string{"x"}, StreamOut: out, Collect: []string{"/output"}},
	}
	for name, s := range tests {
		if err := s.Validate(); !errors.Is(err, sandbox.ErrSpec) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
