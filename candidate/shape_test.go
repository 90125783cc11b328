package candidate

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandboxtest"
)

// warmRecorder is the fake backend, also a sandbox.Warmer, recording what
// was warmed and every spec run as the phase asked for it.
type warmRecorder struct {
	*sandboxtest.Fake
	mu     sync.Mutex
	warmed []sandbox.Spec
	counts []int
	ran    []sandbox.Spec
}

func (w *warmRecorder) Warm(_ context.Context, spec sandbox.Spec, n int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warmed = append(w.warmed, spec)
	w.counts = append(w.counts, n)
	return true
}

func (w *warmRecorder) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	w.mu.Lock()
	w.ran = append(w.ran, spec)
	w.mu.Unlock()
	return w.Fake.Run(ctx, spec)
}

// sameShape compares what a backend's pool keys a started sandbox by.
func sameShape(a, b sandbox.Spec) bool {
	dirs := func(s sandbox.Spec) []string {
		var out []string
		for _, t := range s.Trees {
			out = append(out, t.Dir+"|"+string(mustJSON(t.Policy)))
		}
		return out
	}
	la, lb := a.Limits, b.Limits
	la.Wall, lb.Wall = 0, 0
	// The command and wall clock, where the shape carries them, are the
	// cases' own.
	if len(a.Cmd) > 0 && (!slices.Equal(a.Cmd, b.Cmd) || a.Limits.Wall != b.Limits.Wall) {
		return false
	}
	return a.Image == b.Image && a.Phase == b.Phase && a.WorkDir == b.WorkDir && slices.Equal(a.Env, b.Env) &&
		la == lb && slices.Equal(dirs(a), dirs(b)) && len(a.Mounts) == len(b.Mounts) &&
		string(mustJSON(a.StreamOut)) == string(mustJSON(b.StreamOut)) &&
		string(mustJSON(a.CollectPolicy)) == string(mustJSON(b.CollectPolicy))
}

// TestShapeMatchesCases checks, for a task of every kind, that the phase
// warms exactly as many sandboxes as it runs, of the shape of every case
// container it runs: a shape that drifted from the cases would start
// sandboxes nobody takes.
func TestShapeMatchesCases(t *testing.T) {
	for _, name := range []string{"sum", "wordfreq", "csvstats", "toposort"} {
		t.Run(name, func(t *testing.T) {
			tk := loadExample(t, name)
			fake, img := newFake(t, func(p *sandboxtest.Proc) int { return 0 })
			w := &warmRecorder{Fake: fake}
			out, err := Run(t.Context(), w, forTask(t, tk, Request{Run: "r1", Image: img, Artifacts: artifact(t), Nonce: "n1"}))
			if err != nil {
				t.Fatal(err)
			}
			out.Wait()
			if len(w.warmed) != 1 {
				t.Fatalf("warmed %d times, want once", len(w.warmed))
			}
			if w.counts[0] != len(w.ran) || out.Containers != len(w.ran) {
				t.Errorf("warmed %d, ran %d (%d containers)", w.counts[0], len(w.ran), out.Containers)
			}
			for i, s := range w.ran {
				if !sameShape(w.warmed[0], s) {
					t.Errorf("case container %d: spec %+v\nwarmed %+v", i, s, w.warmed[0])
				}
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
