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

// TestBufferPieces writes across the pieces' edges, in writes of sizes
// that do not divide a piece, at caps below, at and above a piece and of
// several pieces: what is kept is the stream's head, byte for byte.
func TestBufferPieces(t *testing.T) {
	stream := make([]byte, 3*pieceSize+12345)
	for i := range stream {
		stream[i] = byte(i*7 + i/251)
	}
	for _, max := range []int64{1, pieceSize - 1, pieceSize, pieceSize + 1, 2*pieceSize + 3, int64(len(stream)), int64(len(stream)) + 1} {
		for _, chunk := range []int{1000, 4096, pieceSize + 17} {
			b := &Buffer{Max: max}
			for rest := stream; len(rest) > 0; {
				k := min(chunk, len(rest))
				if n, err := b.Write(rest[:k]); n != k || err != nil {
					t.Fatalf("max %d chunk %d: Write = %d, %v", max, chunk, n, err)
				}
				rest = rest[k:]
			}
			got, cut := b.Result()
			want := stream[:min(max, int64(len(stream)))]
			if string(got) != string(want) || cut != (max < int64(len(stream))) {
				t.Errorf("max %d chunk %d: kept %d bytes (want %d), equal %v, truncated %v", max, chunk, len(got), len(want), string(got) == string(want), cut)
			}
			if cap(got) != len(got) {
				t.Errorf("max %d chunk %d: result's room %d for %d bytes", max, chunk, cap(got), len(got))
			}
		}
	}
}
