package cli

import (
	"fmt"
	"io"
	"os/exec"
	"syscall"
)

// busyLoops is a load the matrix runs beside itself (matrix --stress N): N
// processes that each spin on a CPU for as long as the run lasts, each in
// a session of its own, so that the scheduler counts every one as a
// separate competitor, as it would separate jobs on a shared machine.
type busyLoops struct {
	cmds []*exec.Cmd
}

// startBusyLoops starts n busy loops; they die with this process.
func startBusyLoops(n int, progress io.Writer) (*busyLoops, error) {
	b := &busyLoops{}
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			b.stop()
			return nil, fmt.Errorf("matrix: start a busy loop: %w", err)
		}
		b.cmds = append(b.cmds, cmd)
	}
	if n > 0 {
		fmt.Fprintf(progress, "matrix: %d busy loops run beside the matrix (--stress)\n", n)
	}
	return b, nil
}

// stop kills the loops and reaps them.
func (b *busyLoops) stop() {
	for _, c := range b.cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	b.cmds = nil
}
