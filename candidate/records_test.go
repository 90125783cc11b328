package candidate

import (
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/sandbox"
)

// TestSplitRecords: each call's line may carry its wall and CPU times, or
// a marker of the limit that stopped it; lines that do not parse are
// ignored and the first line for an index wins.
func TestSplitRecords(t *testing.T) {
	out := []byte("0\t12\t7\t{\"ok\":true,\"value\":1}\n" +
		"1\t{\"ok\":true,\"value\":2}\n" +
		"0\t99\t1\t{\"ok\":true,\"value\":9}\n" +
		"2\t007\t1\t{\"ok\":true,\"value\":3}\n" +
		"3\t-1\t{}\n" +
		"4\t2000\t1999\t!timeout-cpu\n" +
		"5\t10000\t3\t!timeout-wall\n" +
		"6\t!timeout-cpu\n" +
		"x\t1\t1\t{}\n" +
		"9\t1\t1\t{}\n")
	got := splitRecords(out, 7)
	for _, tt := range []struct {
		i         int
		value     string
		took, cpu time.Duration
		timed     bool
		limit     sandbox.Limit
	}{
		{0, `{"ok":true,"value":1}`, 12 * time.Millisecond, 7 * time.Millisecond, true, ""},
		{1, `{"ok":true,"value":2}`, 0, 0, false, ""},
		{2, "007\t1\t{\"ok\":true,\"value\":3}", 0, 0, false, ""}, // not a canonical number: the judge refuses the record
		{3, "-1\t{}", 0, 0, false, ""},
		{4, "", 2 * time.Second, 1999 * time.Millisecond, true, sandbox.LimitCPU},
		{5, "", 10 * time.Second, 3 * time.Millisecond, true, sandbox.LimitWall},
		{6, "!timeout-cpu", 0, 0, false, ""}, // a marker without times is a record the judge refuses
	} {
		r, ok := got[tt.i]
		if !ok || string(r.value) != tt.value || r.took != tt.took || r.cpu != tt.cpu || r.timed != tt.timed || r.limit != tt.limit {
			t.Errorf("case %d: %+v (found %v), want %q %v %v %v %q", tt.i, r, ok, tt.value, tt.took, tt.cpu, tt.timed, tt.limit)
		}
	}
	if len(got) != 7 {
		t.Errorf("%d records, want 7", len(got))
	}
}
