//go:build unix

package firewall_test

import "syscall"

// setUmask sets the process umask and returns the previous one. Only
// sequential tests may use it.
func setUmask(m int) int { return syscall.Umask(m) }
