package firewall_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/firewall/internal/breakout"
)

// randomTree builds a benign archive in the given format, with a random
// tree of files (some executable, some empty, some long-named) and returns
// it with the canonical entries expected in the output.
func randomTree(t testing.TB, seed uint64, format tar.Format) ([]byte, []tarEntry) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var ents []breakout.Ent
	var want []tarEntry
	dirs := []string{""}
	for i := range 40 {
		parent := dirs[rng.IntN(len(dirs))]
		base := fmt.Sprintf("n%02d", i)
		if rng.IntN(5) == 0 {
			base = strings.Repeat("L", 60+rng.IntN(80)) + base
			if format == tar.FormatUSTAR {
				base = strings.Repeat("L", 40) + fmt.Sprintf("n%02d", i)
			}
		}
		if format == tar.FormatUSTAR && len(parent)+len(base) > 150 {
			parent = ""
		}
		name := parent + base
		switch rng.IntN(4) {
		case 0:
			ents = append(ents, breakout.Ent{Hdr: tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o700 + int64(rng.IntN(0o100)),
				Uid: rng.IntN(5000), ModTime: time.Unix(int64(rng.IntN(1<<31)), 0)}})
			want = append(want, tarEntry{Name: name + "/", Type: tar.TypeDir, Mode: 0o755})
			dirs = append(dirs, name+"/")
		default:
			data := make([]byte, rng.IntN(3)*rng.IntN(3000))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			mode := int64(rng.IntN(0o1000))
			wantMode := int64(0o644)
			if mode&0o111 != 0 {
				wantMode = 0o755
			}
			ents = append(ents, breakout.Ent{Hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data)),
				Uname: "u", Gname: "g", ModTime: time.Unix(int64(rng.IntN(1<<31)), 0)}, Data: string(data)})
			want = append(want, tarEntry{Name: name, Type: tar.TypeReg, Mode: wantMode, Data: string(data)})
		}
	}
	return breakout.W(format, ents...), want
}

// TestRoundTripBenign: benign archives in every format come out with the
// same names and contents and canonical headers.
func TestRoundTripBenign(t *testing.T) {
	for _, format := range []tar.Format{tar.FormatUSTAR, tar.FormatPAX, tar.FormatGNU} {
		for seed := range uint64(5) {
			t.Run(fmt.Sprintf("%v/%d", format, seed), func(t *testing.T) {
				t.Parallel()
				in, want := randomTree(t, seed, format)
				var out bytes.Buffer
				m, err := firewall.Filter(t.Context(), bytes.NewReader(in), &out, firewall.Policy{})
				require.NoError(t, err)
				if diff := cmp.Diff(want, readTar(t, out.Bytes())); diff != "" {
					t.Errorf("canonical entries (-want +got):\n%s", diff)
				}
				checkCanonical(t, out.Bytes(), m)
			})
		}
	}
}

// TestReaderShapes: the result does not depend on how the source splits its
// bytes, nor on whether the context can be cancelled (which switches reads
// to a goroutine).
func TestReaderShapes(t *testing.T) {
	data, _ := randomTree(t, 42, tar.FormatPAX)
	var want bytes.Buffer
	wm, err := firewall.Filter(context.Background(), bytes.NewReader(data), &want, firewall.Policy{})
	require.NoError(t, err)
	for name, r := range map[string]func() io.Reader{
		"one-byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
		"data-err": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) },
		"chunk-777": func() io.Reader {
			return &chunky{data: data, n: 777}
		},
	} {
		for _, cancellable := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cancellable=%v", name, cancellable), func(t *testing.T) {
				ctx := context.Background()
				if cancellable {
					ctx = t.Context()
				}
				var out bytes.Buffer
				m, err := firewall.Filter(ctx, r(), &out, firewall.Policy{})
				require.NoError(t, err)
				require.Equal(t, want.Bytes(), out.Bytes())
				require.Equal(t, wm, m)
			})
		}
	}
}

type chunky struct {
	data []byte
	n    int
}

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[n:]
	return n, nil
}

// TestCanonicalBytes pins the exact header layout.
func TestCanonicalBytes(t *testing.T) {
	in := breakout.W(tar.FormatPAX,
		breakout.Ent{Hdr: tar.Header{Name: "bin/tool", Typeflag: tar.TypeReg, Mode: 0o4711, Size: 2, Uid: 7, Uname: "x",
			ModTime: time.Unix(1234567890, 5)}, Data: "hi"},
		breakout.Reg(strings.Repeat("p", 90)+"/"+strings.Repeat("n", 90), "long"),
		breakout.Reg("\u00e9t\u00e9.txt", "u"),
	)
	var out bytes.Buffer
	_, err := firewall.Filter(t.Context(), bytes.NewReader(in), &out, firewall.Policy{})
	require.NoError(t, err)
	b := out.Bytes()

	// 0: synthesised "bin/".
	require.Equal(t, "bin/", cstr(b[0:100]))
	require.Equal(t, byte('5'), b[156])
	require.Equal(t, "0000755\x00", string(b[100:108]))
	// 512: bin/tool, setuid cleared, exec kept, owner and time zeroed.
	h := b[512:1024]
	require.Equal(t, "bin/tool", cstr(h[0:100]))
	require.Equal(t, "0000755\x00", string(h[100:108]))
	require.Equal(t, "0000000\x00", string(h[108:116]))
	require.Equal(t, "0000000\x00", string(h[116:124]))
	require.Equal(t, "00000000002\x00", string(h[124:136]))
	require.Equal(t, "00000000000\x00", string(h[136:148]))
	require.Equal(t, byte('0'), h[156])
	require.Equal(t, "ustar\x0000", string(h[257:265]))
	require.Equal(t, make([]byte, 64), h[265:329], "uname and gname must be empty")
	require.Equal(t, "hi", string(b[1024:1026]))
	// 1536: the synthesised 91-byte directory fits the name field.
	require.Equal(t, strings.Repeat("p", 90)+"/", cstr(b[1536:1636]))
	// 2048: a 181-byte ASCII path is split into prefix and name: no PAX.
	h = b[2048:2560]
	require.Equal(t, strings.Repeat("n", 90), cstr(h[0:100]))
	require.Equal(t, strings.Repeat("p", 90), cstr(h[345:500]))
	// 3072: the non-ASCII name goes through a PAX header with only a path.
	h = b[3072:3584]
	require.Equal(t, byte('x'), h[156])
	require.Equal(t, "././@PaxHeader", cstr(h[0:100]))
	rec := "path=\u00e9t\u00e9.txt\n"
	rec = fmt.Sprintf("%d %s", len(rec)+3, rec)
	require.Equal(t, rec, cstr(b[3584:4096]))
	h = b[4096:4608]
	require.Equal(t, "__t__.txt", cstr(h[0:100]), "ASCII placeholder in the ustar name field")
	// End: exactly two zero blocks after the last data block.
	require.Len(t, b, 4608+512+1024)
	require.Equal(t, make([]byte, 1024), b[len(b)-1024:])
}

func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// TestDeterministic: the same input gives the same bytes; entries keep their
// input order, so reordering changes the digest.
func TestDeterministic(t *testing.T) {
	a := breakout.W(tar.FormatUnknown, breakout.Reg("a", "1"), breakout.Reg("b", "2"))
	b := breakout.W(tar.FormatUnknown, breakout.Reg("b", "2"), breakout.Reg("a", "1"))
	digest := func(in []byte) string {
		m, err := firewall.Filter(t.Context(), bytes.NewReader(in), io.Discard, firewall.Policy{})
		require.NoError(t, err)
		return m.ArchiveSHA256
	}
	require.Equal(t, digest(a), digest(a))
	require.NotEqual(t, digest(a), digest(b))
}

// TestSynthesisAndMerge: missing parents are emitted before the first entry
// that needs them, and a later explicit directory entry is merged.
func TestSynthesisAndMerge(t *testing.T) {
	in := breakout.W(tar.FormatUnknown,
		breakout.Reg("a/b/c.txt", "c"), breakout.Dir("a/"), breakout.Reg("a/b/d.txt", "d"), breakout.Dir("a/e/"))
	var out bytes.Buffer
	m, err := firewall.Filter(t.Context(), bytes.NewReader(in), &out, firewall.Policy{})
	require.NoError(t, err)
	got := readTar(t, out.Bytes())
	var names []string
	for _, e := range got {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{"a/", "a/b/", "a/b/c.txt", "a/b/d.txt", "a/e/"}, names)
	require.Equal(t, []firewall.Note{
		{Path: "a", Change: "parent directory synthesised"},
		{Path: "a/b", Change: "parent directory synthesised"},
	}, m.Normalised)
	require.Equal(t, 4, m.InputEntries)
	require.Equal(t, 5, m.Entries)
}

// endless yields header bytes, then zeros forever, counting what was read.
type endless struct {
	head []byte
	read int64
}

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, e.head)
	e.head = e.head[n:]
	clear(p[n:])
	e.read += int64(len(p))
	return len(p), nil
}

// TestDeclaredSizeNotTrusted: a 20 GiB or 1 TiB declared size is rejected
// after reading a few blocks, without allocating by the declared size.
func TestDeclaredSizeNotTrusted(t *testing.T) {
	raw := func(h breakout.Raw) []byte { return h.Block() }
	tests := map[string]struct {
		head []byte
		want error
	}{
		"base256-20GiB": {raw(breakout.Raw{Name: "big", SizeField: breakout.Base256(20 << 30)}), firewall.ErrLimit},
		"octal-8GiB":    {raw(breakout.Raw{Name: "big", Size: 1<<33 - 1}), firewall.ErrLimit},
		"pax-20GiB":     {(&breakout.Arc{}).PAX("size", "21474836480").H(breakout.Raw{Name: "big"}).Out(), firewall.ErrLimit},
		"pax-sparse-1TiB": {(&breakout.Arc{}).PAX("GNU.sparse.major", "1", "GNU.sparse.minor", "0",
			"GNU.sparse.realsize", "1099511627776").H(breakout.Raw{Name: "s", Size: 1 << 40}).Out(), firewall.ErrSparse},
		"gnu-sparse-1TiB": {raw(breakout.Raw{Name: "s", Typeflag: 'S', GNU: true, SizeField: breakout.Base256(1 << 40)}), firewall.ErrSparse},
		"pax-header-1GiB": {raw(breakout.Raw{Name: "p", Typeflag: 'x', Size: 1 << 30}), firewall.ErrLimit},
		"long-name-1GiB":  {raw(breakout.Raw{Name: "././@LongLink", Typeflag: 'L', GNU: true, Size: 1 << 30}), firewall.ErrLimit},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			policy := firewall.Policy{MaxFileBytes: firewall.CeilingMaxFileBytes - 1, MaxTotalBytes: 1 << 50, MaxInputBytes: 1 << 50}
			src := &endless{head: tc.head}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := firewall.Filter(context.Background(), src, io.Discard, policy)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, tc.want)
			require.Less(t, src.read, int64(1<<20), "read %d bytes", src.read)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
		})
	}
}

// staller delivers its bytes, then blocks until released.
type staller struct {
	head    []byte
	release chan struct{}
}

func (s *staller) Read(p []byte) (int, error) {
	if len(s.head) > 0 {
		n := copy(p, s.head)
		s.head = s.head[n:]
		return n, nil
	}
	<-s.release
	return 0, io.EOF
}

// TestTimeBudget: a source that stalls past the context deadline is
// rejected with ErrLimit; a cancelled context is an error, not a rejection.
func TestTimeBudget(t *testing.T) {
	head := breakout.W(tar.FormatUnknown, breakout.Reg("a", "a"))[:1024]
	t.Run("deadline", func(t *testing.T) {
		s := &staller{head: head, release: make(chan struct{})}
		t.Cleanup(func() { close(s.release) })
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := firewall.Filter(ctx, s, io.Discard, firewall.Policy{})
		require.ErrorIs(t, err, firewall.ErrLimit)
		require.Contains(t, err.Error(), "time budget")
		require.Less(t, time.Since(start), 5*time.Second)
	})
	t.Run("cancel", func(t *testing.T) {
		s := &staller{head: head, release: make(chan struct{})}
		t.Cleanup(func() { close(s.release) })
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := firewall.Filter(ctx, s, io.Discard, firewall.Policy{})
		require.ErrorIs(t, err, context.Canceled)
		var rej *firewall.RejectError
		require.False(t, errors.As(err, &rej), "cancellation is not a verdict")
	})
	t.Run("expired-before-start", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		_, err := firewall.Filter(ctx, bytes.NewReader(head), io.Discard, firewall.Policy{})
		require.ErrorIs(t, err, firewall.ErrLimit)
	})
}

type failWriter struct{ after int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.after -= len(p); w.after < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// TestIOErrors: read and write failures are errors, not rejections.
func TestIOErrors(t *testing.T) {
	in := breakout.W(tar.FormatUnknown, breakout.Reg("a", strings.Repeat("a", 200<<10)))
	var rej *firewall.RejectError

	_, err := firewall.Filter(t.Context(), iotest.TimeoutReader(bytes.NewReader(in)), io.Discard, firewall.Policy{})
	require.ErrorIs(t, err, iotest.ErrTimeout)
	require.False(t, errors.As(err, &rej))

	_, err = firewall.Filter(t.Context(), bytes.NewReader(in), &failWriter{after: 100 << 10}, firewall.Policy{})
	require.ErrorContains(t, err, "disk full")
	require.False(t, errors.As(err, &rej))

	_, err = firewall.Filter(t.Context(), bytes.NewReader(in), io.Discard, firewall.Policy{MaxDepth: -1})
	require.ErrorContains(t, err, "negative")
	require.False(t, errors.As(err, &rej))
}

// TestRejectErrorText: one line, the entry quoted, archive text escaped.
func TestRejectErrorText(t *testing.T) {
	in := breakout.W(tar.FormatUnknown, breakout.Ent{Hdr: tar.Header{Name: "evil\n\x1b[31mlink", Typeflag: tar.TypeSymlink, Linkname: "/etc\npasswd"}})
	_, err := firewall.Filter(t.Context(), bytes.NewReader(in), io.Discard, firewall.Policy{})
	require.EqualError(t, err, `firewall: symlink: entry "evil\n\x1b[31mlink": symbolic link to "/etc\npasswd"`)
	var rej *firewall.RejectError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, "evil\n\x1b[31mlink", rej.Entry)
	require.Equal(t, int64(0), rej.Offset)

	long := &firewall.RejectError{Entry: strings.Repeat("\u00e9", 300), Reason: "r", Err: firewall.ErrName}
	require.Less(t, len(long.Error()), 300)
	require.True(t, strings.HasSuffix(long.Error(), `"...: r`), long.Error())
}

// TestLimits exercises each limit at and just over its value.
func TestLimits(t *testing.T) {
	reg := breakout.Reg
	tests := []struct {
		name   string
		policy firewall.Policy
		in     []byte
		want   error
	}{
		{"file-at-limit", firewall.Policy{MaxFileBytes: 10}, breakout.W(0, reg("a", "0123456789")), nil},
		{"file-over", firewall.Policy{MaxFileBytes: 10}, breakout.W(0, reg("a", "0123456789X")), firewall.ErrLimit},
		{"total-at-limit", firewall.Policy{MaxTotalBytes: 4}, breakout.W(0, reg("a", "01"), reg("b", "23")), nil},
		{"total-over", firewall.Policy{MaxTotalBytes: 4}, breakout.W(0, reg("a", "01"), reg("b", "234")), firewall.ErrLimit},
		{"entries-at-limit", firewall.Policy{MaxEntries: 2}, breakout.W(0, reg("a", ""), reg("b", "")), nil},
		{"entries-over", firewall.Policy{MaxEntries: 2}, breakout.W(0, reg("a", ""), reg("b", ""), reg("c", "")), firewall.ErrLimit},
		{"implied-dirs-over", firewall.Policy{MaxEntries: 2}, breakout.W(0, reg("a/b/c", "")), firewall.ErrLimit},
		{"name-at-limit", firewall.Policy{MaxNameLen: 5}, breakout.W(0, reg("ab/cd", "")), nil},
		{"name-over", firewall.Policy{MaxNameLen: 5}, breakout.W(0, reg("ab/cde", "")), firewall.ErrLimit},
		{"component-at-limit", firewall.Policy{MaxComponentLen: 3}, breakout.W(0, reg("abc/def", "")), nil},
		{"component-over", firewall.Policy{MaxComponentLen: 3}, breakout.W(0, reg("abc/defg", "")), firewall.ErrLimit},
		{"depth-at-limit", firewall.Policy{MaxDepth: 3}, breakout.W(0, reg("a/b/c", "")), nil},
		{"depth-over", firewall.Policy{MaxDepth: 3}, breakout.W(0, reg("a/b/c/d", "")), firewall.ErrLimit},
		{"input-at-limit", firewall.Policy{MaxInputBytes: 2048}, breakout.W(0, reg("a", "x")), nil},
		{"input-over", firewall.Policy{MaxInputBytes: 2047}, breakout.W(0, reg("a", "x")), firewall.ErrLimit},
		{"long-name-within-name-limit", firewall.Policy{MaxNameLen: 200, MaxDepth: 100}, breakout.W(tar.FormatGNU, reg(strings.Repeat("a/", 90)+"b", "")), nil},
		{"gnu-long-name-over-name-limit", firewall.Policy{MaxNameLen: 150, MaxDepth: 100}, breakout.W(tar.FormatGNU, reg(strings.Repeat("a/", 90)+"b", "")), firewall.ErrLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := firewall.Filter(t.Context(), bytes.NewReader(tc.in), io.Discard, tc.policy)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// TestDenylist checks the glob semantics through Filter.
func TestDenylist(t *testing.T) {
	tests := []struct {
		pattern string
		path    string
		dir     bool
		denied  bool
	}{
		{"conftest.py", "conftest.py", false, true},
		{"conftest.py", "a/b/conftest.py", false, true},
		{"conftest.py", "a/conftest.py.bak", false, false},
		{"conftest.py", "conftest.py/x", false, true}, // a directory named so denies its contents
		{"**/conftest.py", "conftest.py", false, true},
		{"**/conftest.py", "x/y/conftest.py", false, true},
		{"*.pth", "site-packages/evil.pth", false, true},
		{"*.pth", "evil.pthx", false, false},
		{".git/", ".git/config", false, true},
		{".git/", "sub/.git/objects/ab/cd", false, true},
		{".git/", ".git", false, false},
		{".git/", ".git", true, true},
		{".git", ".git", false, true},
		{"/setup.cfg", "setup.cfg", false, true},
		{"/setup.cfg", "pkg/setup.cfg", false, false},
		{"tests/*.py", "tests/test_a.py", false, true},
		{"tests/*.py", "tests/sub/test_a.py", false, false},
		{"tests/*.py", "src/tests/test_a.py", false, false},
		{"tests/**/*.py", "tests/sub/deeper/test_a.py", false, true},
		{"tests/**", "tests", true, true},
		{"a/**/b/**/c", "a/x/b/y/z/c", false, true},
		{"a/**/b/**/c", "a/c", false, false},
		{"[Mm]akefile", "sub/makefile", false, true},
		{"Makefile", "MAKEFILE", false, true},
		{"?.txt", "ab.txt", false, false},
		{"STRASSE", "stra\u00dfe", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"|"+tc.path, func(t *testing.T) {
			var in []byte
			if tc.dir {
				in = breakout.W(0, breakout.Dir(tc.path+"/"))
			} else {
				in = breakout.W(0, breakout.Reg(tc.path, "x"))
			}
			_, err := firewall.Filter(t.Context(), bytes.NewReader(in), io.Discard, firewall.Policy{Deny: []string{tc.pattern}})
			if tc.denied {
				require.ErrorIs(t, err, firewall.ErrDenied)
			} else {
				require.NoError(t, err)
			}
			m, err := firewall.Filter(t.Context(), bytes.NewReader(in), io.Discard,
				firewall.Policy{Deny: []string{tc.pattern}, DenyAction: firewall.DenyDrop})
			require.NoError(t, err)
			require.Equal(t, tc.denied, len(m.Dropped) > 0, "dropped: %v", m.Dropped)
		})
	}
}

// TestPolicyJSON covers the file form of a Policy.
func TestPolicyJSON(t *testing.T) {
	p, err := firewall.ParsePolicy([]byte(`{"max_entries": 5, "max_file_bytes": 100, "deny": [".git/", "conftest.py"], "deny_action": "drop"}`))
	require.NoError(t, err)
	require.Equal(t, firewall.Policy{MaxEntries: 5, MaxFileBytes: 100, Deny: []string{".git/", "conftest.py"}, DenyAction: firewall.DenyDrop}, p)

	p, err = firewall.ParsePolicy([]byte(`{}`))
	require.NoError(t, err)
	require.Equal(t, firewall.Policy{}, p)

	for name, in := range map[string]string{
		"unknown-field":  `{"max_entries": 5, "max_entrys": 6}`,
		"trailing":       `{} {}`,
		"negative":       `{"max_depth": -1}`,
		"over-ceiling":   `{"max_file_bytes": 8589934592}`,
		"bad-action":     `{"deny_action": "ignore"}`,
		"bad-pattern":    `{"deny": ["[a-"]}`,
		"empty-pattern":  `{"deny": ["/"]}`,
		"dotdot-pattern": `{"deny": ["a/../b"]}`,
		"not-object":     `[]`,
		"wrong-type":     `{"max_entries": "5"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := firewall.ParsePolicy([]byte(in))
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), "firewall: policy"), err.Error())
		})
	}

	out, err := json.Marshal(firewall.Policy{MaxDepth: 3, DenyAction: firewall.DenyDrop})
	require.NoError(t, err)
	require.JSONEq(t, `{"max_depth":3,"deny_action":"drop"}`, string(out))
}

// TestExtractPreconditions: Extract wants an existing, empty directory and
// sets canonical permissions whatever the umask.
func TestExtractPreconditions(t *testing.T) {
	in := breakout.W(0, breakout.Ent{Hdr: tar.Header{Name: "x/run", Typeflag: tar.TypeReg, Mode: 0o700, Size: 2}, Data: "ok"})
	var rej *firewall.RejectError

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keep"), []byte("k"), 0o600))
	_, err := firewall.Extract(t.Context(), bytes.NewReader(in), dir, firewall.Policy{})
	require.ErrorContains(t, err, "not empty")
	require.False(t, errors.As(err, &rej))
	left, _ := os.ReadDir(dir)
	require.Len(t, left, 1)

	_, err = firewall.Extract(t.Context(), bytes.NewReader(in), filepath.Join(dir, "missing"), firewall.Policy{})
	require.Error(t, err)

	old := setUmask(0o077)
	defer setUmask(old)
	dir = t.TempDir()
	_, err = firewall.Extract(t.Context(), bytes.NewReader(in), dir, firewall.Policy{})
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, "x"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Join(dir, "x", "run"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
}

// TestExtractCleansUp: a rejection late in the archive removes what the
// earlier entries created.
func TestExtractCleansUp(t *testing.T) {
	in := breakout.W(0, breakout.Reg("a/b/c", "c"), breakout.Reg("top", "t"), breakout.Dir("d/"),
		breakout.Ent{Hdr: tar.Header{Name: "d/link", Typeflag: tar.TypeSymlink, Linkname: "/"}})
	dir := t.TempDir()
	_, err := firewall.Extract(t.Context(), bytes.NewReader(in), dir, firewall.Policy{})
	require.ErrorIs(t, err, firewall.ErrSymlink)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left)
}

// slowSource delivers its bytes one chunk per Read, sleeping before each,
// and records whether a Read was running when done was set.
type slowSource struct {
	data    []byte
	mu      sync.Mutex
	active  int
	done    bool
	lateUse bool
}

func (s *slowSource) Read(p []byte) (int, error) {
	s.mu.Lock()
	s.active++
	if s.done {
		s.lateUse = true
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.active--
		s.mu.Unlock()
	}()
	time.Sleep(20 * time.Millisecond)
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 4096)], s.data)
	s.data = s.data[n:]
	return n, nil
}

// TestNoReadAfterReturn: when Filter rejects early, the read running ahead
// has finished before Filter returns, so the caller owns the source again.
func TestNoReadAfterReturn(t *testing.T) {
	in := breakout.W(0, breakout.Ent{Hdr: tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/"}},
		breakout.Reg("big", strings.Repeat("x", 64<<10)))
	src := &slowSource{data: in}
	_, err := firewall.Filter(t.Context(), src, io.Discard, firewall.Policy{})
	require.ErrorIs(t, err, firewall.ErrSymlink)
	src.mu.Lock()
	active := src.active
	src.done = true
	src.mu.Unlock()
	require.Zero(t, active, "a Read is still running after Filter returned")
	time.Sleep(60 * time.Millisecond)
	src.mu.Lock()
	defer src.mu.Unlock()
	require.False(t, src.lateUse, "the source was read after Filter returned")
}
