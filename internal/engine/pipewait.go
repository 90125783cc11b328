package engine

import (
	"bytes"
	"maps"
	"os"
	"runtime"
	"strconv"
	"time"
)

// The wall-clock backstop of a CPU-time budget is there to stop a
// workload that sleeps: one that runs spends its budget, which decides.
// So the backstop counts only a thread's own sleep, and the time it ran or
// waited on a run queue is not that (a spinner the host leaves no CPU to
// is the host's to answer for, and the budget bounds what its own threads
// can make each other wait). Nor is a sleep in a write into the
// container's output pipes: a workload that writes its standard output or
// error faster than the grader reads them sleeps there until the reader
// (the runtime's shim, the daemon and this process, all on the host)
// catches up, and on a busy host the reader falls behind. Only writes into
// the container's own two pipes count: a pipe the workload made for
// itself is its own business. And only while both streams are under their
// caps: past a cap the grader reads and drops what comes (standard error)
// or stops the container (standard output), so a writer that goes on is
// the workload's own doing, and its wait at most the drain of one cap's
// worth of bytes.

// outputWrites maps, on the architectures whose numbers are listed, each
// system call that can write into a pipe to the index of its argument
// that names the file descriptor written. A call not listed (a 32-bit
// compatibility call, say) is never counted: the workload only loses the
// allowance.
var outputWrites = map[string]map[int64]int{
	"amd64": {1: 0, 20: 0, 40: 0, 275: 2, 278: 0, 328: 0}, // write writev sendfile splice vmsplice pwritev2
	"arm64": {64: 0, 66: 0, 71: 0, 76: 2, 75: 0, 287: 0},  // write writev sendfile splice vmsplice pwritev2
}[runtime.GOARCH]

// outputPipes returns the pipes a container's first process has as its
// standard output and error ("pipe:[INODE]", as /proc shows them); nil
// when there are none or they cannot be read.
func outputPipes(pid int) []string {
	var out []string
	for _, fd := range []string{"1", "2"} {
		link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd)
		if err == nil && bytes.HasPrefix([]byte(link), []byte("pipe:[")) {
			out = append(out, link)
		}
	}
	return out
}

// writingTo reports whether thread tid is asleep in a system call writing
// into one of pipes. /proc/TID/syscall names the call and its arguments
// while the thread is blocked in it and says "running" otherwise; reading
// it needs the right to trace the thread, and a thread that cannot be
// read is not counted.
func writingTo(tid int, pipes []string) bool {
	if len(pipes) == 0 || outputWrites == nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/syscall")
	if err != nil {
		return false
	}
	f := bytes.Fields(b)
	if len(f) < 7 {
		return false // "running", or blocked outside a system call
	}
	nr, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return false
	}
	arg, ok := outputWrites[nr]
	if !ok {
		return false
	}
	fd, err := strconv.ParseUint(string(bytes.TrimPrefix(f[1+arg], []byte("0x"))), 16, 32)
	if err != nil {
		return false
	}
	link, err := os.Readlink("/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.FormatUint(fd, 10))
	if err != nil {
		return false
	}
	for _, p := range pipes {
		if link == p {
			return true
		}
	}
	return false
}

// heldTime accumulates, per thread, the time that was not the thread's
// own sleep, reading by reading: the time it ran or waited for a CPU,
// which its schedstat gives exactly (a run-queue delay is the host's, or
// its own threads', which spend the budget as fast), and, while both
// streams are under their caps, the time since the reading before when
// the reading finds it asleep writing into the container's output pipes
// (less what it ran or waited in that time, already counted). Such a
// thread is counted that whole interval: the writer the host wakes to
// pass on a little more spends most of what is not its sleep running or
// on a run queue, and a busy host keeps it there longer; counting only
// the sleeps seen in the write would miss that time, and more of it the
// busier the host.
type heldTime struct {
	pipes []string
	// counting says whether the pipe waits still count (both streams
	// under their caps); nil counts always.
	counting func() bool
	last     time.Time
	// ran is each thread's running and runnable time at the reading
	// before.
	ran  map[int]time.Duration
	held map[int]time.Duration
}

// reset starts the count at now, from each thread's running time in ran.
func (w *heldTime) reset(ran map[int]time.Duration, now time.Time) {
	w.last, w.ran, w.held = now, maps.Clone(ran), nil
}

// sample takes a reading now: ran gives each live thread's running and
// runnable time so far (a thread missing from it is not counted for
// running; one new since the reading before began since then).
func (w *heldTime) sample(tids []int, ran map[int]time.Duration, now time.Time) {
	since := now.Sub(w.last)
	w.last = now
	if w.ran == nil {
		w.ran = map[int]time.Duration{}
	}
	if w.held == nil {
		w.held = map[int]time.Duration{}
	}
	waits := len(w.pipes) > 0 && (w.counting == nil || w.counting())
	for _, tid := range tids {
		r, ok := ran[tid]
		dr := r - w.ran[tid]
		if ok {
			w.ran[tid] = r
		} else {
			dr = 0
		}
		// The kernel adds a run-queue wait to the schedstat when the
		// wait ends, so a long one comes in at once: dr is counted
		// whole, never cut to the interval. A thread asleep in a write
		// is counted the rest of the interval besides.
		dr = max(dr, 0)
		if waits && since > 0 && writingTo(tid, w.pipes) {
			dr = max(dr, since)
		}
		w.held[tid] += dr
	}
}

// most is the longest time of one thread that was not its own sleep.
func (w *heldTime) most() time.Duration {
	var m time.Duration
	for _, d := range w.held {
		m = max(m, d)
	}
	return m
}
