package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

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
