package firewall_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// tarEntry is what a test compares of one entry.
type tarEntry struct {
	Name string
	Type byte
	Mode int64
	Data string
}

// readTar lists the entries of a tar stream with archive/tar.
func readTar(t testing.TB, b []byte) []tarEntry {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var out []tarEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, tarEntry{Name: h.Name, Type: h.Typeflag, Mode: h.Mode, Data: string(data)})
	}
}

// checkExtracted compares the tree Extract made with the canonical archive.
func checkExtracted(t *testing.T, dir string, canonical []byte) {
	t.Helper()
	want := map[string]tarEntry{}
	for _, e := range readTar(t, canonical) {
		e.Name = strings.TrimSuffix(e.Name, "/")
		want[e.Name] = e
	}
	got := map[string]tarEntry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := tarEntry{Name: filepath.ToSlash(rel), Mode: int64(info.Mode().Perm())}
		switch {
		case info.IsDir():
			e.Type = tar.TypeDir
		case info.Mode().IsRegular():
			e.Type = tar.TypeReg
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Data = string(data)
		default:
			t.Errorf("%s: unexpected file type %v", rel, info.Mode())
		}
		got[e.Name] = e
		return nil
	})
	require.NoError(t, err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("extracted tree differs from the canonical archive (-want +got):\n%s", diff)
	}
}
