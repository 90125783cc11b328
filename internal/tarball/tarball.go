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
	"strings"
)

// WriteDir writes the tree under dir to w. Entries are visited in lexical
// order. Regular files and directories are written with their content and
// permission bits; symbolic links are written as links (never followed) and
// any other kind of file as a FIFO-typed entry, so the firewall downstream
// rejects them with a precise reason. keep, when not nil, selects the
// slash-separated relative paths to include; a directory it refuses is
// skipped whole, and the parents of kept entries are always written.
// Files are opened through an os.Root, so a path swapped for a link while
// the walk runs cannot lead outside dir.
func WriteDir(w io.Writer, dir string, keep func(rel string, isDir bool) bool) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tw := tar.NewWriter(w)
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if keep != nil && !keep(rel, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := root.Lstat(rel)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: rel, Mode: int64(info.Mode().Perm()), ModTime: info.ModTime(), Format: tar.FormatPAX}
		switch mode := info.Mode(); {
		case mode.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
			return tw.WriteHeader(hdr)
		case mode&fs.ModeSymlink != 0:
			target, err := root.Readlink(rel)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
			return tw.WriteHeader(hdr)
		case mode.IsRegular():
			f, err := root.OpenFile(rel, os.O_RDONLY|noFollow, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return err
			}
			if !st.Mode().IsRegular() {
				return fmt.Errorf("tarball: %s changed type during the walk", rel)
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size()
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			n, err := io.Copy(tw, io.LimitReader(f, st.Size()))
			if err != nil {
				return err
			}
			if n != st.Size() {
				return fmt.Errorf("tarball: %s shrank during the walk", rel)
			}
			return nil
		default:
			hdr.Typeflag = tar.TypeFifo
			return tw.WriteHeader(hdr)
		}
	})
	if err != nil {
		return err
	}
	return tw.Close()
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
