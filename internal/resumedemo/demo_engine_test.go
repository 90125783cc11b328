//go:build engine

package resumedemo_test

import (
	"path/filepath"
	"testing"

	"github.com/strictgrade/strictgrade/internal/resumedemo"
)

// TestRunSurvivesSIGKILL is the demonstration at a small size: eight
// items of the four example tasks, --parallel 2, the CLI killed with
// SIGKILL once three are done, then resumed; Run checks that each item
// was graded exactly once and as it deserves, that verify --run passes,
// and that gc leaves nothing of either process in the engine.
func TestRunSurvivesSIGKILL(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	n, err := resumedemo.Run(t.Context(), resumedemo.Config{Repo: repo, Work: t.TempDir(), Items: 8, KillAfter: 3, Parallel: 2, Log: tlog{t}})
	if n != nil {
		t.Log(n)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n.DoneBeforeKill < 3 || n.DoneBeforeKill >= 8 || n.ResumeGraded == 0 {
		t.Errorf("the kill did not fall part way: %s", n)
	}
}

type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) { l.t.Logf("%s", p); return len(p), nil }
