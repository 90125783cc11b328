// Command memprobe filters a tar stream from standard input to nowhere under
// the policy given as JSON in its only argument, and prints a summary of the
// manifest and the process's peak resident set size as JSON. The firewall's
// memory test runs it as a child process built without the race detector.
//
// The peak is VmHWM from /proc/self/status, the high-water mark of this
// process's own address space. getrusage's ru_maxrss is not usable here: on
// Linux, exec folds the high-water mark of the replaced address space into
// it, and a child started by Go's os/exec (CLONE_VM|CLONE_VFORK) runs on its
// parent's address space until exec, so ru_maxrss reports at least the
// parent's RSS.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/strictgrade/strictgrade/firewall"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: memprobe POLICY-JSON < archive.tar")
		os.Exit(2)
	}
	p, err := firewall.ParsePolicy([]byte(os.Args[1]))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// A cancellable context, as the CLI has, so reads go through the
	// firewall's reading goroutine.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := firewall.Filter(ctx, os.Stdin, io.Discard, p)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hwm, err := peakRSS()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"vm_hwm_bytes":   hwm,
		"files":          len(m.Files),
		"dirs":           len(m.Dirs),
		"total_bytes":    m.TotalBytes,
		"input_bytes":    m.InputBytes,
		"archive_sha256": m.ArchiveSHA256,
	})
}

// peakRSS reads VmHWM (in kB) from /proc/self/status and returns bytes.
func peakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status: %v", sc.Err())
}
