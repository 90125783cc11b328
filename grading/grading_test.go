package grading_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/schema"
)

func TestCompleteFillsAndChecks(t *testing.T) {
	h, err := grading.Header{}.Complete()
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Run) != 11 || !strings.HasPrefix(h.Run, "g") || !schema.ValidNonce(h.Nonce) || h.ControllerVersion == "" {
		t.Fatalf("filled header %+v", h)
	}
	if again, _ := (grading.Header{}).Complete(); again.Run == h.Run || again.Nonce == h.Nonce {
		t.Fatal("two headers share a run id or a nonce")
	}
	keep := grading.Header{Run: "r-1", Nonce: "nonce-nonce-nonce-1", ControllerVersion: "v9", Runtime: "docker/runc"}
	if got, err := keep.Complete(); err != nil || got.Run != keep.Run || got.Nonce != keep.Nonce || got.ControllerVersion != "v9" {
		t.Fatalf("a full header changed: %+v, %v", got, err)
	}
	for name, h := range map[string]grading.Header{
		"upper-case run id":   {Run: "Run"},
		"run id too long":     {Run: strings.Repeat("a", 65)},
		"short nonce":         {Nonce: "short"},
		"nonce with a slash":  {Nonce: "nonce/nonce/nonce/1"},
		"runtime with spaces": {Runtime: "docker runc"},
		"control character":   {ControllerVersion: "v1\n"},
		"version too long":    {ControllerVersion: strings.Repeat("v", 129)},
	} {
		if _, err := h.Complete(); !errors.Is(err, grading.ErrBadRequest) {
			t.Errorf("%s: %v, want ErrBadRequest", name, err)
		}
	}
}

// TestLogOrderAndProgress: events from several goroutines all land, each
// handed to Progress exactly once, in the order the log keeps.
func TestLogOrderAndProgress(t *testing.T) {
	var seen []grading.Event
	h := grading.Header{Run: "r1", Progress: func(e grading.Event) { seen = append(seen, e) }}
	log := grading.NewLog(h)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.Add("phase", "message", "i", i, "dangling")
		}()
	}
	wg.Wait()
	got := log.Events()
	if len(got) != 50 || len(seen) != 50 {
		t.Fatalf("%d events, %d reported", len(got), len(seen))
	}
	for i, e := range got {
		if e.RunID != "r1" || e.Phase != "phase" || len(e.Attrs) != 1 || e.Attrs["i"] != seen[i].Attrs["i"] {
			t.Fatalf("event %d: %+v, reported %+v", i, e, seen[i])
		}
		if p := e.Pairs(); len(p) != 2 || p[0] != "i" {
			t.Fatalf("pairs %v", p)
		}
	}
	got[0].Phase = "changed"
	if log.Events()[0].Phase != "phase" {
		t.Fatal("Events returned the log itself, not a copy")
	}
}

func TestErroredKeepsTheBinding(t *testing.T) {
	v := schema.New(schema.Task{ID: "t", Digest: strings.Repeat("a", 64), Kind: schema.KindFunction}, schema.TierStrict)
	v.RunID, v.Nonce = "r1", "nonce-nonce-nonce-1"
	v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: strings.Repeat("b", 64), Size: 3}
	v.SetCases([]schema.Case{{ID: "a", Outcome: schema.OutcomeFail, DecidedBy: schema.DecidedByJSON, Exit: schema.ExitNotRun}})
	before := *v
	grading.Errored(v, "", "the daemon went away")
	if v.Outcome != schema.OutcomeError || v.ReasonCode != schema.ReasonInfrastructure || v.Reason != "the daemon went away" {
		t.Fatalf("%s %s %q", v.Outcome, v.ReasonCode, v.Reason)
	}
	if v.RunID != before.RunID || v.Submission != before.Submission || v.Task != before.Task || len(v.Cases) != 1 {
		t.Fatal("Errored changed what the verdict is bound to")
	}
	if grading.Errored(v, schema.ReasonJudgeCrashed, "x").ReasonCode != schema.ReasonJudgeCrashed {
		t.Fatal("the code given was not kept")
	}
}
