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
// sleeps there is counted while counting is on, and not after; two writers
// asleep there at once count once, and a wait split over two count whole.
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
	wDup, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(w.Fd())), os.O_WRONLY, 0)
	if err != nil {
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
	pw := pipeWaits{pipes: []string{pipe}, counting: func() bool { return on }, last: time.Now()}
	time.Sleep(100 * time.Millisecond)
	pw.sample([]int{pid}, time.Now())
	if got := pw.total(); got < 100*time.Millisecond {
		t.Errorf("counted %v of a wait of at least 100 ms", got)
	}
	counted := pw.total()
	on = false // a stream past its cap
	time.Sleep(50 * time.Millisecond)
	pw.sample([]int{pid}, time.Now())
	if pw.total() != counted {
		t.Errorf("past the cap the wait still counts: %v, was %v", pw.total(), counted)
	}
	mine := pipeWaits{pipes: []string{elsewhere}, last: time.Now()}
	time.Sleep(20 * time.Millisecond)
	mine.sample([]int{pid}, time.Now())
	if mine.total() != 0 {
		t.Errorf("a wait on another pipe counted %v", mine.total())
	}

	// A second writer into the same pipe, as a second thread of the
	// workload would be: the interval still counts once.
	second := exec.Command("head", "-c", "1000000", "/dev/zero")
	second.Stdout = wDup
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	wDup.Close()
	defer func() {
		if !done {
			_ = second.Process.Kill()
			_ = second.Wait()
		}
	}()
	for !writingTo(second.Process.Pid, []string{pipe}) {
		if time.Now().After(deadline) {
			t.Fatal("the second writer was never seen asleep in its write")
		}
		time.Sleep(10 * time.Millisecond)
	}
	both := pipeWaits{pipes: []string{pipe}, last: time.Now()}
	time.Sleep(50 * time.Millisecond)
	now := time.Now()
	elapsed := now.Sub(both.last)
	both.sample([]int{pid, second.Process.Pid}, now)
	if both.total() != elapsed {
		t.Errorf("two writers asleep for %v counted %v, want the interval once", elapsed, both.total())
	}
	// One writer's waits split over threads (a goroutine moved from one
	// to the other) add up: each interval counts for whichever is there.
	split := pipeWaits{pipes: []string{pipe}, last: time.Now()}
	time.Sleep(20 * time.Millisecond)
	split.sample([]int{pid}, time.Now())
	time.Sleep(20 * time.Millisecond)
	split.sample([]int{second.Process.Pid}, time.Now())
	if got := split.total(); got < 40*time.Millisecond {
		t.Errorf("a wait split over two threads counted %v of 40 ms", got)
	}

	if n, err := io.Copy(io.Discard, r); err != nil || n != 5000000 {
		t.Fatalf("drained %d bytes, %v", n, err)
	}
	done = true
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestInputPipeWait: a real process asleep reading an empty pipe is seen
// reading that pipe and not another, and the time counts while the writer
// of the pipe is still feeding it, never after: a reader that waits on a
// pipe the grader has finished with is waiting on its own.
func TestInputPipeWait(t *testing.T) {
	if inputReads == nil {
		t.Skip("no read calls listed for this architecture")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	other, otherW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	defer otherW.Close()
	cmd := exec.Command("head", "-c", "1")
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	pid := cmd.Process.Pid
	in := inputPipe(pid)
	if len(in) != 1 {
		t.Fatalf("inputPipe = %v, want the one pipe", in)
	}
	elsewhere, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(other.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !readingFrom(pid, in) {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
			t.Fatalf("the reader was never seen asleep in its read (syscall: %q)", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if readingFrom(pid, []string{elsewhere}) || writingTo(pid, in) {
		t.Error("a read of one pipe was counted as a read of another, or as a write")
	}
	feeding := true
	pw := pipeWaits{in: in, feeding: func() bool { return feeding }, last: time.Now()}
	time.Sleep(100 * time.Millisecond)
	pw.sample([]int{pid}, time.Now())
	if got := pw.total(); got < 100*time.Millisecond {
		t.Errorf("counted %v of a wait of at least 100 ms while the writer fed the pipe", got)
	}
	counted := pw.total()
	feeding = false
	time.Sleep(50 * time.Millisecond)
	pw.sample([]int{pid}, time.Now())
	if pw.total() != counted {
		t.Errorf("after the writer was done the wait still counts: %v, was %v", pw.total(), counted)
	}
	none := pipeWaits{in: in, last: time.Now()}
	time.Sleep(20 * time.Millisecond)
	none.sample([]int{pid}, time.Now())
	if none.total() != 0 {
		t.Errorf("an input wait without a feeder counted %v", none.total())
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}
