// Package streamout holds the stream-out wrapper every backend runs in front
// of a command with sandbox.StreamOut: a Python script that keeps the
// sandbox's standard output for a tar archive of the stream-out directory,
// written in the firewall's canonical layout after the command and every
// process it left are gone (see streamout.py's header), and the bound on
// that archive's size.
package streamout

import (
	_ "embed"
	"path"
	"strconv"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/sandbox"
)

// Script is the wrapper's source, run with python3 -I -c.
//
//go:embed streamout.py
var Script string

// PathBounds returns the name length and depth beyond which the firewall
// rejects an entry under pol; the wrapper stops there.
func PathBounds(pol firewall.Policy) (maxName, maxDepth int) {
	maxName, maxDepth = pol.MaxNameLen, pol.MaxDepth
	if maxName <= 0 {
		maxName = firewall.DefaultMaxNameLen
	}
	if maxDepth <= 0 {
		maxDepth = firewall.DefaultMaxDepth
	}
	return min(maxName, firewall.CeilingMaxNameLen), min(maxDepth, firewall.CeilingMaxDepth)
}

// Command wraps cmd in the stream-out wrapper.
func Command(so sandbox.StreamOut, cmd []string, pol firewall.Policy) []string {
	maxName, maxDepth := PathBounds(pol)
	return append([]string{"python3", "-I", "-c", Script,
		so.Dir, path.Base(so.Dir), strconv.Itoa(maxName), strconv.Itoa(maxDepth)}, cmd...)
}

// TreeCommand is the wrapper in its tree mode: it writes the archive of
// the directory or regular file at p, reached through directories only
// (a link or a file on the way is written as a link entry, which the
// firewall rejects), with its entries named below name, or from the
// archive's root when name is empty (a volume's content). It exits 0 once
// the archive is written, TreeMissing when p does not exist. The archive
// ends one entry past pol's entry bound, so that a directory with no inode
// cap costs the reader no more than the firewall takes.
func TreeCommand(p, name string, pol firewall.Policy) []string {
	maxName, maxDepth := PathBounds(pol)
	maxEntries := pol.MaxEntries
	if maxEntries <= 0 {
		maxEntries = firewall.DefaultMaxEntries
	}
	return []string{"python3", "-I", "-c", Script, "--tree", p, name,
		strconv.Itoa(maxName), strconv.Itoa(maxDepth), strconv.Itoa(maxEntries)}
}

// TreeMissing is the tree mode's exit status when its path does not exist.
const TreeMissing = 3

// Cap is the most the wrapper writes for a directory with these caps.
// Every entry it writes but the last is a distinct inode of the directory;
// an entry costs at most a PAX header block, a path record of at most the
// cut name (the name bound plus a few bytes and the record's framing)
// rounded up to a block, a USTAR header block and the padding of its data;
// the data of the regular files, none of them sparse, fits in the size cap;
// and the archive ends with two zero blocks. A backend that cannot cap the
// directory's inodes still caps the archive here: passing it is an
// output-limit kill, never a longer archive.
func Cap(so sandbox.StreamOut, pol firewall.Policy) int64 {
	const block = 512
	maxName, _ := PathBounds(pol)
	record := (int64(maxName) + 64 + block - 1) / block * block
	perEntry := 3*block + record
	return so.Bytes + (so.Inodes+1)*perEntry + 2*block
}

// QuotaPolicy narrows pol to the stream-out quota so: no more entries than
// the quota's inodes and no more bytes than its size. Where the directory
// enforces the quota (a runc tmpfs) this refuses nothing new; where it does
// not count inodes (gVisor's tmpfs, a Kubernetes emptyDir), a tree over the
// quota leaves as an archive the firewall refuses.
func QuotaPolicy(so sandbox.StreamOut, pol firewall.Policy) firewall.Policy {
	if pol.MaxEntries == 0 || int64(pol.MaxEntries) > so.Inodes {
		pol.MaxEntries = int(so.Inodes)
	}
	if pol.MaxTotalBytes == 0 || pol.MaxTotalBytes > so.Bytes {
		pol.MaxTotalBytes = so.Bytes
	}
	return pol
}
