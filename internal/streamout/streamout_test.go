package streamout_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/streamout"
)

// tree runs the wrapper's tree mode on dir, as a backend does in a pod,
// and filters what it wrote through the firewall under pol.
func tree(t *testing.T, dir, name string, pol firewall.Policy) (map[string]string, error) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to test the stream-out wrapper")
	}
	argv := streamout.TreeCommand(dir, name, pol)
	cmd := exec.CommandContext(t.Context(), py, argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("tree writer: %w: %s", err, stderr.String())
	}
	var canon bytes.Buffer
	if _, err := firewall.Filter(t.Context(), bytes.NewReader(stdout.Bytes()), &canon, pol); err != nil {
		return nil, err
	}
	got := map[string]string{}
	tr := tar.NewReader(&canon)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = string(b)
	}
}

func write(t *testing.T, root string, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		p := filepath.Join(root, kv[i])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(kv[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTreeMode(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "alpha", "sub/b.txt", "beta", "sub/deeper/c.txt", "gamma")
	// A file its writer made unreadable is read all the same: the
	// writer is its owner.
	if err := os.Chmod(filepath.Join(root, "a.txt"), 0); err != nil {
		t.Fatal(err)
	}

	got, err := tree(t, root, "out", firewall.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"out/": "", "out/a.txt": "alpha", "out/sub/": "", "out/sub/b.txt": "beta", "out/sub/deeper/": "", "out/sub/deeper/c.txt": "gamma"}
	if !mapsEqual(got, want) {
		t.Errorf("named below out: %v, want %v", got, want)
	}

	// An empty name: a volume's content, from the archive's root.
	got, err = tree(t, root, "", firewall.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"a.txt": "alpha", "sub/": "", "sub/b.txt": "beta", "sub/deeper/": "", "sub/deeper/c.txt": "gamma"}
	if !mapsEqual(got, want) {
		t.Errorf("from the root: %v, want %v", got, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestTreeModeRefuses(t *testing.T) {
	cases := map[string]func(t *testing.T, root string){
		"symlink": func(t *testing.T, root string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(root, "z-link")); err != nil {
				t.Fatal(err)
			}
		},
		"hard link": func(t *testing.T, root string) {
			if err := os.Link(filepath.Join(root, "a.txt"), filepath.Join(root, "z-second")); err != nil {
				t.Fatal(err)
			}
		},
		"fifo": func(t *testing.T, root string) {
			if err := syscall.Mkfifo(filepath.Join(root, "z-fifo"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"depth": func(t *testing.T, root string) {
			write(t, root, strings.Repeat("d/", 40)+"x", "x")
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, "a.txt", "alpha")
			mk(t, root)
			// The writer neither opens a fifo nor follows a link: it
			// ends the archive at such an entry, which the firewall
			// refuses.
			_, err := tree(t, root, "", firewall.Policy{})
			var rej *firewall.RejectError
			if !errors.As(err, &rej) {
				t.Errorf("a tree with a %s: %v, want the firewall's refusal", name, err)
			}
		})
	}
}

// TestTreeModeEntryBound checks that a directory with more entries than
// the policy takes ends the archive one entry past the bound, listed no
// further, so that the firewall refuses it.
func TestTreeModeEntryBound(t *testing.T) {
	root := t.TempDir()
	for i := range 50 {
		write(t, root, fmt.Sprintf("f%03d", i), "")
	}
	pol := firewall.Policy{MaxEntries: 10}
	_, err := tree(t, root, "", pol)
	var rej *firewall.RejectError
	if !errors.As(err, &rej) {
		t.Fatalf("50 files under a bound of 10: %v, want the firewall's refusal", err)
	}
	py, _ := exec.LookPath("python3")
	argv := streamout.TreeCommand(root, "", pol)
	out, err := exec.CommandContext(t.Context(), py, argv[1:]...).Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	if len(names) != 11 {
		t.Errorf("the archive holds %d entries (%v), want the bound and one more", len(names), names)
	}
	// Exactly at the bound, the tree passes.
	got, err := tree(t, root, "", firewall.Policy{MaxEntries: 50})
	if err != nil || len(got) != 50 {
		t.Errorf("50 files under a bound of 50: %d entries, %v", len(got), err)
	}
	if !slices.IsSorted(names) {
		t.Errorf("entries not in order: %v", names)
	}
}

// TestTreeModePaths checks how the tree mode reaches its path: a regular
// file is archived alone under the name, a link or a file on the way, or
// at the path, is an entry the firewall refuses, and a missing path is an
// exit status of its own.
func TestTreeModePaths(t *testing.T) {
	root := t.TempDir()
	write(t, root, "d/f.txt", "eff")
	if err := os.Symlink(filepath.Join(root, "d"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	got, err := tree(t, filepath.Join(root, "d/f.txt"), "f.txt", firewall.Policy{})
	if err != nil || !mapsEqual(got, map[string]string{"f.txt": "eff"}) {
		t.Errorf("a regular file: %v %v", got, err)
	}
	for _, p := range []string{"link", "link/f.txt", "d/f.txt/below"} {
		_, err := tree(t, filepath.Join(root, p), "x", firewall.Policy{})
		var rej *firewall.RejectError
		if !errors.As(err, &rej) {
			t.Errorf("%s: %v, want the firewall's refusal", p, err)
		}
	}
	_, err = tree(t, filepath.Join(root, "nothing/here"), "x", firewall.Policy{})
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != streamout.TreeMissing {
		t.Errorf("a missing path: %v, want exit %d", err, streamout.TreeMissing)
	}
}
