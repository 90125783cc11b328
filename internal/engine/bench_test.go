//go:build engine

package engine_test

import (
	"fmt"
	"os/exec"
	"testing"

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
