package batch_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/schema"
)

// The attacks of issue 29 items 1 and 2: each forges a verdict for an item
// out of what a run directory holds. A resume must grade the item again,
// and verify --run must refuse the forged record.

// bindFixture lays out the tasks "copy" and "copy2" (the same task under
// two ids, so with two digests), the submissions honest/ and wrong/, and
// the items lines.
func bindFixture(t *testing.T, lines ...string) fixture {
	t.Helper()
	root := t.TempDir()
	copyTask(t, filepath.Join(root, "tasks"), "copy")
	copyTask(t, filepath.Join(root, "tasks"), "copy2")
	writeFiles(t, root, map[string]string{"honest/solution.py": copySource, "wrong/solution.py": wrongSource,
		"items.jsonl": strings.Join(lines, "\n") + "\n"})
	items, err := batch.ReadItems(filepath.Join(root, "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := batch.LoadTasks(t.Context(), []string{filepath.Join(root, "tasks")})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{items: items, tasks: tasks, out: filepath.Join(root, "out")}
}

// oldSafeID is f7459a3's directory name of an id that needs hashing.
func oldSafeID(prefix, id string) string {
	sum := sha256.Sum256([]byte(id))
	return prefix + "-" + hex.EncodeToString(sum[:6])
}

// wantOutcomes checks results.jsonl and verify --run: every item verifies
// and has the outcome want names.
func wantOutcomes(t *testing.T, f fixture, s *attest.Signer, want map[string]schema.Outcome) {
	t.Helper()
	recs := byItem(t, readRecords(t, f.out))
	for id, o := range want {
		if recs[id].Outcome != o {
			t.Errorf("item %q: results.jsonl says %s, want %s", id, recs[id].Outcome, o)
		}
	}
	checks, err := batch.VerifyRun(f.out, s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != len(want) {
		t.Errorf("verify: %d checks, want %d", len(checks), len(want))
	}
	for _, c := range checks {
		switch {
		case !c.Verified():
			t.Errorf("verify: item %q: %v", c.Record.Item, c.Err)
		case c.Verdict.Outcome != want[c.Record.Item]:
			t.Errorf("verify: item %q verified as %s, want %s", c.Record.Item, c.Verdict.Outcome, want[c.Record.Item])
		}
	}
}

// verifyFails checks that verify --run refuses the items ids and accepts
// the others.
func verifyFails(t *testing.T, f fixture, s *attest.Signer, ids ...string) {
	t.Helper()
	checks, err := batch.VerifyRun(f.out, s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if bad := slices.Contains(ids, c.Record.Item); bad == c.Verified() {
			t.Errorf("verify: item %q: verified %v (%v), want %v", c.Record.Item, c.Verified(), c.Err, !bad)
		}
	}
}

// editRecord rewrites item id's line of results.jsonl with edit.
func editRecord(t *testing.T, out, id string, edit func(*batch.Record)) {
	t.Helper()
	recs := readRecords(t, out)
	var buf bytes.Buffer
	for _, r := range recs {
		if r.Item == id {
			edit(&r)
		}
		line, _ := json.Marshal(r)
		buf.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(out, batch.ResultsFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyItemFiles copies item from's bundle, submission and verdict over
// item to's.
func copyItemFiles(t *testing.T, out string, from, to batch.Record) {
	t.Helper()
	for _, p := range [][2]string{{from.Bundle, to.Bundle}, {from.Submission, to.Submission}, {from.Verdict, to.Verdict}} {
		data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(p[0])))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, filepath.FromSlash(p[1])), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCollidingItemIDs (issue 29 item 1): an item id equal to another
// item's hashed directory name under f7459a3's scheme shares no directory
// with it, in either order, through a run and a resume.
func TestCollidingItemIDs(t *testing.T) {
	victim := "copy:honest" // the default id of {"task":"copy","submission":"honest"}
	forger := oldSafeID("copy_honest", victim)
	for name, lines := range map[string][]string{
		"victim first": {`{"task":"copy","submission":"honest"}`, `{"id":"` + forger + `","task":"copy","submission":"wrong"}`},
		"forger first": {`{"id":"` + forger + `","task":"copy","submission":"wrong"}`, `{"task":"copy","submission":"honest"}`},
	} {
		t.Run(name, func(t *testing.T) {
			f := bindFixture(t, lines...)
			if a, b := batch.SafeID(victim), batch.SafeID(forger); a == b {
				t.Errorf("SafeID(%q) = SafeID(%q) = %q", victim, forger, a)
			}
			signer := newSigner(t)
			ctrl := fakeController(t, signer, 1, false)
			want := map[string]schema.Outcome{victim: schema.OutcomePass, forger: schema.OutcomeFail}
			for _, run := range []string{"run", "resume"} {
				if _, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out, Parallel: 1}); err != nil {
					t.Fatalf("%s: %v", run, err)
				}
				wantOutcomes(t, f, signer, want)
			}
		})
	}
}

// TestResumeRefusesCopiedVerdict (issue 29 item 2): a PASS item's bundle,
// submission and verdict copied into a FAIL item's directory are not kept
// by a resume; with the FAIL item's record rewritten to match, verify
// --run refuses it.
func TestResumeRefusesCopiedVerdict(t *testing.T) {
	f := bindFixture(t, `{"id":"pass","task":"copy","submission":"honest"}`, `{"id":"fail","task":"copy","submission":"wrong"}`)
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 1, false)
	opts := batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out, Parallel: 1}
	if _, err := batch.Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	recs := byItem(t, readRecords(t, f.out))
	copyItemFiles(t, f.out, recs["pass"], recs["fail"])
	verifyFails(t, f, signer, "fail")
	editRecord(t, f.out, "fail", func(r *batch.Record) {
		p := recs["pass"]
		r.Outcome, r.ReasonCode, r.Nonce, r.SubmissionSHA256, r.Timings = p.Outcome, p.ReasonCode, p.Nonce, p.SubmissionSHA256, p.Timings
	})
	verifyFails(t, f, signer, "fail")

	before := grades()
	sum, err := batch.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Graded != 1 || sum.Resumed != 1 || grades()-before != 1 {
		t.Errorf("resume: %+v; want item fail graded again", sum)
	}
	wantOutcomes(t, f, signer, map[string]schema.Outcome{"pass": schema.OutcomePass, "fail": schema.OutcomeFail})
}

// TestVerifyRefusesRedirectedRecord (issue 29 item 2): a results.jsonl
// line edited to point an item at another item's bundle, of the same task
// or of another, is refused by verify --run, and a resume regrades it.
func TestVerifyRefusesRedirectedRecord(t *testing.T) {
	for _, tt := range []struct{ name, passTask string }{{"same task", "copy"}, {"another task", "copy2"}} {
		t.Run(tt.name, func(t *testing.T) {
			f := bindFixture(t, `{"id":"pass","task":"`+tt.passTask+`","submission":"honest"}`, `{"id":"fail","task":"copy","submission":"wrong"}`)
			signer := newSigner(t)
			ctrl := fakeController(t, signer, 1, false)
			opts := batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out, Parallel: 1}
			if _, err := batch.Run(t.Context(), opts); err != nil {
				t.Fatal(err)
			}
			recs := byItem(t, readRecords(t, f.out))
			p := recs["pass"]
			editRecord(t, f.out, "fail", func(r *batch.Record) {
				*r = p
				r.Item = "fail"
			})
			// Both records name pass's bundle: neither verifies.
			verifyFails(t, f, signer, "fail", "pass")
			if _, err := batch.Run(t.Context(), opts); err != nil {
				t.Fatal(err)
			}
			wantOutcomes(t, f, signer, map[string]schema.Outcome{"pass": schema.OutcomePass, "fail": schema.OutcomeFail})
			if r := byItem(t, readRecords(t, f.out))["fail"]; r.Task != "copy" || r.Bundle == p.Bundle {
				t.Errorf("item fail after the resume: %+v", r)
			}
		})
	}
}

// TestVerifyRefusesSharedBundle (issue 29 item 1): two records naming one
// bundle are both refused.
func TestVerifyRefusesSharedBundle(t *testing.T) {
	f := bindFixture(t, `{"id":"a","task":"copy","submission":"honest"}`, `{"id":"b","task":"copy","submission":"honest"}`)
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 1, false)
	if _, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out}); err != nil {
		t.Fatal(err)
	}
	a := byItem(t, readRecords(t, f.out))["a"]
	editRecord(t, f.out, "b", func(r *batch.Record) { *r = a; r.Item = "b" })
	checks, err := batch.VerifyRun(f.out, signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if c.Verified() {
			t.Errorf("item %q verified; its bundle backs two items", c.Record.Item)
		}
	}
}

// TestResumeRegradesChangedWorkspace (issue 29 item 2): a strict item
// whose workspace changed after its PASS is graded again on resume, as a
// compat item whose patch changed is.
func TestResumeRegradesChangedWorkspace(t *testing.T) {
	f := bindFixture(t, `{"id":"x","task":"copy","submission":"honest"}`)
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 1, false)
	opts := batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out}
	if _, err := batch.Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, f, signer, map[string]schema.Outcome{"x": schema.OutcomePass})
	if err := os.WriteFile(filepath.Join(f.items[0].Submission, "solution.py"), []byte(wrongSource), 0o644); err != nil {
		t.Fatal(err)
	}
	before := grades()
	sum, err := batch.Run(t.Context(), opts)
	if err != nil || sum.Graded != 1 || grades()-before != 1 {
		t.Fatalf("resume after the workspace changed: %+v, %v; want the item graded again", sum, err)
	}
	wantOutcomes(t, f, signer, map[string]schema.Outcome{"x": schema.OutcomeFail})
	// Unchanged since: kept.
	if sum, err := batch.Run(t.Context(), opts); err != nil || sum.Graded != 0 || sum.Resumed != 1 {
		t.Fatalf("second resume: %+v, %v; want the item kept", sum, err)
	}
}

// TestRunRefusesOldRun: a run directory without run.json (f7459a3's
// layout, whose verdicts name no item) is refused by Run, before anything
// is written to it, and by VerifyRun.
func TestRunRefusesOldRun(t *testing.T) {
	f := newFixture(t, 1)
	writeFiles(t, f.out, map[string]string{batch.ResultsFile: `{"item":"item a"}` + "\n"})
	signer := newSigner(t)
	_, err := batch.Run(t.Context(), batch.Options{Controller: fakeController(t, signer, 1, false), Signer: signer,
		Items: f.items, Tasks: f.tasks, Out: f.out})
	if !errors.Is(err, batch.ErrOldRun) {
		t.Errorf("Run: %v, want ErrOldRun", err)
	}
	for _, name := range []string{batch.KeyFile, batch.RunFile, batch.ItemsDir} {
		if _, err := os.Stat(filepath.Join(f.out, name)); err == nil {
			t.Errorf("Run wrote %s into an old run directory", name)
		}
	}
	if _, err := batch.VerifyRun(f.out, signer.PublicKey()); !errors.Is(err, batch.ErrOldRun) {
		t.Errorf("VerifyRun: %v, want ErrOldRun", err)
	}
}

// TestVerdictFileMustMatch: verdict.json, the readable copy beside the
// bundle, edited to say PASS for a FAIL, fails verify --run, and a resume
// grades the item again.
func TestVerdictFileMustMatch(t *testing.T) {
	f := bindFixture(t, `{"id":"x","task":"copy","submission":"wrong"}`)
	signer := newSigner(t)
	opts := batch.Options{Controller: fakeController(t, signer, 1, false), Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out}
	if _, err := batch.Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.out, filepath.FromSlash(readRecords(t, f.out)[0].Verdict))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(data, []byte(`"outcome": "FAIL"`), []byte(`"outcome": "PASS"`), 1)
	if bytes.Equal(edited, data) {
		t.Fatalf("verdict.json says no FAIL:\n%s", data)
	}
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	verifyFails(t, f, signer, "x")
	before := grades()
	if sum, err := batch.Run(t.Context(), opts); err != nil || sum.Graded != 1 || grades()-before != 1 {
		t.Fatalf("resume: %+v, %v; want the item graded again", sum, err)
	}
	wantOutcomes(t, f, signer, map[string]schema.Outcome{"x": schema.OutcomeFail})
}
