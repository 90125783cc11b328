package engine_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
)

func pythonImage(t *testing.T) string {
	t.Helper()
	id, err := images.Ensure(t.Context(), eng, images.Python{}, os.Stderr)
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

	res, err = s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"cat"}, Stdin: []byte("piped")})
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
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(t.Context(), engine.ExecSpec{Cmd: []string{"true"}}); err == nil {
		t.Fatal("exec after stop succeeded")
	}
	s.Close(t.Context())
}
