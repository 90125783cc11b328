package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// capBuffer keeps the first max bytes written to it and counts the rest.
// Write never reports a short write, so a copier keeps draining.
type capBuffer struct {
	buf       bytes.Buffer
	max       int64
	total     int64
	truncated bool
	onOver    func() // called once when the cap is first exceeded
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	room := c.max - int64(c.buf.Len())
	if int64(len(p)) > room {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		if !c.truncated {
			c.truncated = true
			if c.onOver != nil {
				c.onOver()
			}
		}
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// demux splits Docker's multiplexed attach stream into stdout and stderr.
// Unlike stdcopy it never allocates by a frame's declared size: payloads are
// streamed through a fixed buffer, so memory stays bounded whatever the
// daemon (or something pretending to be it) sends. Stream types other than
// stdout and stderr are a protocol violation.
func demux(r io.Reader, stdout, stderr io.Writer, frames *atomic.Int64) error {
	var hdr [8]byte
	buf := make([]byte, 32<<10)
	var payload io.LimitedReader
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: truncated frame header", ErrProtocol)
			}
			return err
		}
		var dst io.Writer
		switch hdr[0] {
		case 1:
			dst = stdout
		case 2:
			dst = stderr
		default:
			return fmt.Errorf("%w: stream type %d", ErrProtocol, hdr[0])
		}
		if hdr[1] != 0 || hdr[2] != 0 || hdr[3] != 0 {
			return fmt.Errorf("%w: reserved header bytes set", ErrProtocol)
		}
		if frames != nil {
			frames.Add(1)
		}
		size := int64(binary.BigEndian.Uint32(hdr[4:]))
		payload = io.LimitedReader{R: r, N: size}
		n, err := io.CopyBuffer(dst, &payload, buf)
		if err != nil {
			return err
		}
		if n != size {
			return fmt.Errorf("%w: truncated frame payload", ErrProtocol)
		}
	}
}
