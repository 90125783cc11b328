package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/schema"
)

// TestBoundRefusesAVerdictAboutAnythingElse: whatever a tier's pipeline
// returns, the controller signs only a verdict about this run, this task
// and the bytes it hands back.
func TestBoundRefusesAVerdictAboutAnythingElse(t *testing.T) {
	h := grading.Header{Run: "g0123456789", Nonce: "nonce-nonce-nonce-1", ControllerVersion: "v1", Runtime: "docker/runc"}
	archive := []byte("the bytes graded")
	sum := sha256.Sum256(archive)
	taskDigest := strings.Repeat("d", 64)
	good := func() (*schema.Verdict, *outcome) {
		v := schema.New(schema.Task{ID: "t", Digest: taskDigest, Kind: schema.KindFunction}, schema.TierStrict)
		v.RunID, v.Nonce, v.Controller = h.Run, h.Nonce, h.Controller()
		v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(archive))}
		return v, &outcome{verdict: v, archive: archive, task: taskDigest, tier: schema.TierStrict}
	}
	if v, out := good(); bound(v, h, out, nil) != nil {
		t.Fatalf("a faithful verdict: %v", bound(v, h, out, nil))
	}
	// A failure of the grader is ERROR, and ERROR is nothing else.
	if v, out := good(); bound(v, h, out, errors.New("daemon gone")) == nil {
		t.Error("a PASS returned with an error: accepted")
	}
	if v, out := good(); bound(grading.Errored(v, "", "x"), h, out, nil) == nil {
		t.Error("an ERROR returned without an error: accepted")
	}
	if v, out := good(); bound(grading.Errored(v, "", "x"), h, out, errors.New("daemon gone")) != nil {
		t.Error("an ERROR with its error: refused")
	}
	for name, edit := range map[string]func(v *schema.Verdict, out *outcome){
		"another run":        func(v *schema.Verdict, _ *outcome) { v.RunID = "g9999999999" },
		"another nonce":      func(v *schema.Verdict, _ *outcome) { v.Nonce = "nonce-nonce-nonce-2" },
		"another tier":       func(v *schema.Verdict, _ *outcome) { v.Tier = schema.TierCompat },
		"another task":       func(v *schema.Verdict, _ *outcome) { v.Task.Digest = strings.Repeat("e", 64) },
		"other bytes":        func(_ *schema.Verdict, out *outcome) { out.archive = []byte("other bytes") },
		"no bytes":           func(_ *schema.Verdict, out *outcome) { out.archive = nil },
		"another size":       func(v *schema.Verdict, _ *outcome) { v.Submission.Size++ },
		"another controller": func(v *schema.Verdict, _ *outcome) { v.Controller.Version = "v2" },
		"another runtime":    func(v *schema.Verdict, _ *outcome) { v.Controller.Runtime = "docker/runsc" },
	} {
		v, out := good()
		edit(v, out)
		if bound(v, h, out, nil) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
