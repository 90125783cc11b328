package capbuf

import "testing"

func TestBuffer(t *testing.T) {
	calls := 0
	b := &Buffer{Max: 5, OnOver: func() { calls++ }}
	for _, s := range []string{"abc", "def", "ghi"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	got, cut := b.Result()
	if string(got) != "abcde" || !cut || !b.Truncated() || calls != 1 {
		t.Errorf("kept %q, truncated %v, OnOver called %d times", got, cut, calls)
	}
	exact := &Buffer{Max: 3}
	_, _ = exact.Write([]byte("abc"))
	if got, cut := exact.Result(); string(got) != "abc" || cut {
		t.Errorf("at the cap: %q %v", got, cut)
	}
}
