//go:build engine

package engine_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
)

// ensurePython resolves the Python runtime image once per test process.
var ensurePython = sync.OnceValues(func() (string, error) {
	return images.Ensure(context.Background(), eng, images.Python{}, os.Stderr)
})

func pythonImage(t *testing.T) string {
	t.Helper()
	id, err := ensurePython()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestSession(t *testing.T) {
	t.Parallel()
	img := pythonImage(t)
	run := newRun(t)
	vol := newVolume(t, run, "work")
	s, err := eng.Start(t.Context(), engine.Spec{Run: run, Phase: "agent", Image: img,
		Mounts: []engine.Mount{{Volume: vol, Target: "/work"}}, Limits: engine.Limits{Wall: 2 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())

	res, err := s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"sh", "-c", "id -u; echo err >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(res.Stdout)) != "65532" || string(res.Stderr) != "err\n" || res.Code != 3 {
		t.Fatalf("exec: %+v", res)
	}

	res, err = s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"sh", "-c", "sleep 5 & sleep 30"}, Wall: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != engine.ExitTimeout {
		t.Fatalf("slow command: %+v", res)
	}

	res, err = s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"cat"}, Stdin: strings.NewReader("piped")})
	if err != nil || string(res.Stdout) != "piped" {
		t.Fatalf("stdin: %v %+v", err, res)
	}

	if _, err := s.CopyIn(t.Context(), "/work", tarOf(t, map[string]string{"notes.txt": "from host\n"}), engine.CopyInOptions{Writable: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CopyIn(t.Context(), "/etc", tarOf(t, map[string]string{"x": "y"}), engine.CopyInOptions{}); !errors.Is(err, engine.ErrSpec) {
		t.Fatalf("copy outside a writable volume: %v", err)
	}
	res, err = s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"sh", "-c", "cat notes.txt && echo agent >> notes.txt && ln -s /etc/passwd /work/link"}, WorkDir: "/work"})
	if err != nil || res.Code != 0 || string(res.Stdout) != "from host\n" {
		t.Fatalf("agent edit: %v %+v", err, res)
	}
	c, err := s.CopyOut(t.Context(), "/work/notes.txt", firewallPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Manifest.Files) != 1 || c.Manifest.Files[0].Size != int64(len("from host\nagent\n")) {
		t.Fatalf("read back %+v", c.Manifest.Files)
	}
	if _, err := s.CopyOut(t.Context(), "/work", firewallPolicy()); !errors.Is(err, engine.ErrCollect) {
		t.Fatalf("copy out of a tree holding a symlink: %v", err)
	}
	// A link planted as a parent directory must not carry a read out of
	// the work volume: the daemon would resolve it inside the container.
	res, err = s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"sh", "-c", "ln -s /etc /work/sub && mkdir -p /work/real && echo ok > /work/real/f"}})
	if err != nil || res.Code != 0 {
		t.Fatalf("plant a directory link: %v %+v", err, res)
	}
	for _, p := range []string{"/work/sub/passwd", "/work/link/x", "/work/missing/x"} {
		if _, err := s.CopyOut(t.Context(), p, firewallPolicy()); !errors.Is(err, engine.ErrCollect) {
			t.Errorf("copy out of %s: %v, want ErrCollect", p, err)
		}
	}
	if c, err := s.CopyOut(t.Context(), "/work/real/f", firewallPolicy()); err != nil || len(c.Manifest.Files) != 1 {
		t.Fatalf("a plain nested file: %v %+v", err, c)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"true"}}); err == nil {
		t.Fatal("exec after stop succeeded")
	}
	s.Close(t.Context())
}

// TestSessionPauseRetries: a copy whose freeze fails a few times (runc's
// freezer under load) is tried again and goes through, and the session is
// thawed after it; a freeze that fails every try is the engine's error,
// and leaves the session running, not frozen.
func TestSessionPauseRetries(t *testing.T) {
	t.Parallel()
	img := pythonImage(t)
	run := newRun(t)
	vol := newVolume(t, run, "work")
	ss, err := eng.Start(t.Context(), engine.Spec{Run: run, Phase: "agent", Image: img,
		Mounts: []engine.Mount{{Volume: vol, Target: "/work"}}, Limits: engine.Limits{Wall: 2 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close(context.Background())
	s := ss.(*engine.Session)
	if res, err := s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"sh", "-c", "echo kept > /work/f"}}); err != nil || res.Code != 0 {
		t.Fatalf("exec: %v %+v", err, res)
	}

	// Three failures, as a loaded host's freezer gave (the engine tries
	// more often than that).
	s.FailPauses(3)
	c, err := s.CopyOut(t.Context(), "/work/f", firewallPolicy())
	if err != nil || len(c.Manifest.Files) != 1 {
		t.Fatalf("copy out after 3 failed freezes: %v %+v", err, c.Manifest)
	}
	if res, err := s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"cat", "/work/f"}}); err != nil || strings.TrimSpace(string(res.Stdout)) != "kept" {
		t.Fatalf("the session after the copy (still frozen?): %v %+v", err, res)
	}

	s.FailPauses(engine.FreezeTries)
	if _, err := s.CopyOut(t.Context(), "/work/f", firewallPolicy()); err == nil || errors.Is(err, engine.ErrCollect) || !strings.Contains(err.Error(), "unable to freeze") {
		t.Fatalf("a freeze that never succeeds: %v, want the engine's error", err)
	}
	if res, err := s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"true"}}); err != nil || res.Code != 0 {
		t.Fatalf("the session after a failed freeze: %v %+v", err, res)
	}
}
