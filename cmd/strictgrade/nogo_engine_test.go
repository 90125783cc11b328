//go:build engine

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
)

// TestGradeWithoutGo builds the CLI, then grades the sum example with no
// go command on PATH: the runtime image is found by its recipe and the
// judge image (built under a test-only name) is pinned through
// $STRICTGRADE_JUDGE_IMAGE, so nothing is compiled at grade time. A judge
// image built twice is one image ID.
func TestGradeWithoutGo(t *testing.T) {
	ctx := t.Context()
	eng, err := engine.NewDocker(ctx, engine.Config{})
	if err != nil {
		t.Fatal("this test needs a Docker daemon: ", err)
	}
	defer eng.Close()
	if _, err := images.Ensure(ctx, eng, images.Python{}, os.Stderr); err != nil {
		t.Fatal(err)
	}
	judge := images.GoBinaries{ImageName: "nogo-judge", Packages: []string{"github.com/strictgrade/strictgrade/judge/cmd/judge"}}
	judgeID, err := images.Ensure(ctx, eng, judge, os.Stderr)
	t.Cleanup(func() {
		if judgeID != "" {
			_ = eng.RemoveImage(context.Background(), judgeID)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// Built again at another time, the judge image is the same image.
	if err := eng.RemoveImage(ctx, judgeID); err != nil {
		t.Fatal(err)
	}
	again, err := images.Ensure(ctx, eng, judge, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if again != judgeID {
		t.Errorf("judge image rebuilt as %s, first %s", again, judgeID)
	}
	bin := filepath.Join(t.TempDir(), "strictgrade")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	nogo := t.TempDir()
	env := []string{"PATH=" + nogo, "STRICTGRADE_JUDGE_IMAGE=" + judgeID}
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); k != "PATH" && !strings.HasPrefix(k, "STRICTGRADE_") {
			env = append(env, e)
		}
	}
	tests := []struct {
		solution string
		code     int
		outcome  string
	}{
		{"honest", 0, "PASS"},
		{"wrong", 1, "FAIL"},
	}
	for _, tt := range tests {
		t.Run(tt.solution, func(t *testing.T) {
			cmd := exec.CommandContext(ctx, bin, "grade", "--task", "../../examples/sum/task", "--submission", "../../examples/sum/solutions/"+tt.solution)
			var stdout, stderr bytes.Buffer
			cmd.Env, cmd.Stdout, cmd.Stderr = env, &stdout, &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || !strings.Contains(stdout.String(), tt.outcome) {
				t.Errorf("exit %d, want %d with %s\nstdout:\n%s\nstderr:\n%s", code, tt.code, tt.outcome, stdout.String(), stderr.String())
			}
			if strings.Contains(stderr.String(), "compiling") || strings.Contains(stderr.String(), "building") {
				t.Errorf("grade built an image:\n%s", stderr.String())
			}
		})
	}
}
