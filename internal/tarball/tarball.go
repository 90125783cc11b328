// Package tarball writes a host directory as a tar stream without following
// links, so that the firewall, not this code, decides what may cross.
package tarball

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

// ErrWalk is matched (errors.Is) by every error WriteDir returns because of
// something it found in the tree it walks, as opposed to a failure of the
// writer or of opening the directory itself. The error is a *WalkError.
var ErrWalk = errors.New("tarball: unacceptable entry in the walked tree")

// WalkError reports an entry of the walked tree that WriteDir cannot or
// will not write: a name that is not valid UTF-8, a named pipe, a device, a
// socket or another special file, an entry it cannot read, or one that
// changed while it was being read.
//
// Whoever made the tree chose Path; Reason never contains it, so Reason is
// the part to show where names from the tree must not be quoted.
type WalkError struct {
	Path   string // slash-separated, relative to the walked directory; may be invalid UTF-8
	Reason string // what is wrong, e.g. "a socket", "unreadable"
	Err    error  // the system error behind it, if any
}

// Error returns the reason with the path quoted (control characters and
// invalid UTF-8 escaped).
func (e *WalkError) Error() string {
	s := "tarball: " + strconv.Quote(e.Path) + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrWalk and, when there is one, the system error.
func (e *WalkError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrWalk}
	}
	return []error{ErrWalk, e.Err}
}

// afterLstat, when set by a test, runs between the Lstat of an entry and
// its opening, where a concurrent change would land.
var afterLstat func(rel string)

// WriteDir writes the tree under dir to w. Entries are visited in lexical
// order of their names, a directory before its content. Regular files and
// directories are written with their content and permission bits; symbolic
// links are written as links and never followed, so that the firewall
// downstream rejects them with its own reason. keep, when not nil, selects
// the slash-separated relative paths to include; a directory it refuses is
// skipped whole, and the parents of kept entries are always written.
//
// Anything else found in a kept part of the tree ends the walk with a
// *WalkError (matching ErrWalk), nothing being written for the entry: a
// name that is not valid UTF-8, a named pipe, a device, a socket or any
// other special file, an entry that cannot be listed, examined or read, or
// a file that changed type or size while it was read. Other errors are
// failures to open dir, to write to w, or of the host itself (out of
// descriptors or memory, an I/O error): the walker's, not the tree's.
//
// Files are opened through an os.Root and without following a final link,
// so a path swapped for a link while the walk runs cannot lead outside dir,
// and a path swapped for a named pipe cannot block the walk.
func WriteDir(w io.Writer, dir string, keep func(rel string, isDir bool) bool) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	wr := &walker{root: root, tw: tar.NewWriter(w), keep: keep, buf: make([]byte, 32<<10)}
	if err := wr.dir("."); err != nil {
		return err
	}
	return wr.tw.Close()
}

// walker holds the state of one WriteDir.
type walker struct {
	root *os.Root
	tw   *tar.Writer
	keep func(rel string, isDir bool) bool
	buf  []byte
}

// dir writes the entries below the directory rel, in lexical order.
func (w *walker) dir(rel string) error {
	f, err := w.root.Open(rel)
	if err != nil && rel == "." {
		// The directory the caller named is the caller's, not the tree's.
		return fmt.Errorf("tarball: open the directory to walk: %w", err)
	}
	if err != nil {
		return fault(rel, "directory cannot be opened", err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return fault(rel, "directory cannot be listed", err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		child := e.Name()
		if rel != "." {
			child = rel + "/" + child
		}
		if w.keep != nil && !w.keep(child, e.IsDir()) {
			continue
		}
		if err := w.entry(child); err != nil {
			return err
		}
	}
	return nil
}

// entry writes one kept entry and, for a directory, what is below it.
func (w *walker) entry(rel string) error {
	if !utf8.ValidString(rel) {
		return &WalkError{Path: rel, Reason: "name is not valid UTF-8"}
	}
	info, err := w.root.Lstat(rel)
	if err != nil {
		return fault(rel, "cannot be examined", err)
	}
	mode := info.Mode()
	hdr := &tar.Header{Name: rel, Mode: int64(mode.Perm()), ModTime: info.ModTime(), Format: tar.FormatPAX}
	switch {
	case mode.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
		if err := w.tw.WriteHeader(hdr); err != nil {
			return err
		}
		return w.dir(rel)
	case mode&fs.ModeSymlink != 0:
		target, err := w.root.Readlink(rel)
		if err != nil {
			return fault(rel, "link cannot be read", err)
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		return w.tw.WriteHeader(hdr)
	case mode.IsRegular():
		return w.file(rel, hdr)
	}
	return &WalkError{Path: rel, Reason: special(mode)}
}

// fault is the error for a system error met at rel. Errors that say the
// host ran short (descriptors, memory, I/O) are the walker's own failure,
// not the tree's, and are returned without the path; any other error is a
// *WalkError: the tree has an entry that cannot be read as it stands.
func fault(rel, reason string, err error) error {
	for _, host := range hostErrnos {
		if errors.Is(err, host) {
			return fmt.Errorf("tarball: walking the tree: %s: %w", reason, err)
		}
	}
	return &WalkError{Path: rel, Reason: reason, Err: err}
}

// hostErrnos are the system errors that describe the host, whatever the
// tree holds.
var hostErrnos = []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.ENOBUFS, syscall.EIO, syscall.EINTR}

// special names a kind of file that is neither regular, a directory nor a
// link.
func special(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	}
	return fmt.Sprintf("a special file (mode %v)", mode)
}

// file writes a regular file: the header with the size the open file
// reports, then exactly that many bytes.
func (w *walker) file(rel string, hdr *tar.Header) error {
	if afterLstat != nil {
		afterLstat(rel)
	}
	f, err := w.root.OpenFile(rel, os.O_RDONLY|noFollow|nonBlock, 0)
	if err != nil {
		return fault(rel, "unreadable", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fault(rel, "unreadable", err)
	}
	if !st.Mode().IsRegular() {
		return &WalkError{Path: rel, Reason: "changed type during the walk"}
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size()
	if err := w.tw.WriteHeader(hdr); err != nil {
		return err
	}
	// A read error is the tree's problem, a write error the writer's:
	// the loop keeps them apart.
	for left := st.Size(); left > 0; {
		n, err := f.Read(w.buf[:min(int64(len(w.buf)), left)])
		if n > 0 {
			if _, werr := w.tw.Write(w.buf[:n]); werr != nil {
				return werr
			}
			left -= int64(n)
		}
		switch {
		case errors.Is(err, io.EOF) || err == nil && n == 0:
			if left > 0 {
				return &WalkError{Path: rel, Reason: "shrank during the walk"}
			}
		case err != nil:
			return fault(rel, "unreadable", err)
		}
	}
	return nil
}

// Under returns a keep function for WriteDir that selects the given
// relative paths (files or directories, with everything below a directory)
// and the directories leading to them.
func Under(paths []string) func(rel string, isDir bool) bool {
	return func(rel string, isDir bool) bool {
		for _, p := range paths {
			p = strings.TrimSuffix(path.Clean(p), "/")
			if rel == p || strings.HasPrefix(rel, p+"/") {
				return true
			}
			if isDir && strings.HasPrefix(p, rel+"/") {
				return true
			}
		}
		return false
	}
}

// Copy copies the entries of the archive r into tw, in order, passing each
// header through edit first; an entry for which edit returns false is left
// out. It is meant for archives the firewall has already made canonical:
// it re-checks nothing.
func Copy(tw *tar.Writer, r io.Reader, edit func(h *tar.Header) bool) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if edit != nil && !edit(h) {
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}

// Rewrite is Copy into a new archive written to w.
func Rewrite(w io.Writer, r io.Reader, edit func(h *tar.Header) bool) error {
	tw := tar.NewWriter(w)
	if err := Copy(tw, r, edit); err != nil {
		return err
	}
	return tw.Close()
}
