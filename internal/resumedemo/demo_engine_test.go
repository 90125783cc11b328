//go:build engine

package resumedemo_test

import (
	"path/filepath"
	"testing"

	"github.com/strictgrade/strictgrade/internal/resumedemo"
)

// TestRunSurvivesSIGKILL is the demonstration at a small size: six
// items of the four example tasks, --parallel 2, the CLI killed with
// SIGKILL once two are done, then resumed; Run checks that each item
// was graded exactly once and as it deserves, that verify --run passes,
// and that gc leaves nothing of either process in the engine.
func TestRunSurvivesSIGKILL(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	n, err := resumedemo.Run(t.Context(), resumedemo.Config{Repo: repo, Work: t.TempDir(), Items: 6, KillAfter: 2, Parallel: 2, Log: tlog{t}})
	if n != nil {
		t.Log(n)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n.DoneBeforeKill < 2 || n.DoneBeforeKill >= 6 || n.ResumeGraded == 0 {
		t.Errorf("the kill did not fall part way: %s", n)
	}
}

type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) { l.t.Logf("%s", p); return len(p), nil }
