package firewall

import (
	"bytes"
	"fmt"
	"strconv"
)

// header is one parsed header block. Only what the firewall needs is kept;
// the other fields are checked for well-formedness and then ignored,
// because the canonical header replaces them.
type header struct {
	blk  *[blockSize]byte
	off  int64
	typ  byte
	gnu  bool   // GNU magic ("ustar  \x00"); otherwise POSIX ustar
	name string // name field, joined with the prefix field for POSIX ustar
	size int64
}

// Offsets of the header fields.
const (
	offName     = 0
	offMode     = 100
	offUID      = 108
	offGID      = 116
	offSize     = 124
	offMtime    = 136
	offChksum   = 148
	offType     = 156
	offLinkname = 157
	offMagic    = 257
	offDevmajor = 329
	offDevminor = 337
	offPrefix   = 345
	offGNUExtra = 369 // GNU: offset, longnames, sparse map, isextended, realsize
	offPad      = 500
)

func isZeroBlock(b *[blockSize]byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// compressionMagic names the compressed or foreign format whose magic number
// starts b, or returns "".
func compressionMagic(b []byte) string {
	magics := []struct {
		name  string
		magic string
	}{
		{"gzip", "\x1f\x8b"},
		{"bzip2", "BZh"},
		{"xz", "\xfd7zXZ\x00"},
		{"zstd", "\x28\xb5\x2f\xfd"},
		{"lz4", "\x04\x22\x4d\x18"},
		{"lzip", "LZIP"},
		{"compress (.Z)", "\x1f\x9d"},
		{"lzop", "\x89LZO\x00\r\n\x1a\n"},
		{"zip", "PK\x03\x04"},
		{"zip", "PK\x05\x06"},
		{"7z", "7z\xbc\xaf\x27\x1c"},
		{"lzma", "\x5d\x00\x00"},
	}
	for _, m := range magics {
		if bytes.HasPrefix(b, []byte(m.magic)) {
			return m.name
		}
	}
	// zstd skippable frames: 0x184D2A50..0x184D2A5F, little-endian.
	if len(b) >= 4 && b[0]&0xf0 == 0x50 && b[1] == 0x2a && b[2] == 0x4d && b[3] == 0x18 {
		return "zstd"
	}
	return ""
}

// parseHeader checks the checksum and the magic of a header block and reads
// the type, the name and the size. The other fields are checked later by
// checkFields, once the entry type is known to be acceptable.
func parseHeader(b *[blockSize]byte, off int64) (header, *RejectError) {
	h := header{blk: b, off: off, typ: b[offType]}
	reject := func(err error, format string, args ...any) (header, *RejectError) {
		return header{}, &RejectError{Offset: off, Err: err, Reason: fmt.Sprintf(format, args...)}
	}

	stored, ok := parseChecksumField(b[offChksum : offChksum+8])
	magic := string(b[offMagic : offMagic+8])
	posix := magic[:6] == "ustar\x00" && magic[6:] == "00"
	h.gnu = magic == "ustar  \x00"
	if off == 0 && (!ok || !posix && !h.gnu) {
		if m := compressionMagic(b[:]); m != "" {
			return reject(ErrCompressed, "input starts with the %s magic number", m)
		}
	}
	if !ok {
		if off == 0 && !posix && !h.gnu {
			return reject(ErrFormat, "not a tar archive")
		}
		return reject(ErrChecksum, "header at offset %d: malformed checksum field", off)
	}
	if sum := checksum(b); sum != stored {
		if off == 0 && !posix && !h.gnu {
			return reject(ErrFormat, "not a tar archive")
		}
		return reject(ErrChecksum, "header at offset %d: stored checksum %o, computed %o", off, stored, sum)
	}
	if !posix && !h.gnu {
		return reject(ErrFormat, "header at offset %d: unsupported format (magic %s; want POSIX ustar or GNU)", off, quote(magic))
	}

	name, ok := cString(b[offName : offName+100])
	if !ok {
		return reject(ErrFormat, "header at offset %d: bytes hidden after a NUL in the name field", off)
	}
	if !h.gnu {
		prefix, ok := cString(b[offPrefix:offPad])
		if !ok {
			return reject(ErrFormat, "header at offset %d: bytes hidden after a NUL in the prefix field", off)
		}
		if prefix != "" {
			name = prefix + "/" + name
		}
	}
	h.name = name

	size, err := parseSize(b[offSize : offSize+12])
	if err != "" {
		return reject(ErrFormat, "header at offset %d: %s", off, err)
	}
	h.size = size
	return h, nil
}

// checkFields checks the fields of a regular file or directory header that
// the canonical header replaces: they must be well formed, the link name
// must be empty, and reserved areas must be zero.
func checkFields(h header) (reason string) {
	b := h.blk
	for _, f := range []struct {
		name string
		off  int
		n    int
	}{
		{"mode", offMode, 8}, {"uid", offUID, 8}, {"gid", offGID, 8}, {"mtime", offMtime, 12},
		{"devmajor", offDevmajor, 8}, {"devminor", offDevminor, 8},
	} {
		if !numericOK(b[f.off : f.off+f.n]) {
			return fmt.Sprintf("malformed %s field", f.name)
		}
	}
	if !allZero(b[offLinkname : offLinkname+100]) {
		return "link name set on a regular file or directory"
	}
	if h.gnu {
		if !allZero(b[offGNUExtra:]) {
			return "GNU offset, sparse or realsize fields set"
		}
	} else if !allZero(b[offPad:]) {
		return "non-zero bytes in the header padding"
	}
	return ""
}

// mode returns the permission bits of the mode field (checked by
// checkFields).
func (h header) mode() int64 {
	v, _ := parseOctal(h.blk[offMode : offMode+8])
	return v
}

// checksum is the unsigned sum of the block's bytes with the checksum field
// counted as spaces.
func checksum(b *[blockSize]byte) int64 {
	var sum int64
	for i, c := range b {
		if i >= offChksum && i < offChksum+8 {
			c = ' '
		}
		sum += int64(c)
	}
	return sum
}

// parseChecksumField reads the checksum field: optional leading spaces,
// octal digits, then only NULs and spaces.
func parseChecksumField(f []byte) (int64, bool) {
	i := 0
	for i < len(f) && f[i] == ' ' {
		i++
	}
	start := i
	var v int64
	for i < len(f) && '0' <= f[i] && f[i] <= '7' {
		v = v<<3 | int64(f[i]-'0')
		i++
	}
	if i == start {
		return 0, false
	}
	for ; i < len(f); i++ {
		if f[i] != 0 && f[i] != ' ' {
			return 0, false
		}
	}
	return v, true
}

// parseOctal reads an octal numeric field: optional leading spaces, octal
// digits, then only NULs and spaces. A field of only NULs and spaces is 0.
func parseOctal(f []byte) (int64, bool) {
	i := 0
	for i < len(f) && f[i] == ' ' {
		i++
	}
	var v int64
	digits := 0
	for i < len(f) && '0' <= f[i] && f[i] <= '7' {
		if v > (1<<63-1)>>3 {
			return 0, false
		}
		v = v<<3 | int64(f[i]-'0')
		i++
		digits++
	}
	for ; i < len(f); i++ {
		if f[i] != 0 && f[i] != ' ' {
			return 0, false
		}
	}
	return v, true
}

// numericOK accepts an octal field or a GNU base-256 field of any value.
func numericOK(f []byte) bool {
	if f[0]&0x80 != 0 {
		return true
	}
	_, ok := parseOctal(f)
	return ok
}

// parseSize reads the size field: octal, or GNU base-256 for a
// non-negative value that fits int64.
func parseSize(f []byte) (int64, string) {
	if f[0]&0x80 != 0 {
		if f[0]&0x40 != 0 {
			return 0, "negative size"
		}
		v := int64(f[0] & 0x3f)
		for _, c := range f[1:] {
			if v > (1<<63-1)>>8 {
				return 0, "size does not fit 63 bits"
			}
			v = v<<8 | int64(c)
		}
		return v, ""
	}
	v, ok := parseOctal(f)
	if !ok {
		return 0, "malformed size field"
	}
	return v, ""
}

// cString returns the text of a NUL-terminated field, and false when bytes
// other than NUL follow the terminator (hidden data some parsers would
// read).
func cString(f []byte) (string, bool) {
	i := bytes.IndexByte(f, 0)
	if i < 0 {
		return string(f), true
	}
	if !allZero(f[i:]) {
		return "", false
	}
	return string(f[:i]), true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// typeName describes a type flag for messages.
func typeName(t byte) string {
	switch t {
	case '1':
		return "hard link"
	case '2':
		return "symbolic link"
	case '3':
		return "character device"
	case '4':
		return "block device"
	case '6':
		return "named pipe"
	case '7':
		return "contiguous file"
	case 'g':
		return "PAX global header"
	case 'K':
		return "GNU long link name"
	case 'S':
		return "GNU sparse file"
	case 'V':
		return "GNU volume label"
	case 'M':
		return "GNU multi-volume continuation"
	case 'N':
		return "GNU old long name"
	case 'D':
		return "GNU incremental directory"
	case 'X':
		return "Solaris extended header"
	}
	return "unknown type flag " + strconv.QuoteRune(rune(t))
}
