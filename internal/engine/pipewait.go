package engine

import (
	"bytes"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"
)

// A workload that writes its standard output or error faster than the
// grader reads them sleeps in a write on the container's pipe until the
// reader (the runtime's shim, the daemon and this process, all on the
// host) catches up. That sleep is the host's, not the workload's: on a
// busy host the reader falls behind and a workload that would have ended
// in time on a quiet one meets its wall-clock backstop while it waits. So
// the meter counts the time it finds a thread of the container asleep in
// such a write, and the backstop does not count it as the workload's own
// (see drive).
//
// The interval between two readings is counted once, to the container,
// when any of its threads is found in such a write, never per thread: a
// runtime that moves its goroutines between threads (Go's does) splits one
// writer's waits over several threads, and the longest wait of one thread
// took only a part of them (a CI run at 92% busy counted 4 s of a writer's
// 7 s of waiting, split over two threads, and the writer met its backstop
// before its output reached the cap); and many threads asleep in writes at
// once are still one wait for the one reader.
//
// Only writes into the container's own two pipes count: a pipe the
// workload made for itself is its own business. And only while both
// streams are under their caps: past a cap the grader reads and drops what
// comes (standard error) or stops the container (standard output), so a
// writer that goes on is the workload's own doing, and its wait at most
// the drain of one cap's worth of bytes.

// The same holds for the container's standard input while the grader is
// still writing it: a workload (or sginit, reading its trees first)
// asleep reading an empty stdin pipe waits for the shim, the daemon and
// this process to pass on the next bytes. Once the grader has written all
// of it and closed its end, a read returns at once, so a workload cannot
// make that wait its own allowance: it counts only while the grader is
// still feeding (pipeWaits.feeding).

// pipeCall maps, on the architectures whose numbers are listed, each
// system call that moves bytes through a pipe to the index of its argument
// that names the file descriptor. A call not listed (a 32-bit
// compatibility call, say) is never counted: the workload only loses the
// allowance.
type pipeCall map[int64]int

var (
	outputWrites = map[string]pipeCall{
		"amd64": {1: 0, 20: 0, 40: 0, 275: 2, 278: 0, 328: 0}, // write writev sendfile splice vmsplice pwritev2
		"arm64": {64: 0, 66: 0, 71: 0, 76: 2, 75: 0, 287: 0},  // write writev sendfile splice vmsplice pwritev2
	}[runtime.GOARCH]
	inputReads = map[string]pipeCall{
		"amd64": {0: 0, 19: 0, 275: 0, 327: 0}, // read readv splice preadv2
		"arm64": {63: 0, 65: 0, 76: 0, 286: 0}, // read readv splice preadv2
	}[runtime.GOARCH]
)

// outputPipes returns the pipes a container's first process has as its
// standard output and error ("pipe:[INODE]", as /proc shows them); nil
// when there are none or they cannot be read.
func outputPipes(pid int) []string { return pipesOf(pid, "1", "2") }

// inputPipe returns the pipe a container's first process has as its
// standard input, or nil.
func inputPipe(pid int) []string { return pipesOf(pid, "0") }

func pipesOf(pid int, fds ...string) []string {
	var out []string
	for _, fd := range fds {
		link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd)
		if err == nil && bytes.HasPrefix([]byte(link), []byte("pipe:[")) {
			out = append(out, link)
		}
	}
	return out
}

// writingTo reports whether thread tid is asleep in a system call writing
// into one of pipes; readingFrom, reading from one of them.
func writingTo(tid int, pipes []string) bool { return blockedOn(tid, outputWrites, pipes) }

func readingFrom(tid int, pipes []string) bool { return blockedOn(tid, inputReads, pipes) }

// blockedOn reports whether thread tid is asleep in one of calls on one of
// pipes. /proc/TID/syscall names the call and its arguments while the
// thread is blocked in it and says "running" otherwise; reading it needs
// the right to trace the thread, and a thread that cannot be read is not
// counted.
func blockedOn(tid int, calls pipeCall, pipes []string) bool {
	if len(pipes) == 0 || calls == nil {
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
	arg, ok := calls[nr]
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
	return slices.Contains(pipes, link)
}

// pipeWaits accumulates the time the container was found waiting for the
// host, reading by reading: an interval counts whole when the reading at
// its end finds any thread asleep writing into the container's output
// pipes, or reading its input pipe while the grader still feeds it, and
// once however many are.
type pipeWaits struct {
	pipes []string
	// counting says whether the output waits still count (both streams
	// under their caps); nil counts always.
	counting func() bool
	// in is the container's input pipe; feeding says whether the grader
	// is still writing it (nil: it is not).
	in      []string
	feeding func() bool
	last    time.Time
	waited  time.Duration
}

// sample looks at the threads tids now.
func (w *pipeWaits) sample(tids []int, now time.Time) {
	since := now.Sub(w.last)
	w.last = now
	if since <= 0 {
		return
	}
	out := len(w.pipes) > 0 && (w.counting == nil || w.counting())
	in := len(w.in) > 0 && w.feeding != nil && w.feeding()
	if !out && !in {
		return
	}
	for _, tid := range tids {
		if out && writingTo(tid, w.pipes) || in && readingFrom(tid, w.in) {
			w.waited += since
			return
		}
	}
}

// total is the time counted so far.
func (w *pipeWaits) total() time.Duration { return w.waited }
