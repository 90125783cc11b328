package firewall

import (
	"bytes"
	"fmt"
	"strings"
)

// maxExtendedHeader bounds the data of one PAX extended header. Go's reader
// allows 1 MiB; canonical input needs at most one path record.
const maxExtendedHeader = 64 << 10

// ext is what the extended header (PAX 'x' or GNU 'L') preceding an entry
// said about it.
type ext struct {
	kind byte // 0 (none), 'x' or 'L'
	off  int64

	path    string // PAX path record or GNU long name
	hasPath bool

	linkpath bool  // a PAX linkpath record
	sparse   bool  // GNU.sparse.* records
	size     int64 // PAX size record
	hasSize  bool

	// bad is the first record the policy does not accept; the rejection is
	// raised once the entry's name is known.
	bad string

	dropped  []string // the first few dropped record keys, for the manifest
	nDropped int
}

const maxDroppedKeys = 4

// singular PAX keys: each may appear once per header.
var singularKeys = map[string]int{
	"path": 0, "linkpath": 1, "size": 2, "mtime": 3, "atime": 4, "ctime": 5,
	"uid": 6, "gid": 7, "uname": 8, "gname": 9, "hdrcharset": 10, "charset": 11,
	"comment": 12, "LIBARCHIVE.creationtime": 13, "SCHILY.dev": 14, "SCHILY.ino": 15,
	"SCHILY.nlink": 16, "SCHILY.fflags": 17,
}

// parsePAX reads the records of a PAX extended header into e. A malformed
// record is returned as a reason at once: the framing of the header can no
// longer be trusted. Records that are well formed but not accepted are kept
// in e.bad.
func parsePAX(data []byte, e *ext) string {
	var seen uint64
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 || sp > 7 || data[0] == '0' {
			return "malformed record length"
		}
		n := 0
		for _, c := range data[:sp] {
			if c < '0' || c > '9' {
				return "malformed record length"
			}
			n = n*10 + int(c-'0')
		}
		if n < sp+4 || n > len(data) {
			return "record length out of range"
		}
		rec := data[sp+1 : n]
		data = data[n:]
		if rec[len(rec)-1] != '\n' {
			return "record not terminated by a newline"
		}
		rec = rec[:len(rec)-1]
		eq := bytes.IndexByte(rec, '=')
		if eq <= 0 {
			return "record without a key"
		}
		key, val := string(rec[:eq]), rec[eq+1:]
		if strings.IndexByte(key, 0) >= 0 || strings.IndexByte(key, '\n') >= 0 {
			return "record key with a NUL or newline"
		}
		if i, ok := singularKeys[key]; ok {
			if seen&(1<<i) != 0 {
				e.setBad(fmt.Sprintf("record %s repeated", quote(key)))
				continue
			}
			seen |= 1 << i
		}
		switch {
		case key == "path":
			if len(val) == 0 || bytes.IndexByte(val, 0) >= 0 {
				e.setBad("empty path record or NUL in the path record")
				continue
			}
			e.path, e.hasPath = string(val), true
		case key == "linkpath":
			e.linkpath = true
		case key == "size":
			v, ok := decimal(val)
			if !ok {
				e.setBad(fmt.Sprintf("malformed size record %s", quote(string(val))))
				continue
			}
			e.size, e.hasSize = v, true
		case key == "mtime" || key == "atime" || key == "ctime" || key == "LIBARCHIVE.creationtime":
			if !paxTime(val) {
				e.setBad(fmt.Sprintf("malformed %s record %s", key, quote(string(val))))
			}
		case key == "uid" || key == "gid" || key == "SCHILY.dev" || key == "SCHILY.ino" || key == "SCHILY.nlink":
			if _, ok := decimal(val); !ok {
				e.setBad(fmt.Sprintf("malformed %s record %s", key, quote(string(val))))
			}
		case key == "uname" || key == "gname":
			// Replaced by the canonical empty owner names.
		case key == "hdrcharset":
			e.setBad("hdrcharset record (names must be UTF-8)")
		case strings.HasPrefix(key, "GNU.sparse."):
			e.sparse = true
		case key == "comment" || key == "charset" || key == "SCHILY.fflags" ||
			strings.HasPrefix(key, "SCHILY.xattr.") || strings.HasPrefix(key, "LIBARCHIVE.xattr.") ||
			strings.HasPrefix(key, "SCHILY.acl."):
			e.nDropped++
			if len(e.dropped) < maxDroppedKeys {
				if len(key) > 64 {
					key = key[:64] + "..."
				}
				e.dropped = append(e.dropped, key)
			}
		default:
			e.setBad(fmt.Sprintf("unknown record %s", quote(key)))
		}
	}
	return ""
}

func (e *ext) setBad(reason string) {
	if e.bad == "" {
		e.bad = reason
	}
}

// droppedNote describes the dropped records for the manifest.
func (e *ext) droppedNote() string {
	s := "dropped pax records: " + strings.Join(e.dropped, ", ")
	if more := e.nDropped - len(e.dropped); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// decimal parses a non-negative decimal integer without sign or leading
// zeros (other than "0" itself).
func decimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' || v > (1<<63-1-9)/10 {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// paxTime accepts [-]digits[.digits].
func paxTime(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	sec, frac, hasFrac := bytes.Cut(b, []byte("."))
	if len(sec) == 0 || len(sec) > 19 || hasFrac && len(frac) == 0 {
		return false
	}
	for _, c := range sec {
		if c < '0' || c > '9' {
			return false
		}
	}
	for _, c := range frac {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// needsLongName reports whether a PAX path record or GNU long name is the
// canonical way to carry name: it is longer than the 100-byte name field,
// or, for PAX, not ASCII.
func needsLongName(name string, pax bool) bool {
	if len(name) > ustarNameLen || !pax && len(name) == ustarNameLen {
		return true
	}
	if pax {
		for i := 0; i < len(name); i++ {
			if name[i] >= 0x80 {
				return true
			}
		}
	}
	return false
}
