package sandboxtest_test

import (
	"testing"

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
