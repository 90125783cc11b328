package firewall_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/firewall/internal/breakout"
)

var update = flag.Bool("update", false, "rewrite the golden manifests in testdata/golden")

const corpusDir = "testdata/breakout"

// sentinels maps the names used in the corpus to the errors.
var sentinels = map[string]error{
	"ErrCompressed": firewall.ErrCompressed,
	"ErrFormat":     firewall.ErrFormat,
	"ErrChecksum":   firewall.ErrChecksum,
	"ErrTruncated":  firewall.ErrTruncated,
	"ErrTrailer":    firewall.ErrTrailer,
	"ErrSymlink":    firewall.ErrSymlink,
	"ErrHardlink":   firewall.ErrHardlink,
	"ErrDevice":     firewall.ErrDevice,
	"ErrFIFO":       firewall.ErrFIFO,
	"ErrSparse":     firewall.ErrSparse,
	"ErrType":       firewall.ErrType,
	"ErrTraversal":  firewall.ErrTraversal,
	"ErrName":       firewall.ErrName,
	"ErrWhiteout":   firewall.ErrWhiteout,
	"ErrDuplicate":  firewall.ErrDuplicate,
	"ErrConflict":   firewall.ErrConflict,
	"ErrHeaderOnly": firewall.ErrHeaderOnly,
	"ErrPAX":        firewall.ErrPAX,
	"ErrLimit":      firewall.ErrLimit,
	"ErrDenied":     firewall.ErrDenied,
}

// corpusCase is one row of testdata/breakout/cases.json.
type corpusCase struct {
	Name   string          `json:"name"`
	Desc   string          `json:"desc"`
	Want   string          `json:"want"`
	Policy json.RawMessage `json:"policy"`
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, breakout.IndexFile))
	require.NoError(t, err)
	var cs []corpusCase
	require.NoError(t, json.Unmarshal(data, &cs))
	require.NotEmpty(t, cs)
	return cs
}

func (c corpusCase) policy(t testing.TB) firewall.Policy {
	t.Helper()
	if len(c.Policy) == 0 {
		return firewall.Policy{}
	}
	p, err := firewall.ParsePolicy(c.Policy)
	require.NoError(t, err)
	return p
}

// TestCorpusUpToDate checks that testdata/breakout is exactly what the
// checked-in generator produces (run go generate ./firewall to refresh it).
func TestCorpusUpToDate(t *testing.T) {
	want, err := breakout.Files()
	require.NoError(t, err)
	entries, err := os.ReadDir(corpusDir)
	require.NoError(t, err)
	got := map[string][]byte{}
	var total int64
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(corpusDir, e.Name()))
		require.NoError(t, err)
		got[e.Name()] = data
		total += int64(len(data))
	}
	if len(got) != len(want) {
		t.Errorf("corpus has %d files, generator makes %d: run go generate ./firewall", len(got), len(want))
	}
	for name, data := range want {
		if !bytes.Equal(got[name], data) {
			t.Errorf("%s differs from the generator's output: run go generate ./firewall", name)
		}
	}
	if total > 2<<20 {
		t.Errorf("corpus is %d bytes, keep it under 2 MiB", total)
	}
}

// TestBreakouts runs every corpus archive through Filter and Extract and
// checks the decision, the error class and, for accepted archives, the
// golden manifest and the canonical-output properties.
func TestBreakouts(t *testing.T) {
	for _, c := range loadCorpus(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join(corpusDir, c.Name+".tar"))
			require.NoError(t, err)
			p := c.policy(t)
			var out bytes.Buffer
			m, err := firewall.Filter(t.Context(), bytes.NewReader(data), &out, p)

			dir := t.TempDir()
			em, eerr := firewall.Extract(t.Context(), bytes.NewReader(data), dir, p)

			if c.Want != breakout.Accept {
				sentinel, ok := sentinels[c.Want]
				require.True(t, ok, "unknown sentinel %s", c.Want)
				require.Error(t, err, "%s: want %s", c.Desc, c.Want)
				require.Nil(t, m)
				require.ErrorIs(t, err, sentinel, "got %v", err)
				var rej *firewall.RejectError
				require.ErrorAs(t, err, &rej)
				require.Equal(t, sentinel, errors.Unwrap(err))
				require.NotContains(t, err.Error(), "\n")
				require.True(t, strings.HasPrefix(err.Error(), sentinel.Error()), err.Error())

				require.ErrorIs(t, eerr, sentinel)
				require.Nil(t, em)
				left, err := os.ReadDir(dir)
				require.NoError(t, err)
				require.Empty(t, left, "Extract left files behind")
				return
			}
			require.NoError(t, err, c.Desc)
			require.NoError(t, eerr)
			if diff := cmp.Diff(m, em); diff != "" {
				t.Errorf("Extract manifest differs from Filter's (-filter +extract):\n%s", diff)
			}
			checkCanonical(t, out.Bytes(), m)
			checkExtracted(t, dir, out.Bytes())
			checkGolden(t, c.Name, m)
		})
	}
}

// checkGolden compares the manifest with testdata/golden/<name>.json.
func checkGolden(t *testing.T, name string, m *firewall.Manifest) {
	t.Helper()
	got, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run go test ./firewall -run TestBreakouts -update")
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("manifest differs from %s (-want +got):\n%s", path, diff)
	}
}

// checkCanonical verifies the properties every accepted output has: it is
// a fixed point of Filter, archive/tar reads it back as only regular files
// and directories with local names and canonical headers, and it matches
// the manifest.
func checkCanonical(t *testing.T, out []byte, m *firewall.Manifest) {
	t.Helper()
	require.Equal(t, sha256Hex(out), m.ArchiveSHA256)
	require.Equal(t, int64(len(out)), m.ArchiveBytes)

	var again bytes.Buffer
	m2, err := firewall.Filter(t.Context(), bytes.NewReader(out), &again, firewall.Policy{MaxEntries: firewall.CeilingMaxEntries, MaxTotalBytes: 1 << 40, MaxInputBytes: 1 << 40, MaxFileBytes: firewall.CeilingMaxFileBytes})
	require.NoError(t, err, "canonical output rejected on a second pass")
	require.True(t, bytes.Equal(out, again.Bytes()), "second pass changed the bytes")
	require.Equal(t, m.ArchiveSHA256, m2.ArchiveSHA256)

	tr := tar.NewReader(bytes.NewReader(out))
	var files, dirs int
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Zero(t, h.Uid)
		require.Zero(t, h.Gid)
		require.Empty(t, h.Uname)
		require.Empty(t, h.Gname)
		require.Empty(t, h.Linkname)
		require.True(t, h.ModTime.Equal(time.Unix(0, 0)), "mtime %v", h.ModTime)
		require.Empty(t, h.Xattrs) //nolint:staticcheck // checking nothing leaks through
		for k := range h.PAXRecords {
			require.Equal(t, "path", k)
		}
		name := strings.TrimSuffix(h.Name, "/")
		require.True(t, filepath.IsLocal(name), "non-local name %q", h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			require.Equal(t, int64(0o755), h.Mode)
			require.True(t, strings.HasSuffix(h.Name, "/"))
			require.Equal(t, m.Dirs[dirs], name)
			dirs++
		case tar.TypeReg:
			require.Contains(t, []int64{0o644, 0o755}, h.Mode)
			f := m.Files[files]
			require.Equal(t, f.Path, h.Name)
			require.Equal(t, f.Size, h.Size)
			require.Equal(t, int64(f.Mode), h.Mode)
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			require.Equal(t, f.SHA256, sha256Hex(data))
			files++
		default:
			t.Fatalf("entry %q has type %q", h.Name, h.Typeflag)
		}
	}
	require.Equal(t, len(m.Files), files)
	require.Equal(t, len(m.Dirs), dirs)
	require.Equal(t, files+dirs, m.Entries)
}
