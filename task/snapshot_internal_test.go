package task

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"testing"
)

// TestDigestIsTheSnapshot: the digest a verdict signs is the sha256 of the
// archive every grade-time read comes from.
func TestDigestIsTheSnapshot(t *testing.T) {
	for _, name := range []string{"sum", "wordfreq", "csvstats"} {
		t.Run(name, func(t *testing.T) {
			tk, err := Load(t.Context(), filepath.Join("..", "examples", name, "task"))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(tk.snap.archive)
			if got := hex.EncodeToString(sum[:]); got != tk.Digest {
				t.Errorf("digest %s, snapshot hashes to %s", tk.Digest, got)
			}
		})
	}
}

// TestNotLoaded: a Task made without Load has no files to hand out.
func TestNotLoaded(t *testing.T) {
	tk := &Task{Spec: Spec{ID: "x"}}
	if _, err := tk.HiddenFile("a"); !errors.Is(err, ErrNotLoaded) {
		t.Errorf("HiddenFile: %v, want ErrNotLoaded", err)
	}
	if err := tk.WriteHidden(t.Context(), nil); !errors.Is(err, ErrNotLoaded) {
		t.Errorf("WriteHidden: %v, want ErrNotLoaded", err)
	}
	if tk.Public().ID() != "x" {
		t.Error("the public view lost the id")
	}
}
