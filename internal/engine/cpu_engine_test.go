//go:build engine

package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/sandbox"
)

// TestCPUBudget: with a CPU-time budget the container's own accounting
// decides (issue 30). A busy loop is stopped when it has used its budget,
// long before the wall-clock backstop; a sleeper uses next to no CPU and
// meets the backstop (LimitWall, the candidate's timeout). A CPU quota
// below what the loop wants keeps its thread waiting as a starved host
// would: at 15% of a CPU the backstop stretches and the loop still meets
// its budget (LimitCPU, the verdict of a quiet host); at 1% (with a short
// backstop) it meets the end of the stretch with its budget unspent while it waited for a CPU,
// which is the host's doing: ErrOverloaded, never a timeout.
func TestCPUBudget(t *testing.T) {
	t.Parallel()
	t.Run("spin", func(t *testing.T) {
		t.Parallel()
		spec := probe(newRun(t), "spin")
		spec.Limits.CPU = time.Second
		res := mustRun(t, spec)
		if res.Exit != engine.ExitTimeout || res.Limit != sandbox.LimitCPU {
			t.Fatalf("exit %s limit %q, want timeout at the CPU budget", res.Exit, res.Limit)
		}
		if !res.CPUMeasured || res.CPU < time.Second || res.CPU > 3*time.Second {
			t.Fatalf("CPU %v (measured %v), want about a second", res.CPU, res.CPUMeasured)
		}
		if res.Duration >= sandbox.Backstop(time.Second) {
			t.Fatalf("stopped after %v, at the backstop", res.Duration)
		}
	})
	t.Run("sleep", func(t *testing.T) {
		t.Parallel()
		spec := probe(newRun(t), "sleep", "60s")
		spec.Limits.CPU = time.Second
		res := mustRun(t, spec)
		if res.Exit != engine.ExitTimeout || res.Limit != sandbox.LimitWall {
			t.Fatalf("exit %s limit %q, want timeout at the wall-clock backstop", res.Exit, res.Limit)
		}
		if res.Duration < sandbox.Backstop(time.Second) {
			t.Fatalf("stopped after %v, before the backstop %v", res.Duration, sandbox.Backstop(time.Second))
		}
		if !res.CPUMeasured || res.CPU > 500*time.Millisecond || sandbox.Starved(res.Waited, res.Duration) {
			t.Fatalf("CPU %v waited %v in %v: a sleeper neither spends nor waits", res.CPU, res.Waited, res.Duration)
		}
	})
	t.Run("slowed", func(t *testing.T) {
		t.Parallel()
		spec := probe(newRun(t), "spin")
		spec.Limits.CPU = time.Second
		spec.Limits.NanoCPUs = 15e7
		res := mustRun(t, spec)
		if res.Exit != engine.ExitTimeout || res.Limit != sandbox.LimitCPU {
			t.Fatalf("exit %s limit %q after %v (CPU %v, waited %v), want timeout at the CPU budget", res.Exit, res.Limit, res.Duration, res.CPU, res.Waited)
		}
		if res.Duration <= sandbox.Backstop(time.Second) {
			t.Fatalf("stopped after %v, within the backstop: the quota did not slow it", res.Duration)
		}
	})
	t.Run("starved", func(t *testing.T) {
		t.Parallel()
		spec := probe(newRun(t), "spin")
		// A backstop of a second (stretched to 20 s at most), so that
		// the test does not wait out the default's stretch.
		spec.Limits.CPU, spec.Limits.Wall = time.Second, time.Second
		spec.Limits.NanoCPUs = 1e7
		res, err := eng.Run(t.Context(), spec)
		if !errors.Is(err, sandbox.ErrOverloaded) {
			t.Fatalf("got %+v, %v; want ErrOverloaded", res, err)
		}
		t.Log(err)
	})
	t.Run("no budget", func(t *testing.T) {
		t.Parallel()
		spec := probe(newRun(t), "spin")
		spec.Limits.Wall = time.Second
		res := mustRun(t, spec)
		if res.Exit != engine.ExitTimeout || res.Limit != sandbox.LimitWall || res.CPUMeasured {
			t.Fatalf("exit %s limit %q measured %v, want the wall clock alone", res.Exit, res.Limit, res.CPUMeasured)
		}
	})
}
