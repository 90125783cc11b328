package tarball

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/firewall"
)

// entry is what a test reads back from an archive.
type entry struct {
	Name string
	Type byte
	Mode int64
	Body string
	Link string
}

func readAll(t *testing.T, archive []byte) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading the archive back: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{Name: h.Name, Type: h.Typeflag, Mode: h.Mode, Body: string(body), Link: h.Linkname})
	}
}

// tree makes files (name → content; a name ending in "/" is a directory)
// under a fresh directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestWriteDirWritesTheTreeInLexicalOrder(t *testing.T) {
	dir := tree(t, map[string]string{"b.txt": "bee", "a/z.py": "zed", "a/y/": "", "c/": ""})
	if err := os.Chmod(filepath.Join(dir, "a/z.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteDir(&buf, dir, nil); err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{Name: "a/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "a/y/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "a/z.py", Type: tar.TypeReg, Mode: 0o755, Body: "zed"},
		{Name: "b.txt", Type: tar.TypeReg, Mode: 0o644, Body: "bee"},
		{Name: "c/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "link", Type: tar.TypeSymlink, Mode: 0o777, Link: "/etc/passwd"},
	}
	if diff := cmp.Diff(want, readAll(t, buf.Bytes())); diff != "" {
		t.Errorf("archive (-want +got):\n%s", diff)
	}
	// The link is written as a link, for the firewall to refuse.
	_, err := firewall.Filter(t.Context(), bytes.NewReader(buf.Bytes()), io.Discard, firewall.Policy{})
	if !errors.Is(err, firewall.ErrSymlink) {
		t.Errorf("firewall on the written archive: %v, want %v", err, firewall.ErrSymlink)
	}
}

func TestWriteDirKeep(t *testing.T) {
	dir := tree(t, map[string]string{"solution.py": "x", "notes/a.txt": "a", "pkg/mod/m.py": "m", "pkg/other.py": "o"})
	// What keep refuses is never examined: an unacceptable name or a
	// socket outside the declared paths does not matter.
	if err := os.Mkdir(filepath.Join(dir, "\xff"), 0o755); err != nil {
		t.Fatal(err)
	}
	listen(t, filepath.Join(dir, "notes", "sock"))
	var buf bytes.Buffer
	if err := WriteDir(&buf, dir, Under([]string{"solution.py", "pkg/mod/"})); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range readAll(t, buf.Bytes()) {
		names = append(names, e.Name)
	}
	want := []string{"pkg/", "pkg/mod/", "pkg/mod/m.py", "solution.py"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("kept entries (-want +got):\n%s", diff)
	}
}

// listen leaves a Unix socket at p for the test's duration.
func listen(t *testing.T, p string) {
	t.Helper()
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}

func TestWriteDirWalkErrors(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		path   string
		reason string
	}{
		{"sub-directory name not UTF-8", func(t *testing.T, dir string) {
			mustMkdir(t, filepath.Join(dir, "pkg", "b\xffd"))
			mustWrite(t, filepath.Join(dir, "pkg", "b\xffd", "f.py"), "x")
		}, "pkg/b\xffd", "name is not valid UTF-8"},
		{"file name not UTF-8", func(t *testing.T, dir string) {
			mustWrite(t, filepath.Join(dir, "pkg", "\xc3("), "x")
		}, "pkg/\xc3(", "name is not valid UTF-8"},
		{"named pipe", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "pkg", "p-q7x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "pkg/p-q7x", "a named pipe"},
		{"socket", func(t *testing.T, dir string) {
			listen(t, filepath.Join(dir, "pkg", "s-q7x"))
		}, "pkg/s-q7x", "a socket"},
		{"file swapped for a named pipe after lstat", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "pkg", "swap.py")
			mustWrite(t, p, "x")
			hook(t, "pkg/swap.py", func() {
				os.Remove(p)
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Error(err)
				}
			})
		}, "pkg/swap.py", "changed type during the walk"},
		{"file swapped for a link after lstat", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "pkg", "swap.py")
			mustWrite(t, p, "x")
			hook(t, "pkg/swap.py", func() {
				os.Remove(p)
				if err := os.Symlink("../../../etc/passwd", p); err != nil {
					t.Error(err)
				}
			})
		}, "pkg/swap.py", "unreadable"},
		{"file removed after lstat", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "pkg", "gone.py")
			mustWrite(t, p, "x")
			hook(t, "pkg/gone.py", func() { os.Remove(p) })
		}, "pkg/gone.py", "unreadable"},
	}
	if os.Geteuid() == 0 {
		tests = append(tests, struct {
			name   string
			setup  func(t *testing.T, dir string)
			path   string
			reason string
		}{"character device", func(t *testing.T, dir string) {
			// The null device's numbers: 1, 3.
			if err := syscall.Mknod(filepath.Join(dir, "pkg", "null"), syscall.S_IFCHR|0o644, 1<<8|3); err != nil {
				t.Fatal(err)
			}
		}, "pkg/null", "a character device"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t, map[string]string{"pkg/a.py": "a"})
			tt.setup(t, dir)
			err := WriteDir(io.Discard, dir, Under([]string{"pkg"}))
			var we *WalkError
			if !errors.Is(err, ErrWalk) || !errors.As(err, &we) {
				t.Fatalf("WriteDir: %v, want a *WalkError", err)
			}
			if we.Path != tt.path || we.Reason != tt.reason {
				t.Errorf("WalkError{Path: %q, Reason: %q}, want {%q, %q}", we.Path, we.Reason, tt.path, tt.reason)
			}
			base := tt.path[strings.LastIndexByte(tt.path, '/')+1:]
			if strings.Contains(we.Reason, base) {
				t.Errorf("the reason %q quotes the name", we.Reason)
			}
		})
	}
}

func hook(t *testing.T, rel string, f func()) {
	afterLstat = func(r string) {
		if r == rel {
			f()
		}
	}
	t.Cleanup(func() { afterLstat = nil })
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// failingWriter accepts n bytes, then fails.
type failingWriter struct{ n int }

var errSink = errors.New("sink failed")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errSink
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteDirWriterFailureIsNotAWalkError(t *testing.T) {
	dir := tree(t, map[string]string{"big.bin": strings.Repeat("x", 100<<10)})
	for _, n := range []int{0, 600, 40 << 10} {
		err := WriteDir(&failingWriter{n: n}, dir, nil)
		if !errors.Is(err, errSink) || errors.Is(err, ErrWalk) {
			t.Errorf("writer failing after %d bytes: %v, want the writer's error and no ErrWalk", n, err)
		}
	}
	if err := WriteDir(io.Discard, filepath.Join(dir, "missing"), nil); err == nil || errors.Is(err, ErrWalk) {
		t.Errorf("missing directory: %v, want a plain error", err)
	}
}

func TestUnder(t *testing.T) {
	keep := Under([]string{"solution.py", "pkg/", "a/b/c"})
	tests := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"solution.py", false, true},
		{"solution.pyc", false, false},
		{"pkg", true, true},
		{"pkg/x/y.py", false, true},
		{"pkgx", true, false},
		{"a", true, true},
		{"a", false, false},
		{"a/b", true, true},
		{"a/b/c", false, true},
		{"a/b/d", false, false},
		{"a/bc", true, false},
	}
	for _, tt := range tests {
		if got := keep(tt.rel, tt.isDir); got != tt.want {
			t.Errorf("keep(%q, %v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
		}
	}
}

func TestRewrite(t *testing.T) {
	dir := tree(t, map[string]string{"a.txt": "a", "b.txt": "b", "d/c.txt": "c"})
	var src bytes.Buffer
	if err := WriteDir(&src, dir, nil); err != nil {
		t.Fatal(err)
	}
	var dst bytes.Buffer
	err := Rewrite(&dst, &src, func(h *tar.Header) bool {
		h.Uid, h.Gid = 7, 7
		return h.Name != "b.txt"
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(&dst)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 7 || h.Gid != 7 {
			t.Errorf("%s: owner %d:%d, want 7:7", h.Name, h.Uid, h.Gid)
		}
		names = append(names, h.Name)
	}
	if diff := cmp.Diff([]string{"a.txt", "d/", "d/c.txt"}, names); diff != "" {
		t.Errorf("rewritten entries (-want +got):\n%s", diff)
	}
}

// TestFaultSeparatesHostFromTree: the host running short is the walker's
// failure; anything else met in the tree is the tree's.
func TestFaultSeparatesHostFromTree(t *testing.T) {
	for _, tt := range []struct {
		err  error
		tree bool
	}{
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, true},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, true},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ELOOP}, true},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EMFILE}, false},
		{&os.PathError{Op: "read", Path: "x", Err: syscall.EIO}, false},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ENOMEM}, false},
	} {
		err := fault("secret-name", "unreadable", tt.err)
		if got := errors.Is(err, ErrWalk); got != tt.tree {
			t.Errorf("%v: the tree's fault %v, want %v", tt.err, got, tt.tree)
		}
		if !tt.tree && strings.Contains(err.Error(), "secret-name") {
			t.Errorf("%v: a host failure quotes the tree's path: %v", tt.err, err)
		}
	}
}

// TestWriteDirRootIsTheCallers: a directory that cannot be opened at all is
// the caller's problem, not an entry of the tree.
func TestWriteDirRootIsTheCallers(t *testing.T) {
	err := WriteDir(io.Discard, filepath.Join(t.TempDir(), "missing"), nil)
	if err == nil || errors.Is(err, ErrWalk) {
		t.Fatalf("missing root: %v, want an error that is not ErrWalk", err)
	}
}
