//go:build engine

package engine_test

import (
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/internal/engine"
)

// BenchmarkOneShot compares one hardened one-shot run through the engine
// (create, inspect-assert, attach, wait, start, inspect, remove) with the
// same run through the docker CLI with equivalent flags.
func BenchmarkOneShot(b *testing.B) {
	b.Run("engine", func(b *testing.B) {
		run := newRun(b)
		for b.Loop() {
			res, err := eng.Run(b.Context(), probe(run, "sleep", "0s"))
			if err != nil || res.Code != 0 {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("docker-cli", func(b *testing.B) {
		l := engine.DefaultLimits
		args := []string{"run", "--rm", "--user", engine.SandboxUser, "--cap-drop", "ALL",
			"--security-opt", "no-new-privileges=true", "--network", "none", "--read-only",
			"--tmpfs", fmt.Sprintf("/tmp:rw,noexec,nosuid,nodev,size=%d,mode=1777", l.TmpfsBytes),
			"--pids-limit", fmt.Sprint(l.PIDs), "--memory", fmt.Sprint(l.MemoryBytes),
			"--memory-swap", fmt.Sprint(l.MemoryBytes), "--cpus", "1",
			"--ulimit", fmt.Sprintf("nofile=%d:%d", l.OpenFiles, l.OpenFiles),
			"--ulimit", fmt.Sprintf("fsize=%d:%d", l.FileBytes, l.FileBytes), "--ulimit", "core=0",
			"--init", "--ipc", "private", "--log-opt", "max-size=1m", "--log-opt", "max-file=1",
			"--stop-signal", "SIGKILL", "--label", engine.LabelManaged + "=true",
			probeImage, "/bin/probe", "sleep", "0s"}
		for b.Loop() {
			if out, err := exec.CommandContext(b.Context(), "docker", args...).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}

// BenchmarkLifecycles measures how many whole sandbox lives (create,
// start, wait, remove) of a workload that does nothing the daemon gets
// through per minute, one and two at a time: a strict grade that needs k
// containers can go no faster than this rate over k, whatever its
// workload (ADR 0016).
func BenchmarkLifecycles(b *testing.B) {
	for _, par := range []int{1, 2} {
		b.Run(fmt.Sprintf("%d-at-a-time", par), func(b *testing.B) {
			run := newRun(b)
			sem := make(chan struct{}, par)
			var wg sync.WaitGroup
			start := time.Now()
			n := 0
			for b.Loop() {
				sem <- struct{}{}
				wg.Add(1)
				n++
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					res, err := eng.Run(b.Context(), probe(run, "sleep", "0s"))
					if err != nil || res.Code != 0 {
						b.Error(err, res)
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(n)/time.Since(start).Minutes(), "containers/min")
		})
	}
}
