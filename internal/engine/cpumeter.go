package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupRoot is where the host mounts its cgroup hierarchies.
var cgroupRoot = "/sys/fs/cgroup"

// cpuMeter reads a container's CPU accounting from the host: the CPU time
// its cgroup has used, and how long its threads have waited on a run queue
// (each thread's schedstat). It reads what the kernel keeps for the
// container, never anything the workload writes, so the workload cannot
// make it say less than it used. Under gVisor the cgroup holds the
// user-space kernel's threads, whose CPU time includes the work they do
// for the workload.
type cpuMeter struct {
	usage func() (time.Duration, error)
	tasks string // the file listing the cgroup's threads
	// waited is the last run-queue delay read per thread: a thread that
	// has ended keeps what it waited while it lived.
	waited map[int]time.Duration
}

// openMeter finds the cgroup of the container whose first process is pid,
// on the host's own cgroup tree. id is the container's ID, which a cgroup
// made for it names: a process that is not in such a cgroup (the daemon
// is not on this host, or uses a layout not known here) gives an error,
// and the caller falls back to the wall clock.
func openMeter(pid int, id string) (*cpuMeter, error) {
	if pid <= 0 {
		return nil, errors.New("engine: no process to meter")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var v1, v2 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpuacct" {
				v1 = parts[2]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	m := &cpuMeter{waited: map[int]time.Duration{}}
	switch {
	case v1 != "" && strings.Contains(v1, id):
		for _, mount := range []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"} {
			dir := filepath.Join(cgroupRoot, mount, v1)
			if _, err := os.Stat(filepath.Join(dir, "cpuacct.usage")); err == nil {
				file := filepath.Join(dir, "cpuacct.usage")
				m.usage = func() (time.Duration, error) { return readNanos(file) }
				m.tasks = filepath.Join(dir, "tasks")
				break
			}
		}
	case v2 != "" && strings.Contains(v2, id):
		dir := filepath.Join(cgroupRoot, v2)
		file := filepath.Join(dir, "cpu.stat")
		if _, err := os.Stat(file); err == nil {
			m.usage = func() (time.Duration, error) { return readUsageUsec(file) }
			m.tasks = filepath.Join(dir, "cgroup.threads")
		}
	}
	if m.usage == nil {
		return nil, fmt.Errorf("engine: no cgroup of container %.12s found from process %d", id, pid)
	}
	if _, err := m.usage(); err != nil {
		return nil, err
	}
	return m, nil
}

// readNanos reads a file holding one decimal count of nanoseconds.
func readNanos(file string) (time.Duration, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("engine: %s: %w", file, err)
	}
	return time.Duration(n), nil
}

// readUsageUsec reads usage_usec from a cgroup v2 cpu.stat.
func readUsageUsec(file string) (time.Duration, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("engine: %s: %w", file, err)
			}
			return time.Duration(n) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("engine: %s has no usage_usec", file)
}

// sample reads the run-queue delay of every thread in the cgroup now. A
// cgroup that is gone (the container ended) leaves the last values.
func (m *cpuMeter) sample() {
	b, err := os.ReadFile(m.tasks)
	if err != nil {
		return
	}
	for _, f := range bytes.Fields(b) {
		tid, err := strconv.Atoi(string(f))
		if err != nil {
			continue
		}
		if w, ok := runDelay(tid); ok {
			m.waited[tid] = w
		}
	}
}

// waitedTotal is the run-queue delay of every thread sampled so far.
func (m *cpuMeter) waitedTotal() time.Duration {
	var t time.Duration
	for _, w := range m.waited {
		t += w
	}
	return t
}

// runDelay reads the second field of /proc/TID/schedstat: the time the
// thread has spent runnable but waiting for a CPU, in nanoseconds.
func runDelay(tid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(n), true
}

// meterTick is how often a run with a CPU budget reads its meter: a
// twentieth of the budget, between 10 ms and 250 ms. The budget is
// overrun by at most a tick's worth of the container's CPUs.
func meterTick(budget time.Duration) time.Duration {
	return min(max(budget/20, 10*time.Millisecond), 250*time.Millisecond)
}
