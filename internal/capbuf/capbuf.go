// Package capbuf holds the bounded buffer the backends capture a sandbox's
// output streams in.
package capbuf

import "sync"

// pieceSize is the size of the pieces a Buffer keeps its bytes in. A
// buffer that doubled as it grew would copy a large output several times
// over and hold up to twice its size in spare room; pieces are written
// once and joined once, by Result.
const pieceSize = 256 << 10

// Buffer keeps the first Max bytes written to it and drops the rest, never
// failing a write, so the stream feeding it is always drained. OnOver, when
// set, is called once, when a write first passes Max. It is safe for
// concurrent use.
type Buffer struct {
	Max    int64
	OnOver func()

	mu        sync.Mutex
	pieces    [][]byte // every piece but the last is full
	n         int64    // bytes kept
	truncated bool
}

func (c *Buffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	written := len(p)
	if room := c.Max - c.n; int64(len(p)) > room {
		p = p[:max(room, 0)]
		if !c.truncated {
			c.truncated = true
			if c.OnOver != nil {
				c.OnOver()
			}
		}
	}
	for len(p) > 0 {
		last := len(c.pieces) - 1
		if last < 0 || len(c.pieces[last]) == cap(c.pieces[last]) {
			// A piece no larger than what the buffer may still keep, so
			// that a small cap costs a small buffer.
			size := min(int64(pieceSize), c.Max-c.n)
			c.pieces = append(c.pieces, make([]byte, 0, size))
			last++
		}
		piece := c.pieces[last]
		k := min(len(p), cap(piece)-len(piece))
		c.pieces[last] = append(piece, p[:k]...)
		c.n += int64(k)
		p = p[k:]
	}
	return written, nil
}

// Result returns a copy of what was kept and whether anything was dropped.
func (c *Buffer) Result() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return nil, c.truncated
	}
	out := make([]byte, 0, c.n)
	for _, piece := range c.pieces {
		out = append(out, piece...)
	}
	return out, c.truncated
}

// Truncated reports whether a write has passed Max.
func (c *Buffer) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.truncated
}
