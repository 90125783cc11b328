// Package capbuf holds the bounded buffer the backends capture a sandbox's
// output streams in.
package capbuf

import (
	"bytes"
	"sync"
)

// Buffer keeps the first Max bytes written to it and drops the rest, never
// failing a write, so the stream feeding it is always drained. OnOver, when
// set, is called once, when a write first passes Max. It is safe for
// concurrent use.
type Buffer struct {
	Max    int64
	OnOver func()

	mu        sync.Mutex
	buf       bytes.Buffer
	truncated bool
}

func (c *Buffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.Max - int64(c.buf.Len())
	if int64(len(p)) > room {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		if !c.truncated {
			c.truncated = true
			if c.OnOver != nil {
				c.OnOver()
			}
		}
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// Result returns a copy of what was kept and whether anything was dropped.
func (c *Buffer) Result() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes()), c.truncated
}

// Truncated reports whether a write has passed Max.
func (c *Buffer) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.truncated
}
