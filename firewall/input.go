package firewall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

const blockSize = 512

// bufSize is the size of the I/O buffers: one read from the source, one
// write to the destination.
const bufSize = 256 << 10

// bufPool recycles I/O buffers between calls, so that filtering many small
// archives does not allocate a megabyte each time.
var bufPool = sync.Pool{New: func() any { return new([bufSize]byte) }}

// input reads the source in chunks, counts every byte, enforces
// MaxInputBytes and the context. When the context can be cancelled, reads
// run in a goroutine, one read ahead of the parser, while fill waits for
// them or for the context: a source that stalls cannot hold Filter past the
// deadline. close waits for the read running ahead, so the source is not
// read after Filter returns, except by a read that was blocked when the
// context ended.
type input struct {
	ctx context.Context
	r   io.Reader
	max int64

	received int64  // bytes delivered by r
	off      int64  // bytes consumed by the parser
	cur      []byte // delivered, not yet consumed
	eof      bool   // r reported io.EOF; cur may still hold bytes

	blk [blockSize]byte // the last block returned by readBlock

	bufs [2]*[bufSize]byte

	// Asynchronous mode.
	async   bool
	which   int // index of the buffer a pending read fills
	pending bool
	reqs    chan []byte
	resps   chan readResult
	done    chan struct{}
}

type readResult struct {
	b   []byte
	err error
}

func newInput(ctx context.Context, r io.Reader, max int64) *input {
	in := &input{ctx: ctx, r: r, max: max}
	in.bufs[0] = bufPool.Get().(*[bufSize]byte)
	if ctx.Done() == nil {
		return in
	}
	in.async = true
	in.bufs[1] = bufPool.Get().(*[bufSize]byte)
	in.reqs = make(chan []byte)
	in.resps = make(chan readResult)
	in.done = make(chan struct{})
	go in.loop()
	in.request()
	return in
}

// loop serves read requests. It exits when close is called; a read in
// progress at that moment finishes first (it cannot be interrupted), and its
// result is discarded.
func (in *input) loop() {
	for {
		var buf []byte
		select {
		case buf = <-in.reqs:
		case <-in.done:
			return
		}
		n, err := readSome(in.r, buf)
		select {
		case in.resps <- readResult{buf[:n], err}:
		case <-in.done:
			return
		}
	}
}

// readSome reads at least one byte unless r reports an error, tolerating a
// bounded number of empty reads.
func readSome(r io.Reader, buf []byte) (int, error) {
	for range 100 {
		n, err := r.Read(buf)
		if n > 0 || err != nil {
			if n > 0 && errors.Is(err, io.EOF) {
				// Deliver the bytes now and the EOF on the next read.
				return n, nil
			}
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

// request asks the goroutine to fill the next buffer, reading at most one
// byte more than MaxInputBytes allows, so an overflow is seen without
// reading further.
func (in *input) request() {
	buf := in.bufs[in.which][:]
	if room := in.max - in.received + 1; room < int64(len(buf)) {
		buf = buf[:room]
	}
	in.reqs <- buf
	in.pending = true
}

// close waits for the read running ahead, if any, unless the context is
// done, then releases the reading goroutine and the buffers. A buffer that
// a read in progress may still fill is left to the garbage collector.
func (in *input) close() {
	if in.pending {
		select {
		case <-in.resps:
			in.pending = false
		case <-in.ctx.Done():
		}
	}
	if in.async {
		close(in.done)
	}
	if in.pending {
		return
	}
	for i, b := range in.bufs {
		if b != nil {
			bufPool.Put(b)
			in.bufs[i] = nil
		}
	}
	in.cur = nil
}

// fill makes more bytes available in cur. It returns io.EOF at the end of
// the source, a *RejectError for the input limit or the deadline, and any
// other error as an I/O error.
func (in *input) fill() error {
	if in.eof {
		return io.EOF
	}
	var res readResult
	if in.async {
		select {
		case res = <-in.resps:
			in.pending = false
		case <-in.ctx.Done():
			return in.ctxErr()
		}
	} else {
		if err := in.ctx.Err(); err != nil {
			return in.ctxErr()
		}
		buf := in.bufs[0][:]
		if room := in.max - in.received + 1; room < int64(len(buf)) {
			buf = buf[:room]
		}
		n, err := readSome(in.r, buf)
		res = readResult{buf[:n], err}
	}
	in.received += int64(len(res.b))
	if in.received > in.max {
		return &RejectError{Offset: in.max, Err: ErrLimit,
			Reason: fmt.Sprintf("input is larger than the limit of %d bytes", in.max)}
	}
	switch {
	case res.err == nil:
	case errors.Is(res.err, io.EOF):
		in.eof = true
	default:
		return fmt.Errorf("firewall: reading input: %w", res.err)
	}
	in.cur = res.b
	if in.async && !in.eof {
		in.which ^= 1
		in.request()
	}
	if len(in.cur) == 0 {
		return io.EOF
	}
	return nil
}

func (in *input) ctxErr() error {
	if errors.Is(in.ctx.Err(), context.DeadlineExceeded) {
		return &RejectError{Offset: in.off, Err: ErrLimit,
			Reason: fmt.Sprintf("time budget exceeded after %d bytes", in.off)}
	}
	return fmt.Errorf("firewall: %w", in.ctx.Err())
}

// readBlock reads the next 512 bytes into in.blk. It returns io.EOF when the
// source ends exactly here, and io.ErrUnexpectedEOF, with the count, when it
// ends inside the block.
func (in *input) readBlock() (int, error) {
	if len(in.cur) >= blockSize {
		copy(in.blk[:], in.cur[:blockSize])
		in.cur = in.cur[blockSize:]
		in.off += blockSize
		return blockSize, nil
	}
	n := 0
	for n < blockSize {
		if len(in.cur) == 0 {
			if err := in.fill(); err != nil {
				if errors.Is(err, io.EOF) {
					if n == 0 {
						return 0, io.EOF
					}
					return n, io.ErrUnexpectedEOF
				}
				return n, err
			}
		}
		c := copy(in.blk[n:], in.cur)
		in.cur = in.cur[c:]
		in.off += int64(c)
		n += c
	}
	return n, nil
}

// next returns up to max bytes of the stream, consuming them. The slice is
// valid until the next call on in. At the end of the source it returns
// io.EOF.
func (in *input) next(max int64) ([]byte, error) {
	if len(in.cur) == 0 {
		if err := in.fill(); err != nil {
			return nil, err
		}
	}
	n := len(in.cur)
	if int64(n) > max {
		n = int(max)
	}
	b := in.cur[:n]
	in.cur = in.cur[n:]
	in.off += int64(n)
	return b, nil
}
