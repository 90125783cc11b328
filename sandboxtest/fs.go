package sandboxtest

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// kind is the type of a node in a fake file tree.
type kind byte

const (
	kindDir kind = iota
	kindFile
	kindLink
	kindFIFO
)

// file is the content behind one or more names (hard links share it).
type file struct {
	data  []byte
	names int
}

// node is one name in a tree.
type node struct {
	kind kind
	perm fs.FileMode
	uid  int
	file *file  // kindFile
	link string // kindLink
}

// tree is an in-memory directory tree: a volume, a tmpfs or a sandbox's
// stream-out directory. Paths are clean and relative to its root, which is
// "". A tmpfs has caps; a volume has none, as a Docker volume has none.
type tree struct {
	mu     sync.Mutex
	nodes  map[string]*node
	bytes  int64 // data held
	limit  int64 // bytes cap; 0 means none
	inodes int64 // cap on names, the root included; 0 means none
}

func newTree(rootUID int, limit, inodes int64) *tree {
	return &tree{nodes: map[string]*node{"": {kind: kindDir, perm: 0o755, uid: rootUID}}, limit: limit, inodes: inodes}
}

func pathErr(op, p string, err error) error { return &fs.PathError{Op: op, Path: p, Err: err} }

// parentDir returns the directory node that holds rel, checking that the
// caller (uid) may create or remove names in it.
func (t *tree) parentDir(op, full, rel string, uid int) error {
	dir := path.Dir(rel)
	if dir == "." {
		dir = ""
	}
	n, ok := t.nodes[dir]
	switch {
	case !ok:
		return pathErr(op, full, syscall.ENOENT)
	case n.kind != kindDir:
		return pathErr(op, full, syscall.ENOTDIR)
	case uid != 0 && n.uid != uid:
		return pathErr(op, full, syscall.EACCES)
	}
	return nil
}

// add creates a name, under the inode cap.
func (t *tree) add(op, full, rel string, n *node, uid int) error {
	if _, ok := t.nodes[rel]; ok {
		return pathErr(op, full, syscall.EEXIST)
	}
	if err := t.parentDir(op, full, rel, uid); err != nil {
		return err
	}
	if t.inodes > 0 && int64(len(t.nodes)) >= t.inodes {
		return pathErr(op, full, syscall.ENOSPC)
	}
	t.nodes[rel] = n
	return nil
}

// write replaces a file's content (creating it), under the byte cap and a
// per-file cap (RLIMIT_FSIZE; 0 means none).
func (t *tree) write(full, rel string, data []byte, perm fs.FileMode, uid int, fileCap int64, appending bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.nodes[rel]
	if ok && appending && n.kind == kindFile {
		data = append(n.file.data, data...)
	}
	if ok && n.kind == kindLink {
		return pathErr("open", full, syscall.ELOOP) // the sandbox never follows a planted link out
	}
	if ok && n.kind != kindFile {
		return pathErr("open", full, syscall.EISDIR)
	}
	if ok && uid != 0 && n.uid != uid {
		return pathErr("open", full, syscall.EACCES)
	}
	old := int64(0)
	if ok {
		old = int64(len(n.file.data))
	}
	if fileCap > 0 && int64(len(data)) > fileCap {
		return pathErr("write", full, syscall.EFBIG)
	}
	if t.limit > 0 && t.bytes-old+int64(len(data)) > t.limit {
		return pathErr("write", full, syscall.ENOSPC)
	}
	if !ok {
		n = &node{kind: kindFile, perm: perm, uid: uid, file: &file{names: 1}}
		if err := t.add("open", full, rel, n, uid); err != nil {
			return err
		}
	}
	t.bytes += int64(len(data)) - old
	if appending {
		n.file.data = data
	} else {
		n.file.data = bytes.Clone(data)
	}
	return nil
}

// remove removes a name that is not a directory.
func (t *tree) remove(full, rel string, uid int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.nodes[rel]
	switch {
	case !ok:
		return pathErr("remove", full, syscall.ENOENT)
	case n.kind == kindDir:
		return pathErr("remove", full, syscall.EISDIR)
	}
	if err := t.parentDir("remove", full, rel, uid); err != nil {
		return err
	}
	if n.kind == kindFile {
		n.file.names--
		if n.file.names == 0 {
			t.bytes -= int64(len(n.file.data))
		}
	}
	delete(t.nodes, rel)
	return nil
}

func (t *tree) mkdir(full, rel string, uid int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.add("mkdir", full, rel, &node{kind: kindDir, perm: 0o755, uid: uid}, uid)
}

func (t *tree) symlink(target, full, rel string, uid int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.add("symlink", full, rel, &node{kind: kindLink, perm: 0o777, uid: uid, link: target}, uid)
}

func (t *tree) mkfifo(full, rel string, uid int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.add("mkfifo", full, rel, &node{kind: kindFIFO, perm: 0o644, uid: uid}, uid)
}

func (t *tree) link(oldFull, oldRel, full, rel string, uid int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.nodes[oldRel]
	if !ok || o.kind != kindFile {
		return pathErr("link", oldFull, syscall.ENOENT)
	}
	if err := t.add("link", full, rel, &node{kind: kindFile, perm: o.perm, uid: o.uid, file: o.file}, uid); err != nil {
		return err
	}
	o.file.names++
	return nil
}

func (t *tree) read(full, rel string) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.nodes[rel]
	switch {
	case !ok:
		return nil, pathErr("open", full, syscall.ENOENT)
	case n.kind == kindDir:
		return nil, pathErr("read", full, syscall.EISDIR)
	case n.kind != kindFile:
		return nil, pathErr("open", full, syscall.ELOOP)
	}
	return bytes.Clone(n.file.data), nil
}

// list returns the names directly below the directory rel.
func (t *tree) list(full, rel string) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n, ok := t.nodes[rel]; !ok || n.kind != kindDir {
		return nil, pathErr("open", full, syscall.ENOTDIR)
	}
	var out []string
	for p := range t.nodes {
		if p != "" && parentOf(p) == rel {
			out = append(out, path.Base(p))
		}
	}
	slices.Sort(out)
	return out, nil
}

func parentOf(rel string) string {
	d := path.Dir(rel)
	if d == "." {
		return ""
	}
	return d
}

// stat returns the kind of the node at rel.
func (t *tree) stat(rel string) (kind, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.nodes[rel]
	if !ok {
		return 0, false
	}
	return n.kind, true
}

// extract lays a canonical archive (the firewall's output: directories and
// regular files only) out below dir, owned by uid.
func (t *tree) extract(canonical []byte, dir string, uid int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := tar.NewReader(bytes.NewReader(canonical))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel := strings.TrimSuffix(path.Join(dir, h.Name), "/")
		switch h.Typeflag {
		case tar.TypeDir:
			if n, ok := t.nodes[rel]; ok && n.kind == kindDir {
				continue
			}
			if err := t.add("mkdir", rel, rel, &node{kind: kindDir, perm: fs.FileMode(h.Mode) & 0o777, uid: uid}, 0); err != nil {
				return err
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if old, ok := t.nodes[rel]; ok && old.kind == kindFile {
				t.bytes -= int64(len(old.file.data))
				delete(t.nodes, rel)
			}
			n := &node{kind: kindFile, perm: fs.FileMode(h.Mode) & 0o777, uid: uid, file: &file{data: data, names: 1}}
			if err := t.add("open", rel, rel, n, 0); err != nil {
				return err
			}
			t.bytes += int64(len(data))
		default:
			return fmt.Errorf("sandboxtest: canonical archive holds type %q", h.Typeflag)
		}
	}
}

// archive writes the node at rel, and everything below it when it is a
// directory, as a tar stream whose entries are rooted at base, in lexical
// order, without following links: links, pipes and extra names of a file
// are written as such, for the firewall to refuse. It is what the daemon's
// copy out and the stream-out wrapper send.
func (t *tree) archive(w io.Writer, rel, base string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for p := range t.nodes {
		if p == rel || rel == "" || strings.HasPrefix(p, rel+"/") {
			names = append(names, p)
		}
	}
	slices.Sort(names)
	tw := tar.NewWriter(w)
	seen := map[*file]string{}
	epoch := time.Unix(0, 0)
	for _, p := range names {
		n := t.nodes[p]
		name := base
		if p != rel {
			name = path.Join(base, strings.TrimPrefix(p, strings.TrimPrefix(rel+"/", "/")))
		}
		h := &tar.Header{Name: name, Mode: int64(n.perm), ModTime: epoch, Format: tar.FormatPAX}
		switch n.kind {
		case kindDir:
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
		case kindLink:
			h.Typeflag, h.Linkname = tar.TypeSymlink, n.link
		case kindFIFO:
			h.Typeflag = tar.TypeFifo
		case kindFile:
			if first, ok := seen[n.file]; ok {
				h.Typeflag, h.Linkname = tar.TypeLink, first
			} else {
				seen[n.file] = name
				h.Typeflag, h.Size = tar.TypeReg, int64(len(n.file.data))
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(n.file.data); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}
