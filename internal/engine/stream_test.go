//go:build engine

package engine_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/engine"
)

// python runs script in the Python runtime image (StreamOut needs an
// interpreter) with a small stream-out directory at /output.
func python(t *testing.T, run, script string) engine.Spec {
	t.Helper()
	id := pythonImage(t)
	return engine.Spec{Run: run, Phase: "test", Image: id, Cmd: []string{"python3", "-I", "-c", script},
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C.UTF-8"}, WorkDir: "/tmp",
		StreamOut: &engine.StreamOut{Dir: "/output", Bytes: 1 << 20, Inodes: 256}}
}

// files lists the regular files of a collected archive with their content.
func files(t *testing.T, c engine.Collected) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(c.Archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			out[h.Name] = string(b)
		}
	}
}

func TestStreamOutCollectsTheDirectory(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	long := strings.Repeat("l", 150)
	spec := python(t, run, `
import os, sys
os.makedirs("/output/sub/deeper")
for name, body in (("a.txt", "alpha"), ("sub/é.txt", "accent"), ("sub/deeper/`+long+`", "long"), ("empty", "")):
    with open("/output/" + name, "w") as f:
        f.write(body)
os.chmod("/output/a.txt", 0o755)
os.chmod("/output/sub", 0)  # the wrapper, the same user, can still read it
print("to stdout")
sys.stderr.write("to stderr\n")
sys.exit(3)
`)
	res := mustRun(t, spec)
	if res.Exit != engine.ExitExited || res.Code != 3 {
		t.Fatalf("exit %s %d: %s", res.Exit, res.Code, res.Stderr)
	}
	if len(res.Stdout) != 0 || !strings.Contains(string(res.Stderr), "to stdout") || !strings.Contains(string(res.Stderr), "to stderr") {
		t.Errorf("stdout %q, stderr %q: the command's output belongs on stderr", res.Stdout, res.Stderr)
	}
	got := files(t, res.Collected["/output"])
	want := map[string]string{"output/a.txt": "alpha", "output/sub/é.txt": "accent", "output/sub/deeper/" + long: "long", "output/empty": ""}
	if len(got) != len(want) {
		t.Errorf("collected %v, want %v", got, want)
	}
	for name, body := range want {
		if got[name] != body {
			t.Errorf("%s: %q, want %q", name, got[name], body)
		}
	}
	for _, f := range res.Collected["/output"].Manifest.Files {
		if f.Path == "output/a.txt" && f.Mode != 0o755 {
			t.Errorf("executable bit lost: %+v", f)
		}
	}
}

func TestStreamOutRefusesWhatMayNotCross(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		want   error
	}{
		{"symlink", `os.symlink("/etc/passwd", "/output/out.txt")`, firewall.ErrSymlink},
		{"hard link", `open("/output/a", "w").close(); os.link("/output/a", "/output/b")`, firewall.ErrHardlink},
		{"named pipe", `os.mkfifo("/output/p")`, firewall.ErrFIFO},
		{"socket", `import socket; socket.socket(socket.AF_UNIX).bind("/output/s")`, firewall.ErrType},
		{"sparse file", `f = open("/output/holes", "wb"); f.truncate(1 << 20); f.close()`, firewall.ErrSparse},
		{"name not UTF-8", `open(b"/output/\xff", "w").close()`, firewall.ErrName},
		{"too deep", `os.makedirs("/output/" + "/".join(["d"] * 40))`, firewall.ErrLimit},
		{"name too long", `
p = "/output"
for _ in range(12):
    p += "/" + "n" * 100
    os.mkdir(p)
`, firewall.ErrLimit},
		{"name too long, cut inside a character", `
p = "/output/" + "n" * 200
os.mkdir(p)
for _ in range(9):
    p += "/" + "é" * 50
    os.mkdir(p)
`, firewall.ErrLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			run := newRun(t)
			_, err := eng.Run(t.Context(), python(t, run, "import os\n"+tt.script))
			if !errors.Is(err, engine.ErrCollect) || !errors.Is(err, tt.want) {
				t.Fatalf("Run: %v, want ErrCollect and %v", err, tt.want)
			}
		})
	}
}

func TestStreamOutBrokenStreamIsTheContainers(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		// The command runs as the wrapper's user: it may kill it, or
		// write into its channel through /proc.
		"wrapper killed": `import os, signal; os.kill(os.getppid(), signal.SIGKILL)`,
		"channel forged": `
import os
ppid = os.getppid()
for fd in os.listdir("/proc/%d/fd" % ppid):
    target = os.readlink("/proc/%d/fd/%s" % (ppid, fd))
    if fd not in ("0", "1", "2") and target.startswith("pipe:"):
        with open("/proc/%d/fd/%s" % (ppid, fd), "wb") as f:
            f.write(b"not a tar header" * 64)
`,
	}
	for name, script := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := newRun(t)
			_, err := eng.Run(t.Context(), python(t, run, script))
			var rej *firewall.RejectError
			if !errors.Is(err, engine.ErrCollect) || !errors.As(err, &rej) {
				t.Fatalf("Run: %v, want ErrCollect from the firewall", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

func TestStreamOutStopsLeftoverWriters(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	// A detached child keeps rewriting, truncating and adding files. Were
	// it alive while the directory is read, a file would shrink under the
	// reader or vanish from the listing and the stream would break.
	spec := python(t, run, `
import os, signal
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    i = 0
    while True:
        i += 1
        with open("/output/churn", "wb") as f:
            f.write(b"x" * (i % 4096))
        name = "/output/f%d" % (i % 64)
        if os.path.exists(name):
            os.unlink(name)
        else:
            open(name, "w").close()
for _ in range(200000):
    if len(os.listdir("/output")) > 32:
        break
`)
	for range 3 {
		res := mustRun(t, spec)
		if res.Exit != engine.ExitExited || res.Code != 0 {
			t.Fatalf("exit %s %d: %s", res.Exit, res.Code, res.Stderr)
		}
	}
}

func TestStreamOutTimeoutCollectsNothing(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	spec := python(t, run, `
open("/output/partial", "w").write("x")
while True:
    pass
`)
	spec.Limits.Wall = 2 * time.Second
	res := mustRun(t, spec)
	if res.Exit != engine.ExitTimeout {
		t.Fatalf("exit %s, want timeout", res.Exit)
	}
	if _, ok := res.Collected["/output"]; ok {
		t.Error("a killed container's stream was read")
	}
}

func TestStreamOutQuota(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	// Write until the size cap, then create empty files until the inode
	// cap: both end in ENOSPC, well before the file-size limit.
	spec := python(t, run, `
import errno, os
written = 0
try:
    i = 0
    while True:
        with open("/output/big%d" % i, "wb") as f:
            for _ in range(64):
                f.write(b"z" * 4096)
                f.flush()
                written += 4096
        i += 1
except OSError as e:
    assert e.errno == errno.ENOSPC, e
for n in os.listdir("/output"):
    os.unlink("/output/" + n)
files = 0
try:
    while True:
        open("/output/e%d" % files, "w").close()
        files += 1
except OSError as e:
    assert e.errno == errno.ENOSPC, e
print("written", written, "files", files)
`)
	spec.StreamOut.Bytes, spec.StreamOut.Inodes = 256<<10, 64
	spec.Limits.FileBytes = 64 << 20
	res := mustRun(t, spec)
	if res.Exit != engine.ExitExited || res.Code != 0 {
		t.Fatalf("exit %s %d: %s", res.Exit, res.Code, res.Stderr)
	}
	var written, made int64
	if _, err := fmt.Sscanf(string(res.Stderr), "written %d files %d", &written, &made); err != nil {
		t.Fatalf("report %q: %v", res.Stderr, err)
	}
	t.Logf("the command wrote %d bytes and made %d empty files before ENOSPC", written, made)
	if written > 256<<10 || made >= 64 {
		t.Errorf("wrote %d bytes and %d files under caps of %d bytes and 64 inodes", written, made, 256<<10)
	}
	if got := len(res.Collected["/output"].Manifest.Files); int64(got) != made {
		t.Errorf("collected %d files, the command made %d", got, made)
	}
}

func TestStreamOutSpec(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	bad := map[string]func(s *engine.Spec){
		"relative":      func(s *engine.Spec) { s.StreamOut.Dir = "output" },
		"root":          func(s *engine.Spec) { s.StreamOut.Dir = "/" },
		"in /tmp":       func(s *engine.Spec) { s.StreamOut.Dir = "/tmp/out" },
		"over a mount":  func(s *engine.Spec) { s.Mounts = []engine.Mount{{Volume: "v", Target: "/output/in"}} },
		"collected":     func(s *engine.Spec) { s.Collect = []string{"/output"} },
		"too big":       func(s *engine.Spec) { s.StreamOut.Bytes = engine.MaxStreamOutBytes + 1 },
		"too many":      func(s *engine.Spec) { s.StreamOut.Inodes = -1 },
		"no command":    func(s *engine.Spec) { s.Cmd = nil },
		"bad policy":    func(s *engine.Spec) { s.CollectPolicy.MaxDepth = -1 },
		"not a session": nil,
	}
	for name, f := range bad {
		spec := python(t, run, "pass")
		var err error
		if f == nil {
			_, err = eng.Start(t.Context(), spec)
		} else {
			f(&spec)
			_, err = eng.Run(t.Context(), spec)
		}
		if !errors.Is(err, engine.ErrSpec) {
			t.Errorf("%s: %v, want ErrSpec", name, err)
		}
	}
}

func TestStreamOutCapHoldsAFullQuota(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	// Every inode used, names close to the firewall's 1024-byte limit,
	// the size cap filled: the archive stays under the cap the engine
	// derives, so the container is not killed for its output.
	spec := python(t, run, `
import os
d = "/output/" + "/".join(c * 250 for c in "abc")
os.makedirs(d)
with open(d + "/" + "f" * 250, "wb") as f:
    f.write(b"x" * (200 << 10))
i = 0
try:
    while True:
        open("%s/%03d%s" % (d, i, "e" * 247), "w").close()
        i += 1
except OSError:
    pass
`)
	spec.StreamOut.Bytes, spec.StreamOut.Inodes = 256<<10, 128
	res := mustRun(t, spec)
	if res.Exit != engine.ExitExited || res.Code != 0 {
		t.Fatalf("exit %s %d: %s", res.Exit, res.Code, res.Stderr)
	}
	man := res.Collected["/output"].Manifest
	if n := len(man.Files) + len(man.Dirs); n < 120 {
		t.Fatalf("collected %d entries of 128 inodes", n)
	}
}

func TestStreamOutCommandNotFound(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	spec := python(t, run, "")
	spec.Cmd = []string{"/no/such/command"}
	res := mustRun(t, spec)
	if res.Exit != engine.ExitExited || res.Code != 127 {
		t.Fatalf("exit %s %d, want 127: %s", res.Exit, res.Code, res.Stderr)
	}
	if c, ok := res.Collected["/output"]; !ok || len(c.Manifest.Files) != 0 {
		t.Fatalf("collected %+v", c)
	}
}

func TestStreamOutStdin(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	spec := python(t, run, `import sys; open("/output/in", "w").write(sys.stdin.read())`)
	spec.Stdin = strings.NewReader("from the host\n")
	res := mustRun(t, spec)
	if got := files(t, res.Collected["/output"])["output/in"]; got != "from the host\n" {
		t.Fatalf("stdin reached the command as %q (%s)", got, res.Stderr)
	}
}
