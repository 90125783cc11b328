// Package breakout builds the firewall's table of hostile and benign
// archives. The generator (../gencorpus) writes them to
// firewall/testdata/breakout, and the firewall tests check that the files
// there are exactly what this package builds.
//
// Three ways of building an archive are used: W writes with archive/tar's
// Writer; Arc assembles raw header blocks, for what the Writer refuses to
// write (bad checksums, hidden bytes, PAX overrides, sparse records,
// truncation, trailing data); patches flip bytes in a Writer's output.
package breakout

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Ent is one entry for W.
type Ent struct {
	Hdr  tar.Header
	Data string
}

// Reg is a regular file entry with mode 0644.
func Reg(name, data string) Ent {
	return Ent{Hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}, Data: data}
}

// Dir is a directory entry with mode 0755.
func Dir(name string) Ent {
	return Ent{Hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

// W writes entries with archive/tar in the given format (tar.FormatUnknown
// lets the Writer choose). It panics if the Writer refuses: a case that needs
// such bytes must use Arc.
func W(format tar.Format, ents ...Ent) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range ents {
		h := e.Hdr
		if h.Format == tar.FormatUnknown {
			h.Format = format
		}
		if err := tw.WriteHeader(&h); err != nil {
			panic(fmt.Sprintf("breakout: WriteHeader %q: %v", h.Name, err))
		}
		if _, err := tw.Write([]byte(e.Data)); err != nil {
			panic(fmt.Sprintf("breakout: Write %q: %v", h.Name, err))
		}
	}
	if err := tw.Close(); err != nil {
		panic(fmt.Sprintf("breakout: Close: %v", err))
	}
	return b.Bytes()
}

// Raw describes one header block field by field. Zero fields take the
// values a plain regular file would have.
type Raw struct {
	Name     string // may hold a NUL to hide bytes after it
	Prefix   string
	Mode     int64
	Size     int64
	Typeflag byte
	Linkname string
	// Magic and Version default to POSIX ustar ("ustar\x00", "00"); GNU sets
	// the GNU values.
	Magic, Version string
	GNU            bool
	// SizeField, when set, is copied verbatim into the 12-byte size field
	// (base-256 and malformed sizes).
	SizeField []byte
	// Patch edits the block before the checksum is computed.
	Patch func(b []byte)
	// BadChecksum stores a checksum off by one.
	BadChecksum bool
}

// Block renders the header block with a valid (or deliberately wrong)
// checksum.
func (h Raw) Block() []byte {
	b := make([]byte, 512)
	copy(b[0:100], h.Name)
	mode := h.Mode
	if mode == 0 {
		mode = 0o644
	}
	copy(b[100:108], fmt.Sprintf("%07o\x00", mode))
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	if h.SizeField != nil {
		copy(b[124:136], h.SizeField)
	} else {
		copy(b[124:136], fmt.Sprintf("%011o\x00", h.Size))
	}
	copy(b[136:148], "00000000000\x00")
	b[156] = h.Typeflag
	if b[156] == 0 && h.Typeflag == 0 {
		b[156] = '0'
	}
	copy(b[157:257], h.Linkname)
	switch {
	case h.Magic != "" || h.Version != "":
		copy(b[257:263], h.Magic)
		copy(b[263:265], h.Version)
	case h.GNU:
		copy(b[257:265], "ustar  \x00")
	default:
		copy(b[257:263], "ustar\x00")
		copy(b[263:265], "00")
	}
	copy(b[329:337], "0000000\x00")
	copy(b[337:345], "0000000\x00")
	copy(b[345:500], h.Prefix)
	if h.Patch != nil {
		h.Patch(b)
	}
	Recheck(b)
	if h.BadChecksum {
		copy(b[148:156], fmt.Sprintf("%06o\x00 ", checksumOf(b)+1))
	}
	return b
}

// Recheck recomputes the checksum of the header block b in place.
func Recheck(b []byte) {
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", checksumOf(b)))
}

func checksumOf(b []byte) int64 {
	var sum int64
	for i, c := range b[:512] {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int64(c)
	}
	return sum
}

// PAXRecord formats one "<len> key=value\n" record.
func PAXRecord(k, v string) string {
	body := " " + k + "=" + v + "\n"
	n := len(body)
	for {
		s := strconv.Itoa(n) + body
		if len(s) == n {
			return s
		}
		n = len(s)
	}
}

// Base256 renders v as a 12-byte GNU base-256 numeric field.
func Base256(v int64) []byte {
	f := make([]byte, 12)
	for i := 11; i > 0; i-- {
		f[i] = byte(v)
		v >>= 8
	}
	f[0] = 0x80
	return f
}

// Arc assembles an archive from raw pieces.
type Arc struct{ b []byte }

// H appends a header block.
func (a *Arc) H(h Raw) *Arc {
	a.b = append(a.b, h.Block()...)
	return a
}

// D appends data padded with zeros to a block boundary.
func (a *Arc) D(data string) *Arc {
	a.b = append(a.b, data...)
	a.b = append(a.b, make([]byte, (512-len(data)%512)%512)...)
	return a
}

// Bytes appends raw bytes.
func (a *Arc) Bytes(b []byte) *Arc {
	a.b = append(a.b, b...)
	return a
}

// PAX appends a PAX extended header ('x') holding the records, in order.
func (a *Arc) PAX(kv ...string) *Arc {
	return a.ext('x', kv...)
}

// Global appends a PAX global header ('g').
func (a *Arc) Global(kv ...string) *Arc {
	return a.ext('g', kv...)
}

func (a *Arc) ext(typ byte, kv ...string) *Arc {
	var recs string
	for i := 0; i+1 < len(kv); i += 2 {
		recs += PAXRecord(kv[i], kv[i+1])
	}
	a.H(Raw{Name: "PaxHeaders/x", Typeflag: typ, Size: int64(len(recs))})
	return a.D(recs)
}

// File appends a regular file header and its data.
func (a *Arc) File(name, data string) *Arc {
	return a.H(Raw{Name: name, Size: int64(len(data))}).D(data)
}

// End appends the two-block end-of-archive marker.
func (a *Arc) End() *Arc {
	a.b = append(a.b, make([]byte, 1024)...)
	return a
}

// Out returns the archive.
func (a *Arc) Out() []byte { return a.b }

// IndexFile is the name of the corpus index written next to the archives.
const IndexFile = "cases.json"

// Files renders the corpus as file name -> contents: one "<name>.tar" per
// case and IndexFile listing the cases in order.
func Files() (map[string][]byte, error) {
	cs := All()
	files := make(map[string][]byte, len(cs)+1)
	for _, c := range cs {
		name := c.Name + ".tar"
		if _, dup := files[name]; dup {
			return nil, fmt.Errorf("breakout: duplicate case %s", c.Name)
		}
		files[name] = c.Data
	}
	idx, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return nil, err
	}
	files[IndexFile] = append(idx, '\n')
	return files, nil
}
