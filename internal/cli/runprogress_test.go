package cli

import (
	"bytes"
	"testing"
	"time"

	sgbatch "github.com/strictgrade/strictgrade/batch"
)

// TestRunProgressPlain: off a terminal, progress is plain lines: the
// start, then at most one every plainEvery, and always the last.
func TestRunProgressPlain(t *testing.T) {
	var buf bytes.Buffer
	p := newRunProgress(&buf)
	p.update(sgbatch.Progress{Total: 3, Resumed: 2})
	p.update(sgbatch.Progress{Done: 1, Total: 3, ETA: 20 * time.Second})
	p.last = time.Now().Add(-plainEvery)
	p.update(sgbatch.Progress{Done: 2, Total: 3, Errors: 1, ETA: 80 * time.Second})
	p.update(sgbatch.Progress{Done: 3, Total: 3, Errors: 1})
	p.finish()
	want := "run: 3 items to grade, 2 kept from a previous run\n" +
		"run: 2/3 done, 1 ERROR, eta 1m20s\n" +
		"run: 3/3 done, 1 ERROR, eta 0s\n"
	if got := buf.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
