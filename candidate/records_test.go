package candidate

import (
	"testing"
	"time"
)

// TestSplitRecords: each call's line may carry its own time; lines that
// do not parse are ignored and the first line for an index wins.
func TestSplitRecords(t *testing.T) {
	out := []byte("0\t12\t{\"ok\":true,\"value\":1}\n" +
		"1\t{\"ok\":true,\"value\":2}\n" +
		"0\t99\t{\"ok\":true,\"value\":9}\n" +
		"2\t007\t{\"ok\":true,\"value\":3}\n" +
		"3\t-1\t{}\n" +
		"x\t1\t{}\n" +
		"9\t1\t{}\n")
	got := splitRecords(out, 4)
	for _, tt := range []struct {
		i     int
		value string
		took  time.Duration
		timed bool
	}{
		{0, `{"ok":true,"value":1}`, 12 * time.Millisecond, true},
		{1, `{"ok":true,"value":2}`, 0, false},
		{2, "007\t{\"ok\":true,\"value\":3}", 0, false}, // not a canonical number: the judge refuses the record
		{3, "-1\t{}", 0, false},
	} {
		r, ok := got[tt.i]
		if !ok || string(r.value) != tt.value || r.took != tt.took || r.timed != tt.timed {
			t.Errorf("case %d: %+v (found %v), want %q %v %v", tt.i, r, ok, tt.value, tt.took, tt.timed)
		}
	}
	if len(got) != 4 {
		t.Errorf("%d records, want 4", len(got))
	}
}
