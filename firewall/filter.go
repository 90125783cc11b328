package firewall

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"strings"
)

// maxTrailingPadding bounds the zero bytes allowed after the two
// end-of-archive blocks (tar record padding; a 64 KiB record is the largest
// common blocking factor).
const maxTrailingPadding = 64 << 10

// Filter reads a tar stream from r, checks it against p and writes the
// canonical tar stream (see the package documentation) to w. It returns the
// manifest of the canonical archive.
//
// A rejected archive yields a *RejectError wrapping one of the sentinel
// errors. Other errors mean the archive could not be checked: an invalid
// policy, a read error from r, a write error on w, or the cancellation of
// ctx. A deadline on ctx is the time budget: exceeding it rejects the
// archive with ErrLimit.
//
// Filter streams: it writes to w while it reads, so on any error the bytes
// already written to w are unusable and the caller must discard them
// (spool w to a temporary file and use it only when Filter returns nil).
// Filter does not use w after it returns, nor r, with one exception: when
// ctx can be cancelled, r is read by a helper goroutine (one read ahead of
// the parser), and if ctx ends while a Read is blocked, Filter returns at
// once and that Read's result is discarded whenever it returns; a caller
// that abandons a stalled source should close it.
func Filter(ctx context.Context, r io.Reader, w io.Writer, p Policy) (*Manifest, error) {
	if w == nil {
		return nil, errors.New("firewall: Filter: nil writer")
	}
	return run(ctx, r, w, nil, p)
}

// run is Filter with an optional extractor that materialises the accepted
// entries as they are emitted.
func run(ctx context.Context, r io.Reader, w io.Writer, ex *extractor, p Policy) (*Manifest, error) {
	l, err := p.resolve()
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("firewall: nil reader")
	}
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, &RejectError{Err: ErrLimit, Reason: "time budget exceeded before the first byte"}
		}
		return nil, fmt.Errorf("firewall: %w", err)
	}
	f := &filter{
		l:        l,
		in:       newInput(ctx, r, l.maxInputBytes),
		out:      newOutput(w),
		ex:       ex,
		index:    make(map[string]node),
		spell:    make(map[string]string),
		fileHash: sha256.New(),
	}
	defer f.in.close()
	if err := f.loop(); err != nil {
		f.out.abort()
		return nil, err
	}
	if err := f.out.end(); err != nil {
		f.out.abort()
		return nil, err
	}
	digest, err := f.out.finish()
	if err != nil {
		return nil, err
	}
	m := &f.m
	m.Files = f.files.all()
	m.Dirs = f.dirs.all()
	m.ArchiveSHA256 = digest
	m.ArchiveBytes = f.out.n
	m.InputBytes = f.in.off
	m.Entries = len(m.Files) + len(m.Dirs)
	for _, file := range m.Files {
		m.TotalBytes += file.Size
	}
	if m.Files == nil {
		m.Files = []File{}
	}
	if m.Dirs == nil {
		m.Dirs = []string{}
	}
	if m.Dropped == nil {
		m.Dropped = []Drop{}
	}
	if m.Normalised == nil {
		m.Normalised = []Note{}
	}
	return m, nil
}

// node is what the filter remembers about one distinct path: an entry, or
// a directory implied by one. Nodes are the values of filter.index, keyed by
// the path's collision key; the path itself equals the key in the common
// case and is kept in filter.spell otherwise.
type node struct {
	flags     uint8
	deny      int16 // 1 + index of the deny pattern, or 0
	denyDepth int16 // components of the path where the pattern matched
}

const (
	fDir      = 1 << iota // a directory
	fExplicit             // declared by an entry of its own
	fEmitted              // written to the canonical archive
)

// ancestor locates an ancestor of the current entry: p[:np], key[:nk].
type ancestor struct{ np, nk int }

// chunked is an append-only list kept in fixed-size chunks: growing it
// never copies and leaves no garbage; all returns one slice of exact size.
type chunked[T any] struct {
	chunks [][]T
	n      int
}

const chunkLen = 1024

func (c *chunked[T]) add(v T) {
	if len(c.chunks) == 0 || len(c.chunks[len(c.chunks)-1]) == chunkLen {
		c.chunks = append(c.chunks, make([]T, 0, chunkLen))
	}
	last := &c.chunks[len(c.chunks)-1]
	*last = append(*last, v)
	c.n++
}

func (c *chunked[T]) all() []T {
	out := make([]T, 0, c.n)
	for i, ch := range c.chunks {
		out = append(out, ch...)
		c.chunks[i] = nil
	}
	c.chunks = nil
	return out
}

type filter struct {
	l   *limits
	in  *input
	out *output
	ex  *extractor
	m   Manifest

	files chunked[File]
	dirs  chunked[string]

	fold     folder
	index    map[string]node   // collision key -> node
	spell    map[string]string // collision key -> path, where they differ
	nodes    int
	rootSeen bool
	total    int64 // declared bytes of all files, dropped ones included

	// The parent directory of the previous entry, when it is emitted and
	// not denied: siblings skip the walk over their ancestors.
	cacheDir string

	ext      ext // extended header pending for the next entry
	extBuf   []byte
	fileHash hash.Hash
	sum      [sha256.Size]byte

	anc     []ancestor // scratch: ancestors of the current entry to emit
	comps   []string   // scratch: components for deny matching
	scratch []bool     // scratch: deny matching
}

func (f *filter) loop() error {
	for {
		off := f.in.off
		n, err := f.in.readBlock()
		if err != nil {
			return f.blockErr(off, n, err)
		}
		if isZeroBlock(&f.in.blk) {
			return f.trailer(off)
		}
		h, rej := parseHeader(&f.in.blk, off)
		if rej != nil {
			return rej
		}
		if h.typ == 'x' || h.typ == 'L' {
			if err := f.extended(h); err != nil {
				return err
			}
			continue
		}
		if err := f.entry(h); err != nil {
			return err
		}
	}
}

// blockErr explains why no complete header block could be read at off.
func (f *filter) blockErr(off int64, n int, err error) error {
	switch {
	case errors.Is(err, io.EOF) && off == 0:
		return &RejectError{Offset: off, Err: ErrTrailer, Reason: "empty input"}
	case errors.Is(err, io.EOF) && f.ext.kind != 0:
		return &RejectError{Offset: off, Err: ErrTruncated, Reason: "input ends after an extended header"}
	case errors.Is(err, io.EOF):
		return &RejectError{Offset: off, Err: ErrTrailer, Reason: fmt.Sprintf("missing end-of-archive marker at offset %d", off)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		if off == 0 {
			if m := compressionMagic(f.in.blk[:n]); m != "" {
				return &RejectError{Err: ErrCompressed, Reason: fmt.Sprintf("input starts with the %s magic number", m)}
			}
		}
		return &RejectError{Offset: off, Err: ErrTruncated, Reason: fmt.Sprintf("input ends inside a header block at offset %d", off)}
	}
	return err
}

// trailer checks the end of the archive: a second zero block, then only
// zero padding up to the end of the input.
func (f *filter) trailer(off int64) error {
	if f.ext.kind != 0 {
		return &RejectError{Offset: off, Err: ErrFormat, Reason: "extended header followed by the end-of-archive marker"}
	}
	n, err := f.in.readBlock()
	switch {
	case errors.Is(err, io.EOF):
		return &RejectError{Offset: off, Err: ErrTrailer, Reason: "the end-of-archive marker is a single zero block"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &RejectError{Offset: off, Err: ErrTrailer, Reason: fmt.Sprintf("input ends %d bytes into the second end-of-archive block", n)}
	case err != nil:
		return err
	case !isZeroBlock(&f.in.blk):
		return &RejectError{Offset: off + blockSize, Err: ErrTrailer, Reason: "a non-zero block follows the first end-of-archive block"}
	}
	var padding int64
	for {
		boff := f.in.off
		n, err := f.in.readBlock()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
			return err
		case !allZero(f.in.blk[:n]):
			return &RejectError{Offset: boff, Err: ErrTrailer, Reason: fmt.Sprintf("data after the end-of-archive marker at offset %d", boff)}
		case err != nil:
			return &RejectError{Offset: boff, Err: ErrTrailer, Reason: "input length is not a multiple of 512 bytes"}
		}
		padding += blockSize
		if padding > maxTrailingPadding {
			return &RejectError{Offset: boff, Err: ErrTrailer, Reason: fmt.Sprintf("more than %d bytes of padding after the end-of-archive marker", maxTrailingPadding)}
		}
	}
}

// extended reads a PAX 'x' header or a GNU 'L' long name, which apply to the
// next entry.
func (f *filter) extended(h header) error {
	rej := func(err error, reason string) error {
		return &RejectError{Offset: h.off, Err: err, Reason: reason}
	}
	if f.ext.kind != 0 {
		return rej(ErrFormat, "two extended headers for one entry")
	}
	var limit int64 = maxExtendedHeader
	if h.typ == 'L' {
		// The raw name may carry a "./" prefix, a trailing "/" and the NUL.
		limit = int64(f.l.maxNameLen) + 4
	}
	switch {
	case h.size == 0:
		return rej(ErrFormat, "empty extended header")
	case h.size > limit:
		return rej(ErrLimit, fmt.Sprintf("extended header of %d bytes, above the limit of %d", h.size, limit))
	}
	if cap(f.extBuf) < int(h.size) {
		f.extBuf = make([]byte, h.size)
	}
	data := f.extBuf[:h.size]
	for got := 0; got < len(data); {
		b, err := f.in.next(int64(len(data) - got))
		if err != nil {
			return f.truncated(err, "", h.off)
		}
		got += copy(data[got:], b)
	}
	if err := f.skipPadding(h.size, "", h.off); err != nil {
		return err
	}
	f.ext = ext{kind: h.typ, off: h.off}
	if h.typ == 'L' {
		name := data[:len(data)-1]
		if data[len(data)-1] != 0 || bytes.IndexByte(name, 0) >= 0 {
			return rej(ErrFormat, "GNU long name is not one NUL-terminated string")
		}
		f.ext.path, f.ext.hasPath = string(name), true
		return nil
	}
	if reason := parsePAX(data, &f.ext); reason != "" {
		return rej(ErrPAX, "pax header at offset "+fmt.Sprint(h.off)+": "+reason)
	}
	return nil
}

// truncated maps the end of input inside data to ErrTruncated.
func (f *filter) truncated(err error, entry string, off int64) error {
	if errors.Is(err, io.EOF) {
		return &RejectError{Entry: entry, Offset: off, Err: ErrTruncated, Reason: fmt.Sprintf("input ends inside the data at offset %d", f.in.off)}
	}
	return err
}

// skipPadding consumes the padding after size bytes of data; it must be
// zero.
func (f *filter) skipPadding(size int64, entry string, off int64) error {
	n := (blockSize - size%blockSize) % blockSize
	for n > 0 {
		b, err := f.in.next(n)
		if err != nil {
			return f.truncated(err, entry, off)
		}
		if !allZero(b) {
			return &RejectError{Entry: entry, Offset: off, Err: ErrFormat, Reason: "non-zero padding after the data"}
		}
		n -= int64(len(b))
	}
	return nil
}

// entry handles a header that is not an extended header.
func (f *filter) entry(h header) error {
	e := f.ext
	f.ext = ext{}
	raw := h.name
	if e.hasPath {
		raw = e.path
	}
	rej := func(err error, reason string) error {
		return &RejectError{Entry: raw, Offset: h.off, Err: err, Reason: reason}
	}
	linkname, _ := cString(h.blk[offLinkname : offLinkname+100])
	if e.sparse {
		return rej(ErrSparse, "GNU.sparse PAX records")
	}
	isDir := false
	switch h.typ {
	case '0':
	case 0:
		isDir = strings.HasSuffix(raw, "/")
	case '5':
		isDir = true
	case '1':
		return rej(ErrHardlink, "hard link to "+quote(linkname))
	case '2':
		return rej(ErrSymlink, "symbolic link to "+quote(linkname))
	case '3', '4':
		return rej(ErrDevice, typeName(h.typ))
	case '6':
		return rej(ErrFIFO, typeName(h.typ))
	case 'S':
		return rej(ErrSparse, typeName(h.typ))
	default:
		return rej(ErrType, typeName(h.typ))
	}
	switch {
	case e.bad != "":
		return rej(ErrPAX, e.bad)
	case e.linkpath:
		return rej(ErrPAX, "linkpath record on a regular file or directory")
	case e.hasSize && e.size > f.l.maxFileBytes:
		return rej(ErrLimit, fmt.Sprintf("declared size %d is above the per-file limit of %d", e.size, f.l.maxFileBytes))
	case e.hasSize:
		return rej(ErrPAX, fmt.Sprintf("size record (%d) for a size the ustar field holds", e.size))
	}
	if reason := checkFields(h); reason != "" {
		return rej(ErrFormat, reason)
	}
	size := h.size
	if isDir && size != 0 {
		return rej(ErrHeaderOnly, fmt.Sprintf("directory declares %d bytes of data", size))
	}
	if size > f.l.maxFileBytes {
		return rej(ErrLimit, fmt.Sprintf("declared size %d is above the per-file limit of %d", size, f.l.maxFileBytes))
	}
	p, root, ne := canonicalName(raw, isDir, f.l)
	if ne != nil {
		return rej(ne.err, ne.reason)
	}
	// Checked after the name itself, so that a traversal smuggled in a
	// needless record is reported as the traversal it is.
	switch {
	case e.kind == 'x' && e.hasPath && !needsLongName(e.path, true):
		return rej(ErrPAX, "path record for a name the ustar name field holds")
	case e.kind == 'L' && !needsLongName(e.path, false):
		return rej(ErrFormat, "GNU long name for a name the name field holds")
	}
	f.m.InputEntries++
	if f.m.InputEntries > f.l.maxEntries {
		return rej(ErrLimit, fmt.Sprintf("more than %d entries", f.l.maxEntries))
	}
	if root {
		if f.rootSeen {
			return rej(ErrDuplicate, "a second entry for the archive root")
		}
		f.rootSeen = true
		f.m.Normalised = append(f.m.Normalised, Note{Path: ".", Change: "root directory entry skipped"})
		return nil
	}
	if !isDir {
		if size > f.l.maxTotalBytes-f.total {
			return rej(ErrLimit, fmt.Sprintf("total file size would exceed the limit of %d bytes", f.l.maxTotalBytes))
		}
		f.total += size
	}
	mode := h.mode()
	emit, err := f.place(p, isDir, raw, h.off)
	if err != nil {
		return err
	}
	if emit && mode&0o7000 != 0 {
		f.m.Normalised = append(f.m.Normalised, Note{Path: p, Change: "setuid/setgid/sticky bits cleared"})
	}
	if emit && e.nDropped > 0 {
		f.m.Normalised = append(f.m.Normalised, Note{Path: p, Change: e.droppedNote()})
	}
	if isDir {
		return nil
	}
	return f.file(p, raw, h.off, size, mode, emit)
}

// file copies the data of a regular file, hashing it and emitting it when
// emit is set.
func (f *filter) file(p, raw string, off, size, mode int64, emit bool) error {
	fmode := int64(modeFile)
	if mode&0o111 != 0 {
		fmode = modeExec
	}
	if emit {
		if err := f.out.header(p, false, fmode, size); err != nil {
			return err
		}
		if f.ex != nil {
			if err := f.ex.create(p, fs.FileMode(fmode)); err != nil {
				return err
			}
		}
		f.fileHash.Reset()
	}
	for rem := size; rem > 0; {
		b, err := f.in.next(rem)
		if err != nil {
			return f.truncated(err, raw, off)
		}
		rem -= int64(len(b))
		if !emit {
			continue
		}
		f.fileHash.Write(b)
		if err := f.out.write(b); err != nil {
			return err
		}
		if f.ex != nil {
			if err := f.ex.write(b); err != nil {
				return err
			}
		}
	}
	if err := f.skipPadding(size, raw, off); err != nil {
		return err
	}
	if !emit {
		return nil
	}
	if err := f.out.pad(); err != nil {
		return err
	}
	if f.ex != nil {
		if err := f.ex.closeFile(); err != nil {
			return err
		}
	}
	f.fileHash.Sum(f.sum[:0])
	var digest [2 * sha256.Size]byte
	hex.Encode(digest[:], f.sum[:])
	f.files.add(File{Path: p, Size: size, Mode: fs.FileMode(fmode), SHA256: string(digest[:])})
	return nil
}

// place records the entry p in the tree. It rejects collisions and shape
// conflicts, applies the denylist, and emits missing parent directories and
// the directory p itself. emit reports whether the entry goes into the
// canonical archive (false for a dropped entry).
func (f *filter) place(p string, isDir bool, raw string, off int64) (emit bool, err error) {
	rej := func(err error, reason string) (bool, error) {
		return false, &RejectError{Entry: raw, Offset: off, Err: err, Reason: reason}
	}
	key := f.fold.key(p)
	var parent node // the zero node: no parent, not denied
	f.anc = f.anc[:0]
	slash := strings.LastIndexByte(p, '/')
	depth := 1
	if slash >= 0 && p[:slash] == f.cacheDir {
		depth += strings.Count(p[:slash], "/") + 1
	} else if slash >= 0 {
		ip, ik := 0, 0
		for {
			np := strings.IndexByte(p[ip:], '/')
			if np < 0 {
				break
			}
			np += ip
			nk := strings.IndexByte(key[ik:], '/')
			if nk < 0 {
				// Folding never adds or removes a "/"; refuse rather than
				// trust a key that does not line up with its path.
				return rej(ErrName, "name does not fold component by component")
			}
			nk += ik
			pp, kk := p[:np], key[:nk]
			n, ok := f.index[kk]
			if ok {
				if n.flags&fDir == 0 {
					return rej(ErrConflict, "below the regular file "+quote(f.pathOf(kk)))
				}
				if q := f.pathOf(kk); q != pp {
					return rej(ErrDuplicate, fmt.Sprintf("directory %s collides with %s (case or Unicode normalisation)", quote(pp), quote(q)))
				}
			} else {
				n = node{flags: fDir}
				f.setDeny(&n, parent, kk, true, depth)
				if err := f.newNode(pp, kk, n, raw, off); err != nil {
					return false, err
				}
			}
			if n.flags&fEmitted == 0 {
				f.anc = append(f.anc, ancestor{np, nk})
			}
			parent = n
			depth++
			ip, ik = np+1, nk+1
		}
	}

	n, ok := f.index[key]
	if ok {
		switch q := f.pathOf(key); {
		case q != p:
			return rej(ErrDuplicate, "collides with "+quote(q)+" (case or Unicode normalisation)")
		case n.flags&fDir != 0 && isDir && n.flags&fExplicit == 0:
			// A directory implied by an earlier entry, now declared.
			n.flags |= fExplicit
			f.index[key] = n
		case (n.flags&fDir != 0) != isDir:
			return rej(ErrConflict, "a file and a directory have the same path")
		default:
			return rej(ErrDuplicate, "duplicate entry")
		}
	} else {
		n = node{flags: fExplicit}
		if isDir {
			n.flags |= fDir
		}
		f.setDeny(&n, parent, key, isDir, depth)
		if err := f.newNode(p, key, n, raw, off); err != nil {
			return false, err
		}
	}

	if n.deny != 0 {
		reason := f.denyReason(n, p, depth)
		if f.l.denyAction == DenyReject {
			return rej(ErrDenied, reason)
		}
		f.m.Dropped = append(f.m.Dropped, Drop{Path: p, Dir: isDir, Reason: reason})
		return false, nil
	}
	for _, a := range f.anc {
		if err := f.emitDir(p[:a.np], key[:a.nk], true); err != nil {
			return false, err
		}
	}
	if slash >= 0 {
		f.cacheDir = p[:slash]
	}
	if isDir {
		if n.flags&fEmitted == 0 {
			return true, f.emitDir(p, key, false)
		}
		return true, nil
	}
	n.flags |= fEmitted
	f.index[key] = n
	return true, nil
}

// pathOf returns the path of the node with the given key.
func (f *filter) pathOf(key string) string {
	if p, ok := f.spell[key]; ok {
		return p
	}
	return key
}

func (f *filter) newNode(p, key string, n node, raw string, off int64) error {
	if f.nodes >= f.l.maxEntries {
		return &RejectError{Entry: raw, Offset: off, Err: ErrLimit,
			Reason: fmt.Sprintf("more than %d distinct paths (entries and implied directories)", f.l.maxEntries)}
	}
	f.nodes++
	f.index[key] = n
	if key != p {
		f.spell[key] = p
	}
	return nil
}

// setDeny decides whether a new node is denied: below a denied directory,
// or matched by a pattern itself. depth is its number of components.
func (f *filter) setDeny(n *node, parent node, key string, isDir bool, depth int) {
	if parent.deny != 0 {
		n.deny, n.denyDepth = parent.deny, parent.denyDepth
		return
	}
	if len(f.l.deny) == 0 {
		return
	}
	f.comps = f.comps[:0]
	for rest := key; ; {
		c, after, more := strings.Cut(rest, "/")
		f.comps = append(f.comps, c)
		if !more {
			break
		}
		rest = after
	}
	for i := range f.l.deny {
		if f.l.deny[i].match(f.comps, isDir, &f.scratch) {
			n.deny, n.denyDepth = int16(i+1), int16(depth)
			return
		}
	}
}

// denyReason explains the denial of the entry p (depth components).
func (f *filter) denyReason(n node, p string, depth int) string {
	pat := quote(f.l.deny[n.deny-1].src)
	if int(n.denyDepth) == depth {
		return "matches deny pattern " + pat
	}
	at := p
	for i, k := 0, 0; i < len(p); i++ {
		if p[i] == '/' {
			if k++; k == int(n.denyDepth) {
				at = p[:i]
				break
			}
		}
	}
	return "below " + quote(at) + ", which matches deny pattern " + pat
}

// emitDir writes the directory p (collision key key) to the canonical
// archive.
func (f *filter) emitDir(p, key string, synthesised bool) error {
	n := f.index[key]
	n.flags |= fEmitted
	f.index[key] = n
	if err := f.out.header(p, true, modeDir, 0); err != nil {
		return err
	}
	if f.ex != nil {
		if err := f.ex.mkdir(p); err != nil {
			return err
		}
	}
	f.dirs.add(p)
	if synthesised {
		f.m.Normalised = append(f.m.Normalised, Note{Path: p, Change: "parent directory synthesised"})
	}
	return nil
}
