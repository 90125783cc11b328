package engine

import (
	_ "embed"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/strictgrade/strictgrade/firewall"
)

// streamScript is the wrapper that runs a StreamOut command and writes its
// directory on standard output (see StreamOut and the script's header).
//
//go:embed streamout.py
var streamScript string

// resolve fills the zero caps with their defaults and rejects the rest of
// what validateSpec does not see.
func (so StreamOut) resolve() (StreamOut, error) {
	switch {
	case so.Bytes < 0 || so.Bytes > MaxStreamOutBytes:
		return so, fmt.Errorf("%w: stream-out size cap %d outside [0, %d]", ErrSpec, so.Bytes, MaxStreamOutBytes)
	case so.Inodes < 0 || so.Inodes > MaxStreamOutInodes:
		return so, fmt.Errorf("%w: stream-out inode cap %d outside [0, %d]", ErrSpec, so.Inodes, MaxStreamOutInodes)
	}
	if so.Bytes == 0 {
		so.Bytes = DefaultStreamOutBytes
	}
	if so.Inodes == 0 {
		so.Inodes = DefaultStreamOutInodes
	}
	// A tmpfs needs its root and at least one entry to be of any use.
	so.Inodes = max(so.Inodes, 2)
	return so, nil
}

// validStreamDir checks where a StreamOut directory may go: somewhere of its
// own, clear of /tmp, of every volume mount and of every collected path, so
// that one mount never hides another and the copy API is never asked to
// read the tmpfs.
func validStreamDir(s Spec) error {
	dir := s.StreamOut.Dir
	if !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/" {
		return fmt.Errorf("%w: stream-out directory %q", ErrSpec, dir)
	}
	others := []string{"/tmp"}
	for _, m := range s.Mounts {
		others = append(others, m.Target)
	}
	others = append(others, s.Collect...)
	for _, o := range others {
		if nested(dir, o) || nested(o, dir) {
			return fmt.Errorf("%w: stream-out directory %q overlaps %q", ErrSpec, dir, o)
		}
	}
	if err := s.CollectPolicy.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrSpec, err)
	}
	return nil
}

// nested reports whether p is a or lies below it.
func nested(p, a string) bool {
	return p == a || strings.HasPrefix(p, strings.TrimSuffix(a, "/")+"/")
}

// tmpfsOptions are the mount options of a StreamOut tmpfs: capped in size
// and inodes, owned by the sandbox user, nothing executable or special.
func (so StreamOut) tmpfsOptions() string {
	return fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,nr_inodes=%d,uid=%d,gid=%d,mode=0700",
		so.Bytes, so.Inodes, SandboxUID, SandboxUID)
}

// pathBounds returns the name length and depth beyond which the firewall
// rejects an entry under pol; the wrapper stops there.
func pathBounds(pol firewall.Policy) (maxName, maxDepth int) {
	maxName, maxDepth = pol.MaxNameLen, pol.MaxDepth
	if maxName <= 0 {
		maxName = firewall.DefaultMaxNameLen
	}
	if maxDepth <= 0 {
		maxDepth = firewall.DefaultMaxDepth
	}
	return min(maxName, firewall.CeilingMaxNameLen), min(maxDepth, firewall.CeilingMaxDepth)
}

// command wraps cmd in the stream-out wrapper.
func (so StreamOut) command(cmd []string, pol firewall.Policy) []string {
	maxName, maxDepth := pathBounds(pol)
	return append([]string{"python3", "-I", "-c", streamScript,
		so.Dir, path.Base(so.Dir), strconv.Itoa(maxName), strconv.Itoa(maxDepth)}, cmd...)
}

// streamCap is the most the wrapper writes for a tmpfs with these caps. Every
// entry it writes but the last is a distinct inode of the tmpfs; an entry
// costs at most a PAX header block, a path record of at most the cut name
// (the name bound plus a few bytes and the record's framing) rounded up to
// a block, a USTAR header block and the padding of its data; the data of
// the regular files, none of them sparse, fits in the tmpfs's size; and
// the archive ends with two zero blocks.
func (so StreamOut) streamCap(pol firewall.Policy) int64 {
	const block = 512
	maxName, _ := pathBounds(pol)
	record := (int64(maxName) + 64 + block - 1) / block * block
	perEntry := 3*block + record
	return so.Bytes + (so.Inodes+1)*perEntry + 2*block
}
