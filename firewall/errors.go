package firewall

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// Sentinel errors. Every rejection returned by Filter and Extract is a
// *RejectError whose Unwrap method returns exactly one of these, so callers
// can match the class with errors.Is and read the entry with errors.As.
var (
	// ErrCompressed: the input starts with the magic number of a compressed
	// stream (gzip, bzip2, xz, zstd, lz4, lzip, compress, lzop) or of a zip or
	// 7z archive. The firewall never decompresses.
	ErrCompressed = errors.New("firewall: compressed input")
	// ErrFormat: the bytes are not a well-formed tar stream of a supported
	// format: unknown magic, malformed numeric fields, bytes hidden after a NUL
	// in a name field, non-zero padding, misplaced extended headers.
	ErrFormat = errors.New("firewall: malformed archive")
	// ErrChecksum: a header block's checksum does not match its contents.
	ErrChecksum = errors.New("firewall: bad header checksum")
	// ErrTruncated: the input ended inside a header, an extended header or
	// an entry's data.
	ErrTruncated = errors.New("firewall: truncated archive")
	// ErrTrailer: the end of the archive is wrong: no end-of-archive marker,
	// a single zero block, data after the marker, too much trailing padding,
	// or a length that is not a multiple of 512.
	ErrTrailer = errors.New("firewall: bad end of archive")

	// ErrSymlink: a symbolic link entry.
	ErrSymlink = errors.New("firewall: symlink")
	// ErrHardlink: a hard link entry.
	ErrHardlink = errors.New("firewall: hardlink")
	// ErrDevice: a character or block device entry.
	ErrDevice = errors.New("firewall: device")
	// ErrFIFO: a named pipe entry.
	ErrFIFO = errors.New("firewall: fifo")
	// ErrSparse: a sparse file, old GNU ('S') or PAX GNU.sparse.* records.
	ErrSparse = errors.New("firewall: sparse file")
	// ErrType: any other entry type that is not a regular file or a
	// directory: contiguous files, PAX global headers, GNU long link names,
	// vendor and unknown type flags.
	ErrType = errors.New("firewall: unsupported entry type")

	// ErrTraversal: an absolute name or a name with a ".." component.
	ErrTraversal = errors.New("firewall: path traversal")
	// ErrName: a name that is empty or not canonical, or that holds control
	// characters, backslashes, colons, invalid UTF-8 or non-NFC text.
	ErrName = errors.New("firewall: bad name")
	// ErrWhiteout: a name component starting with ".wh." (OCI/AUFS whiteout).
	ErrWhiteout = errors.New("firewall: whiteout")
	// ErrDuplicate: two entries with the same path, or with paths that differ
	// only in letter case or Unicode normalisation.
	ErrDuplicate = errors.New("firewall: duplicate path")
	// ErrConflict: the tree shape is inconsistent: an entry below a regular
	// file, or a file and a directory with the same path.
	ErrConflict = errors.New("firewall: file/directory conflict")
	// ErrHeaderOnly: a directory entry that declares a non-zero size. Such
	// a "payload" can hide entries from parsers that skip it.
	ErrHeaderOnly = errors.New("firewall: header-only entry with a size")
	// ErrPAX: a PAX record the policy does not know, a malformed record, or a
	// record that overrides the path or size in a non-canonical way.
	ErrPAX = errors.New("firewall: disallowed pax record")
	// ErrLimit: a policy limit was exceeded (entries, per-file bytes, total
	// bytes, input bytes, name length, component length, depth, extended
	// header size, or the time budget given by the context's deadline).
	ErrLimit = errors.New("firewall: limit exceeded")
	// ErrDenied: a path matched the policy's denylist and the deny action is
	// DenyReject.
	ErrDenied = errors.New("firewall: denied path")
)

// RejectError reports why an archive was rejected. Entry is the name of the
// offending entry as it appeared in the archive (empty when the problem is
// not tied to one entry, such as compressed input or trailing garbage).
// Offset is the byte offset of the header block, or of the problem, in the
// input. Err is one of the package's sentinel errors.
type RejectError struct {
	Entry  string
	Offset int64
	Reason string
	Err    error
}

// Error returns a single line: the sentinel's text, the quoted entry name
// and the reason. Names and other archive-supplied text are quoted, so the
// line never contains control characters.
func (e *RejectError) Error() string {
	msg := "firewall: rejected"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Entry != "" {
		msg += ": entry " + quote(e.Entry)
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap returns the sentinel error.
func (e *RejectError) Unwrap() error { return e.Err }

// maxQuoted bounds how many bytes of an archive-supplied string appear in an
// error message.
const maxQuoted = 200

// quote renders an archive-supplied string for an error message: Go-quoted
// (so control characters and invalid UTF-8 are escaped) and truncated.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}
