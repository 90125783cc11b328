package firewall_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/firewall"
)

// FuzzFilter checks the firewall's central properties on arbitrary input:
//   - a rejection is a one-line *RejectError wrapping a package sentinel;
//   - an accepted archive, filtered again, is accepted and reproduced byte
//     for byte, with the same manifest;
//   - archive/tar reads the output as regular files and directories only,
//     with local, valid names, canonical headers and the contents the
//     manifest lists.
//
// The seeds are the breakout corpus in testdata/breakout; crashers found by
// go test -fuzz land in testdata/fuzz/FuzzFilter.
func FuzzFilter(f *testing.F) {
	const maxSeed = 16 << 10
	seeds, err := filepath.Glob(filepath.Join(corpusDir, "*.tar"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in %s: %v", corpusDir, err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		// The largest cases (128 KiB of trailing zeros, 101 entries) are
		// covered by TestBreakouts; as seeds they only slow the fuzzer's
		// minimisation of the inputs derived from them.
		if len(data) > maxSeed {
			continue
		}
		f.Add(data)
	}
	known := map[error]bool{}
	for _, s := range sentinels {
		known[s] = true
	}
	// Small limits keep each run fast; the deny list exercises both paths.
	policy := firewall.Policy{
		MaxEntries: 500, MaxFileBytes: 1 << 20, MaxTotalBytes: 4 << 20, MaxInputBytes: 4 << 20,
		MaxNameLen: 300, MaxDepth: 16,
		Deny: []string{"*.pth", ".git/", "tests/**/conftest.py"}, DenyAction: firewall.DenyDrop,
	}
	// The canonical form can be larger than its input (synthesised
	// directories, PAX headers), so the second pass allows more input.
	again := policy
	again.MaxInputBytes = 1 << 30

	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		m, err := firewall.Filter(context.Background(), bytes.NewReader(data), &out, policy)
		if err != nil {
			var rej *firewall.RejectError
			if !errors.As(err, &rej) {
				t.Fatalf("error is not a rejection: %v", err)
			}
			if !known[errors.Unwrap(err)] {
				t.Fatalf("rejection wraps an unknown error: %v", err)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error: %q", err.Error())
			}
			return
		}
		canon := out.Bytes()

		var second bytes.Buffer
		m2, err := firewall.Filter(context.Background(), bytes.NewReader(canon), &second, again)
		if err != nil {
			t.Fatalf("canonical output rejected: %v", err)
		}
		if !bytes.Equal(canon, second.Bytes()) {
			t.Fatalf("second pass changed the bytes")
		}
		if m.ArchiveSHA256 != m2.ArchiveSHA256 || m.ArchiveSHA256 != sha256Hex(canon) {
			t.Fatalf("digests differ: %s %s %s", m.ArchiveSHA256, m2.ArchiveSHA256, sha256Hex(canon))
		}
		if len(m2.Dropped) != 0 || len(m2.Normalised) != 0 {
			t.Fatalf("second pass dropped or normalised: %v %v", m2.Dropped, m2.Normalised)
		}

		tr := tar.NewReader(bytes.NewReader(canon))
		files, dirs := 0, 0
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("archive/tar cannot read the output: %v", err)
			}
			name := h.Name
			if h.Typeflag == tar.TypeDir {
				name = strings.TrimSuffix(name, "/")
			}
			if !filepath.IsLocal(name) || !fs.ValidPath(name) || name == "." {
				t.Fatalf("non-local or invalid name %q", h.Name)
			}
			if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.Linkname != "" || h.ModTime.Unix() != 0 {
				t.Fatalf("non-canonical header %+v", h)
			}
			for k := range h.PAXRecords {
				if k != "path" {
					t.Fatalf("pax record %q in the output", k)
				}
			}
			switch h.Typeflag {
			case tar.TypeDir:
				if h.Mode != 0o755 || dirs >= len(m.Dirs) || m.Dirs[dirs] != name {
					t.Fatalf("directory %q does not match the manifest", h.Name)
				}
				dirs++
			case tar.TypeReg:
				body, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				if files >= len(m.Files) {
					t.Fatalf("file %q not in the manifest", h.Name)
				}
				mf := m.Files[files]
				if mf.Path != name || mf.Size != int64(len(body)) || mf.SHA256 != sha256Hex(body) || int64(mf.Mode) != h.Mode ||
					(h.Mode != 0o644 && h.Mode != 0o755) {
					t.Fatalf("file %q does not match the manifest entry %+v", h.Name, mf)
				}
				files++
			default:
				t.Fatalf("entry %q of type %q in the output", h.Name, h.Typeflag)
			}
		}
		if files != len(m.Files) || dirs != len(m.Dirs) {
			t.Fatalf("output has %d files and %d dirs, manifest %d and %d", files, dirs, len(m.Files), len(m.Dirs))
		}
	})
}
