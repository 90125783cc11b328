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
