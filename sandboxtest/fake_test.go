package sandboxtest_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandboxtest"
)

func TestFakeConforms(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) sandboxtest.Target {
		f := sandboxtest.NewFake()
		return sandboxtest.Target{
			Backend: f,
			Probe:   f.Image(sandboxtest.ProbeImage, sandboxtest.Probe),
			Shell:   f.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(nil)),
		}
	})
}

// TestProcSpec: a Program sees the spec its sandbox was made from, less
// the standard input it reads itself, and may keep what it was given.
func TestProcSpec(t *testing.T) {
	f := sandboxtest.NewFake()
	defer f.Close()
	var got sandbox.Spec
	var stdin []byte
	img := f.Image("recorder", func(p *sandboxtest.Proc) int {
		got = p.Spec()
		got.Cmd[0] = "changed"
		got = p.Spec()
		stdin, _ = io.ReadAll(p.Stdin)
		return 0
	})
	spec := sandbox.Spec{Run: "r1", Phase: "candidate", Image: img, Cmd: []string{"run", "me"}, Env: []string{"A=1"},
		Stdin: strings.NewReader("in"), Limits: sandbox.Limits{Wall: time.Minute}, StreamOut: &sandbox.StreamOut{Dir: "/out"}}
	if _, err := f.Run(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	if got.Stdin != nil || string(stdin) != "in" {
		t.Errorf("stdin in the spec %v, read %q", got.Stdin, stdin)
	}
	if got.Phase != "candidate" || got.Cmd[0] != "run" || got.Limits.Wall != time.Minute || got.StreamOut.Bytes != sandbox.DefaultStreamOutBytes {
		t.Errorf("spec %+v", got)
	}
}
