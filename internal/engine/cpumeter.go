package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strictgrade/strictgrade/sandbox"
)

// cgroupRoot is where the host mounts its cgroup hierarchies.
var cgroupRoot = "/sys/fs/cgroup"

// cpuMeter reads a container's CPU accounting from the host: the CPU time
// its cgroup has used, how long each of its threads has waited on a run
// queue (its schedstat), and how idle the CPUs it may run on were. It
// reads what the kernel keeps, never anything the workload writes, so the
// workload cannot make it say less than it used. Under gVisor the cgroup
// holds the user-space kernel's threads, whose CPU time includes the work
// they do for the workload.
//
// The container waited for a CPU (queued) for as long as one of its
// threads sat on a run queue, however many sat there at once. It is the
// container's count, not one thread's, because a run's waits move from
// thread to thread: the runtime's init waits first, then the init that
// execs the workload, then the workload's threads (a Go program's several),
// and a host starving all of them found no single thread that waited half
// the run (a CI run: 8 ms of CPU and at most 715 ms waited by one thread
// in a 2 s backstop). The kernel adds a wait to a thread's run-queue delay
// only when the thread gets the CPU at its end, so a reading that finds a
// thread's delay grown by d since the one before knows that it waited
// about the d before now, however long ago the reading before was; the
// meter keeps the union of those spans (queuedSince).
//
// The host starved a run (starved) when the container waited for a CPU
// at least sandbox.StarvedShare of the run while the CPUs of its cpuset
// were idle less than that share of one CPU. Both halves matter. A thread
// waits while another runs on its CPU; when that other is the container's
// own, the container spends CPU time at least as fast as the thread
// waits, so in each interval the wait its own threads cause is at most
// the CPU time it used, and a workload that reaches the backstop has spent
// less than half of it: its own threads alone cannot make it wait half
// the run. And a CPU that sat idle could have run whatever waited, so a
// host with idle CPUs to spare did not starve the run, whatever its
// threads' affinity says.
type cpuMeter struct {
	usage func() (time.Duration, error)
	tasks string // the file listing the cgroup's threads
	// cpus lists the CPUs of the container's cpuset; nil for all.
	cpus []int
	// waited is the last run-queue delay read per thread (a thread that
	// has ended keeps what it waited while it lived), base what each
	// thread had waited when the run began; queue the spans since the run
	// began in which a thread of it waited.
	waited, base map[int]time.Duration
	queue        spans
	idle0        map[int]time.Duration // each CPU's idle time when the run began
	began        time.Time             // when those were read
	// out is how long the container has waited for the host to read its
	// output (pipewait.go).
	out pipeWaits
	// ended is when the meter first found the cgroup without a process
	// (or gone): the workload has ended, and what follows (the daemon
	// draining its output before it reports the exit) is the host's time.
	ended time.Time
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
	var v1, v2, cpuset string
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
			switch c {
			case "cpuacct":
				v1 = parts[2]
			case "cpuset":
				cpuset = parts[2]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	m := &cpuMeter{waited: map[int]time.Duration{}, base: map[int]time.Duration{}, out: pipeWaits{pipes: outputPipes(pid), in: inputPipe(pid)}}
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
		if cpuset != "" {
			m.cpus = readCPUList(filepath.Join(cgroupRoot, "cpuset", cpuset, "cpuset.effective_cpus"))
		}
	case v2 != "" && strings.Contains(v2, id):
		dir := filepath.Join(cgroupRoot, v2)
		file := filepath.Join(dir, "cpu.stat")
		if _, err := os.Stat(file); err == nil {
			m.usage = func() (time.Duration, error) { return readUsageUsec(file) }
			m.tasks = filepath.Join(dir, "cgroup.threads")
			m.cpus = readCPUList(filepath.Join(dir, "cpuset.cpus.effective"))
		}
	}
	if m.usage == nil {
		return nil, fmt.Errorf("engine: no cgroup of container %.12s found from process %d", id, pid)
	}
	if _, err := m.usage(); err != nil {
		return nil, err
	}
	// A tasks file the meter cannot read later means the cgroup is gone
	// (the workload has ended): it must be readable now.
	if _, err := os.ReadFile(m.tasks); err != nil {
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

// begin takes the readings a run is measured from: each thread's
// run-queue delay and each CPU's idle time so far.
func (m *cpuMeter) begin() {
	m.sample()
	maps.Copy(m.base, m.waited)
	m.queue = spans{}
	m.idle0 = cpuIdle()
	m.began = time.Now()
	m.out.last = m.began
	m.out.waited = 0
}

// sample reads the run-queue delay of every thread in the cgroup now, and
// which of them sleep writing into the container's output pipes. A cgroup
// that is gone (the container ended) leaves the last values.
func (m *cpuMeter) sample() {
	now := time.Now()
	b, err := os.ReadFile(m.tasks)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		if m.ended.IsZero() {
			m.ended = now
		}
		return
	}
	var tids []int
	var most time.Duration // the longest wait of a thread since the last reading
	for _, f := range bytes.Fields(b) {
		tid, err := strconv.Atoi(string(f))
		if err != nil {
			continue
		}
		tids = append(tids, tid)
		if w, ok := runDelay(tid); ok {
			// A thread first seen now began since the last reading (or
			// this is the first): all it waited falls in the interval.
			most = max(most, w-m.waited[tid])
			m.waited[tid] = w
		}
	}
	if !m.began.IsZero() && most > 0 {
		from := now.Add(-most)
		if from.Before(m.began) {
			from = m.began
		}
		m.queue.add(from, now)
	}
	m.out.sample(tids, now)
}

// own is the part of the time from start to now that was the workload's
// own: up to its end, if it has ended, less the time it waited for the
// grader to read its output. The wall-clock backstop counts this, not the
// time the host took.
func (m *cpuMeter) own(start, now time.Time) time.Duration {
	if !m.ended.IsZero() && m.ended.Before(now) {
		now = m.ended
	}
	return now.Sub(start) - m.outputWait()
}

// outputWait is how long a thread of the container has been asleep writing
// into its output pipes since the run began, while the grader read them
// (pipewait.go): time the host held the workload back.
func (m *cpuMeter) outputWait() time.Duration { return m.out.total() }

// queuedSince is how long the container has waited for a CPU since the
// run began (see cpuMeter): the union of the spans, or the longest wait of
// one thread where that is more. A thread's own waits never overlap, but
// the spans are placed at the readings that report them, up to a reading
// after they ended, and can overlap where the waits did not.
func (m *cpuMeter) queuedSince() time.Duration {
	most := m.queue.total
	for tid, w := range m.waited {
		most = max(most, w-m.base[tid])
	}
	return most
}

// spans is a union of spans of time, added in the order of their ends.
type spans struct {
	list  []span
	total time.Duration
}

type span struct{ from, to time.Time }

// add adds the span from..to, which ends no earlier than any before it,
// merging it with the ones it overlaps.
func (s *spans) add(from, to time.Time) {
	for n := len(s.list); n > 0 && !s.list[n-1].to.Before(from); n = len(s.list) {
		last := s.list[n-1]
		if last.from.Before(from) {
			from = last.from
		}
		s.total -= last.to.Sub(last.from)
		s.list = s.list[:n-1]
	}
	s.list = append(s.list, span{from, to})
	s.total += to.Sub(from)
}

// idleSince is how long the CPUs of the container's cpuset have been idle
// together since the run began, and whether the host said.
func (m *cpuMeter) idleSince() (time.Duration, bool) {
	now := cpuIdle()
	if m.idle0 == nil || now == nil {
		return 0, false
	}
	var idle time.Duration
	for cpu, t := range now {
		if t0, ok := m.idle0[cpu]; ok && (m.cpus == nil || slices.Contains(m.cpus, cpu)) {
			idle += t - t0
		}
	}
	return idle, true
}

// starved reports whether the host has starved the run since it began
// (see cpuMeter): it waited for a CPU at least StarvedShare of the time while its CPUs were idle for less than that share of one CPU.
// A host whose idle time cannot be read is taken at the thread's word.
func (m *cpuMeter) starved() bool {
	elapsed := time.Since(m.began)
	if !sandbox.Starved(m.queuedSince(), elapsed) {
		return false
	}
	idle, ok := m.idleSince()
	return !ok || !sandbox.Starved(idle, elapsed)
}

// userHz is the unit of /proc/stat's counters: USER_HZ, 100 on every
// architecture Linux exposes it to user space with.
const userHz = 100

// cpuIdle reads each CPU's idle time (idle and iowait: a CPU waiting on
// I/O runs nothing else) from /proc/stat, or nil.
func cpuIdle() map[int]time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	out := map[int]time.Duration{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(f[0][3:])
		if err != nil {
			continue
		}
		idle, err1 := strconv.ParseInt(f[4], 10, 64)
		iowait, err2 := strconv.ParseInt(f[5], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[cpu] = time.Duration(idle+iowait) * time.Second / userHz
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// readCPUList reads a cpuset list ("0-3,6"), or nil when it cannot.
func readCPUList(file string) []int {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	return parseCPUList(strings.TrimSpace(string(b)))
}

// parseCPUList parses the kernel's list format of CPUs; nil when it is
// empty or malformed.
func parseCPUList(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				return nil
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out
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
