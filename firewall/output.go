package firewall

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
)

// The canonical archive. Every header block is USTAR ("ustar\x0000"):
//
//	name      the path ("/"-terminated for directories), split into the
//	          prefix and name fields when longer than 100 bytes
//	mode      0000755 or 0000644
//	uid, gid  0000000
//	size      11 octal digits (0 for directories)
//	mtime     00000000000 (1970-01-01T00:00:00Z)
//	typeflag  '0' or '5'
//	linkname, uname, gname, devmajor/devminor values: empty or zero
//
// A path that does not fit the USTAR fields (not ASCII, or no split into a
// prefix of at most 155 bytes and a name of at most 100) is carried by a
// PAX extended header ('x', named "././@PaxHeader", mode 0644) holding the
// single record "path"; the USTAR name field then holds the first 100 bytes
// of the path with every non-ASCII byte replaced by '_'. Data is padded with
// zeros to 512 bytes; the archive ends with two zero blocks and nothing else.
const (
	modeDir  = 0o755
	modeExec = 0o755
	modeFile = 0o644

	ustarNameLen   = 100
	ustarPrefixLen = 155
	paxHeaderName  = "././@PaxHeader"
)

// output writes the canonical stream. Full buffers go to a goroutine that
// hashes them and writes them to w, so the archive digest is computed in
// parallel with the per-file digests.
type output struct {
	bufs [outBufs]*[bufSize]byte
	buf  []byte
	n    int64 // bytes emitted
	full chan []byte
	free chan []byte
	done chan struct{}

	aborted atomic.Bool
	mu      sync.Mutex
	err     error // first write error; guarded by mu

	h   hash.Hash
	blk [blockSize]byte
}

// outBufs is the number of output buffers: one being filled, the others
// queued for or being hashed and written.
const outBufs = 4

// newOutput starts the writer goroutine. w may be nil: the stream is then
// only hashed.
func newOutput(w io.Writer) *output {
	o := &output{
		full: make(chan []byte, outBufs-1),
		free: make(chan []byte, outBufs-1),
		done: make(chan struct{}),
		h:    sha256.New(),
	}
	for i := range o.bufs {
		o.bufs[i] = bufPool.Get().(*[bufSize]byte)
		if i == 0 {
			o.buf = o.bufs[i][:0]
		} else {
			o.free <- o.bufs[i][:0]
		}
	}
	go o.loop(w)
	return o
}

func (o *output) loop(w io.Writer) {
	defer close(o.done)
	for b := range o.full {
		if !o.aborted.Load() && o.writeErr() == nil {
			o.h.Write(b)
			if w != nil {
				if n, err := w.Write(b); err != nil || n != len(b) {
					if err == nil {
						err = io.ErrShortWrite
					}
					o.mu.Lock()
					o.err = fmt.Errorf("firewall: writing output: %w", err)
					o.mu.Unlock()
				}
			}
		}
		o.free <- b[:0]
	}
}

func (o *output) writeErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// write appends p to the stream.
func (o *output) write(p []byte) error {
	o.n += int64(len(p))
	for len(p) > 0 {
		c := copy(o.buf[len(o.buf):cap(o.buf)], p)
		o.buf = o.buf[:len(o.buf)+c]
		p = p[c:]
		if len(o.buf) == cap(o.buf) {
			if err := o.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *output) flush() error {
	if err := o.writeErr(); err != nil {
		return err
	}
	o.full <- o.buf
	o.buf = <-o.free
	return nil
}

// finish flushes the stream, waits for the writer and returns the digest.
func (o *output) finish() (string, error) {
	if len(o.buf) > 0 {
		if err := o.flush(); err != nil {
			o.abort()
			return "", err
		}
	}
	o.stop()
	if err := o.writeErr(); err != nil {
		return "", err
	}
	return hex.EncodeToString(o.h.Sum(nil)), nil
}

// stop ends the writer goroutine and recycles the buffers.
func (o *output) stop() {
	close(o.full)
	<-o.done
	for i, b := range o.bufs {
		bufPool.Put(b)
		o.bufs[i] = nil
	}
	o.buf = nil
}

// abort stops the writer: nothing more reaches w. It waits for a write in
// progress to return, so w is not used after Filter returns.
func (o *output) abort() {
	o.aborted.Store(true)
	o.stop()
}

// pad writes zeros up to the next block boundary.
func (o *output) pad() error {
	if r := o.n % blockSize; r != 0 {
		var zero [blockSize]byte
		return o.write(zero[:blockSize-r])
	}
	return nil
}

// end writes the end-of-archive marker.
func (o *output) end() error {
	var zero [2 * blockSize]byte
	return o.write(zero[:])
}

// header writes the header of a directory or regular file. name is the
// canonical path; directories get a trailing "/".
func (o *output) header(p string, dir bool, mode int64, size int64) error {
	name := p
	typ := byte('0')
	if dir {
		name += "/"
		typ = '5'
	}
	prefix, short, ok := splitUSTAR(name)
	if !ok {
		if err := o.paxPath(name); err != nil {
			return err
		}
		prefix, short = "", placeholder(name)
	}
	b := &o.blk
	clear(b[:])
	copy(b[0:100], short)
	octal(b[100:108], mode)
	octal(b[108:116], 0)
	octal(b[116:124], 0)
	octal(b[124:136], size)
	octal(b[136:148], 0)
	b[156] = typ
	copy(b[257:263], "ustar\x00")
	copy(b[263:265], "00")
	octal(b[329:337], 0)
	octal(b[337:345], 0)
	copy(b[345:500], prefix)
	setChecksum(b)
	return o.write(b[:])
}

// paxPath writes a PAX extended header carrying the path record.
func (o *output) paxPath(name string) error {
	rec := paxRecord("path", name)
	b := &o.blk
	clear(b[:])
	copy(b[0:100], paxHeaderName)
	octal(b[100:108], modeFile)
	octal(b[108:116], 0)
	octal(b[116:124], 0)
	octal(b[124:136], int64(len(rec)))
	octal(b[136:148], 0)
	b[156] = 'x'
	copy(b[257:263], "ustar\x00")
	copy(b[263:265], "00")
	octal(b[329:337], 0)
	octal(b[337:345], 0)
	setChecksum(b)
	if err := o.write(b[:]); err != nil {
		return err
	}
	if err := o.write([]byte(rec)); err != nil {
		return err
	}
	return o.pad()
}

// splitUSTAR reports how name fits the USTAR fields: whole in the name
// field, or split at a "/" into a prefix (at most 155 bytes) and a name (at
// most 100 bytes, not empty). The split uses the last "/" that leaves a
// prefix short enough. Only ASCII names fit.
func splitUSTAR(name string) (prefix, short string, ok bool) {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return "", "", false
		}
	}
	if len(name) <= ustarNameLen {
		return "", name, true
	}
	// A trailing "/" (directories) belongs to the name part.
	limit := min(len(name)-1, ustarPrefixLen)
	for i := limit; i > 0; i-- {
		if name[i] != '/' {
			continue
		}
		if rest := len(name) - i - 1; rest > 0 && rest <= ustarNameLen {
			return name[:i], name[i+1:], true
		}
		return "", "", false
	}
	return "", "", false
}

// placeholder is the USTAR name field of an entry whose path is in a PAX
// record: the first 100 bytes, non-ASCII bytes replaced by '_', so that a
// reader ignoring PAX still sees a local, harmless name.
func placeholder(name string) string {
	b := []byte(name[:min(len(name), ustarNameLen)])
	for i, c := range b {
		if c >= 0x80 {
			b[i] = '_'
		}
	}
	return string(b)
}

// paxRecord formats "<len> key=value\n", where len counts the whole record
// including its own digits.
func paxRecord(k, v string) string {
	body := len(k) + len(v) + 3 // " ", "=", "\n"
	n := body + len(strconv.Itoa(body))
	if len(strconv.Itoa(n)) != len(strconv.Itoa(body)) {
		n = body + len(strconv.Itoa(n))
	}
	return strconv.Itoa(n) + " " + k + "=" + v + "\n"
}

// octal writes v as zero-padded octal digits followed by a NUL, filling the
// field.
func octal(field []byte, v int64) {
	i := len(field) - 1
	field[i] = 0
	for i--; i >= 0; i-- {
		field[i] = byte('0' + v&7)
		v >>= 3
	}
}

// setChecksum computes the header checksum (unsigned byte sum with the
// checksum field read as spaces) and stores it as six octal digits, a NUL
// and a space.
func setChecksum(b *[blockSize]byte) {
	copy(b[148:156], "        ")
	var sum int64
	for _, c := range b {
		sum += int64(c)
	}
	octal(b[148:155], sum)
	b[155] = ' '
}
