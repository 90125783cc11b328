//go:build linux

package engine

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestOutputPipeWait: a real process asleep writing into a pipe nobody
// reads is seen writing into that pipe, and not into another; the time it
// sleeps there is counted while counting is on, and not after.
func TestOutputPipeWait(t *testing.T) {
	if outputWrites == nil {
		t.Skip("no write calls listed for this architecture")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	other, otherW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	defer otherW.Close()
	cmd := exec.Command("head", "-c", "4000000", "/dev/zero")
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := false
	defer func() {
		if !done {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	link := func(f *os.File) string {
		l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	pipe, elsewhere := link(r), link(other)
	pid := cmd.Process.Pid
	if got := outputPipes(pid); len(got) == 0 || got[0] != pipe {
		t.Fatalf("outputPipes = %v, want %s first", got, pipe)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !writingTo(pid, []string{pipe}) {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
			t.Fatalf("the writer was never seen asleep in its write (syscall: %q)", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if writingTo(pid, []string{elsewhere}) {
		t.Error("a write into one pipe was counted as a write into another")
	}

	on := true
	pw := heldTime{pipes: []string{pipe}, counting: func() bool { return on }}
	pw.reset(nil, time.Now())
	time.Sleep(100 * time.Millisecond)
	pw.sample([]int{pid}, nil, time.Now())
	if got := pw.most(); got < 100*time.Millisecond {
		t.Errorf("counted %v of a wait of at least 100 ms", got)
	}
	counted := pw.most()
	on = false // a stream past its cap
	time.Sleep(50 * time.Millisecond)
	pw.sample([]int{pid}, nil, time.Now())
	if pw.most() != counted {
		t.Errorf("past the cap the wait still counts: %v, was %v", pw.most(), counted)
	}
	mine := heldTime{pipes: []string{elsewhere}}
	mine.reset(nil, time.Now())
	time.Sleep(20 * time.Millisecond)
	mine.sample([]int{pid}, nil, time.Now())
	if mine.most() != 0 {
		t.Errorf("a wait on another pipe counted %v", mine.most())
	}

	if n, err := io.Copy(io.Discard, r); err != nil || n != 4000000 {
		t.Fatalf("drained %d bytes, %v", n, err)
	}
	done = true
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestHeldTimeRunning: the time a thread runs or waits for a CPU is not
// its own sleep, and is counted as its schedstat gives it, whatever the
// streams: a busy loop is on a CPU or on a run queue all the time, a
// sleeper almost never.
func TestHeldTimeRunning(t *testing.T) {
	start := func(script string) int {
		cmd := exec.Command("/bin/sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		return cmd.Process.Pid
	}
	spinner, sleeper := start("while :; do :; done"), start("exec sleep 60")
	ran := func() map[int]time.Duration {
		out := map[int]time.Duration{}
		for _, pid := range []int{spinner, sleeper} {
			onCPU, delay, ok := schedStat(pid)
			if !ok {
				t.Skip("no schedstat on this kernel")
			}
			out[pid] = onCPU + delay
		}
		return out
	}
	// Counting off, as past a cap: running time counts all the same.
	w := heldTime{counting: func() bool { return false }}
	began := time.Now()
	w.reset(ran(), began)
	time.Sleep(200 * time.Millisecond)
	now := time.Now()
	w.sample([]int{spinner, sleeper}, ran(), now)
	elapsed := now.Sub(began)
	if got := w.held[spinner]; got < elapsed/2 || got > elapsed*3/2 {
		t.Errorf("a busy loop counted %v of %v", got, elapsed)
	}
	if got := w.held[sleeper]; got > elapsed/4 {
		t.Errorf("a sleeper counted %v of %v as not its own sleep", got, elapsed)
	}
	if w.most() != w.held[spinner] {
		t.Errorf("most %v, want the busy loop's %v", w.most(), w.held[spinner])
	}
}
