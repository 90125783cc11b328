//go:build unix

package engine

import (
	"errors"
	"syscall"
)

// processProbe asks the kernel: signal 0 tells whether the pid exists
// (EPERM means it does, owned by someone else), /proc its start time when
// readable. Unlike /proc alone, it is not fooled by hidepid.
func processProbe(pid int) (exists bool, start string) {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false, ""
	}
	start, _ = procStart(pid)
	return true, start
}
