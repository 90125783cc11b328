package batch

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

// Files of a run directory.
const (
	ResultsFile = "results.jsonl"
	SummaryFile = "summary.json"
	KeyFile     = "key.pub"
	ItemsDir    = "items"
	// In each OUT/items/<SafeID>/:
	BundleFile     = "bundle.sigstore.json"
	SubmissionFile = "submission"
	VerdictFile    = "verdict.json"
)

var (
	// ErrInterrupted: ctx ended before every item was graded. Every
	// finished verdict is kept; running again with the same Options
	// resumes.
	ErrInterrupted = errors.New("batch: interrupted")
	// ErrTooManyErrors: the grader errored on more items than
	// Options.MaxErrors allows; no new item was started.
	ErrTooManyErrors = errors.New("batch: too many grader errors")
	// ErrKeyMismatch: the run directory's key.pub is not the signer's
	// public key, so its verdicts could not be resumed.
	ErrKeyMismatch = errors.New("batch: the run directory was signed with another key")
)

// Threshold is how many grader errors (ERROR verdicts, and errors without
// a verdict) a run tolerates: it stops once at least MinItems items are
// done and the errors exceed both Count and Fraction of the items done.
type Threshold struct {
	Count    int
	Fraction float64
}

// MinItems is how many items a run grades before Threshold applies.
const MinItems = 5

// DefaultMaxErrors is 10 items or 20%, whichever is larger.
var DefaultMaxErrors = Threshold{Count: 10, Fraction: 0.2}

// Exceeded reports whether errors among done items exceed t.
func (t Threshold) Exceeded(errs, done int) bool {
	return done >= MinItems && float64(errs) > math.Max(float64(t.Count), t.Fraction*float64(done))
}

// ParseThreshold reads N (a count) or a fraction: 0.2 or 20%.
func ParseThreshold(s string) (Threshold, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 {
			return Threshold{}, fmt.Errorf("%q: want a count N, a fraction 0..1 or a percentage", s)
		}
		return Threshold{Fraction: f / 100}, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return Threshold{Count: n}, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1 {
		return Threshold{}, fmt.Errorf("%q: want a count N, a fraction 0..1 or a percentage", s)
	}
	return Threshold{Fraction: f}, nil
}

// Options configures Run.
type Options struct {
	// Controller grades; its Config.MaxInFlight should be Parallel.
	Controller *controller.Controller
	// Signer is the controller's signer: the run writes its public key to
	// OUT/key.pub and resumes only verdicts that key verifies.
	Signer *attest.Signer
	Items  []Item
	Tasks  Tasks
	// Out is the run directory.
	Out string
	// Parallel is how many items are graded at once; default 2.
	Parallel int
	// RetryErrors re-grades items whose previous grade was an ERROR.
	RetryErrors bool
	// MaxErrors stops the run; nil means DefaultMaxErrors.
	MaxErrors *Threshold
	// Baselines holds the baseline outcome of compat tasks by task digest
	// (what strictgrade task check computed): a compat item of a task
	// found here is graded with it, so its verdict records the baseline
	// and whether the patch flipped it. A task not found here is graded
	// without one (flipped is then false).
	Baselines map[string]schema.Outcome
	// Progress, when set, is called after each item this run grades.
	Progress func(Progress)
}

// Progress reports one finished item, or, with Done 0 and no Record, the
// start of the grading.
type Progress struct {
	Record              Record
	Done, Total, Errors int // of the items this run grades
	// Resumed is how many items were kept from a previous run.
	Resumed      int
	Elapsed, ETA time.Duration
}

// Record is one line of results.jsonl.
type Record struct {
	Item       string         `json:"item"`
	Task       string         `json:"task"`
	Tier       schema.Tier    `json:"tier"`
	Outcome    schema.Outcome `json:"outcome"`
	ReasonCode string         `json:"reason_code,omitempty"`
	// Error is why a grade errored, when it did.
	Error      string `json:"error,omitempty"`
	TaskDigest string `json:"task_digest"`
	// SubmissionSHA256 is the digest of the graded bytes (Submission).
	SubmissionSHA256 string `json:"submission_sha256,omitempty"`
	Nonce            string `json:"nonce,omitempty"`
	// Bundle, Submission and Verdict are relative to the run directory;
	// empty when the grade gave no signed verdict.
	Bundle     string         `json:"bundle,omitempty"`
	Submission string         `json:"submission,omitempty"`
	Verdict    string         `json:"verdict,omitempty"`
	Timings    schema.Timings `json:"timings"`
	// WallMS is the grade's wall time in this process, waiting for a
	// slot included.
	WallMS   int64     `json:"wall_ms"`
	Finished time.Time `json:"finished"`
}

// errored reports whether the record is a grader error.
func (r Record) errored() bool { return r.Outcome == schema.OutcomeError }

// Summary is OUT/summary.json.
type Summary struct {
	Items int `json:"items"`
	// Graded is what this run graded, Resumed what it kept from a
	// previous run, Pending what is left (interrupted or stopped).
	Graded  int `json:"graded"`
	Resumed int `json:"resumed"`
	Pending int `json:"pending"`
	// Outcomes counts every finished item by outcome; an ERROR is the
	// grader's failure, never counted as a FAIL.
	Outcomes map[schema.Outcome]int `json:"outcomes"`
	// ErrorsWithoutVerdict are the ERRORs that have no signed verdict.
	ErrorsWithoutVerdict int     `json:"errors_without_verdict"`
	WallSeconds          float64 `json:"wall_seconds"`
	GradesPerMinute      float64 `json:"grades_per_minute"`
	// Stopped says why the run ended early: "interrupted" or "too many
	// errors".
	Stopped string `json:"stopped,omitempty"`
}

// Run grades opts.Items into opts.Out and returns the summary it also
// writes to OUT/summary.json, then writes the report (WriteReport), also
// when the run stopped early. Items whose verdict a previous run left and
// that verify are kept, not graded again (ERRORs only without
// RetryErrors). It returns an error wrapping ErrBadItem (nothing graded)
// for an item naming an unknown task or of the wrong form, ErrKeyMismatch,
// ErrInterrupted when ctx ended first, or ErrTooManyErrors; a Summary
// accompanies the last two.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	start := time.Now()
	if opts.Controller == nil || opts.Signer == nil || opts.Out == "" {
		return nil, errors.New("batch: Options.Controller, Signer and Out are required")
	}
	pub := opts.Signer.PublicKey()
	if opts.Parallel <= 0 {
		opts.Parallel = 2
	}
	limit := DefaultMaxErrors
	if opts.MaxErrors != nil {
		limit = *opts.MaxErrors
	}
	if err := checkItems(opts.Items, opts.Tasks); err != nil {
		return nil, err
	}
	// A run directory of the old layout is refused before anything is
	// written to it.
	run, err := ReadRunInfo(opts.Out)
	fresh := errors.Is(err, os.ErrNotExist)
	if err != nil && !fresh {
		return nil, err
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, err
	}
	if err := writeKey(opts.Out, opts.Signer); err != nil {
		return nil, err
	}
	// run.json before items/: a run killed in between is still a new one.
	if fresh {
		if run, err = newRun(opts.Out); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(opts.Out, ItemsDir), 0o755); err != nil {
		return nil, err
	}
	prev := readResults(filepath.Join(opts.Out, ResultsFile))

	// The resume decision, then results.jsonl rewritten with what is kept.
	var kept []Record
	var todo []Item
	for _, it := range opts.Items {
		if ctx.Err() != nil {
			break
		}
		if rec, ok := Resumable(ctx, opts.Out, pub, it, opts.Tasks[it.Task], prev[it.ID], opts.RetryErrors); ok {
			kept = append(kept, rec)
		} else {
			todo = append(todo, it)
		}
	}
	if err := ctx.Err(); err != nil {
		// Stopped while checking: results.jsonl is left as it was.
		return nil, fmt.Errorf("%w: %w", ErrInterrupted, err)
	}
	results := filepath.Join(opts.Out, ResultsFile)
	var buf bytes.Buffer
	for _, r := range kept {
		line, _ := json.Marshal(r)
		buf.Write(append(line, '\n'))
	}
	if err := WriteFileAtomic(results, buf.Bytes()); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(results, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	r := &runner{opts: opts, run: run, limit: limit, results: f, total: len(todo), resumed: len(kept), start: start}
	if opts.Progress != nil {
		opts.Progress(Progress{Total: len(todo), Resumed: len(kept), Elapsed: time.Since(start)})
	}
	r.grade(ctx, todo)

	sum := &Summary{Items: len(opts.Items), Graded: len(r.done), Resumed: len(kept),
		Pending: len(opts.Items) - len(kept) - len(r.done), Outcomes: map[schema.Outcome]int{}}
	for _, rec := range append(kept, r.done...) {
		sum.Outcomes[rec.Outcome]++
		if rec.errored() && rec.Bundle == "" {
			sum.ErrorsWithoutVerdict++
		}
	}
	sum.WallSeconds = time.Since(start).Seconds()
	if sum.WallSeconds > 0 {
		sum.GradesPerMinute = float64(sum.Graded) / (sum.WallSeconds / 60)
	}
	var runErr error
	switch {
	case r.stopped && sum.Pending > 0:
		sum.Stopped = "too many errors"
		runErr = fmt.Errorf("%w: %d of %d items graded in this run errored (limit: more than %d items or %g%% of those done, after %d)",
			ErrTooManyErrors, r.errors, len(r.done), limit.Count, limit.Fraction*100, MinItems)
	case sum.Pending > 0:
		sum.Stopped = "interrupted"
		runErr = fmt.Errorf("%w: %d of %d items not graded", ErrInterrupted, sum.Pending, sum.Items)
	}
	data, _ := json.MarshalIndent(sum, "", "  ")
	if err := WriteFileAtomic(filepath.Join(opts.Out, SummaryFile), append(data, '\n')); err != nil && runErr == nil {
		runErr = err
	}
	if err := WriteReport(opts.Out, pub); err != nil && runErr == nil {
		runErr = err
	}
	return sum, runErr
}

// checkItems refuses, before anything is graded, two items with one
// directory (one id), an item naming an unknown task, or of the other
// tier's form, or whose submission does not exist.
func checkItems(items []Item, tasks Tasks) error {
	dirs := map[string]string{}
	for _, it := range items {
		t, ok := tasks[it.Task]
		dir := SafeID(it.ID)
		prev, dup := dirs[dir]
		dirs[dir] = it.ID
		switch {
		case dup:
			return &LineError{it.Line, fmt.Errorf("item id %q shares the directory %s with item %q", it.ID, dir, prev)}
		case !ok:
			return &LineError{it.Line, fmt.Errorf("no task with id %q among --tasks", it.Task)}
		case it.Compat() && t.Tier() != schema.TierCompat:
			return &LineError{it.Line, fmt.Errorf("task %q is a %s task: it takes a submission directory or tar, not a patch", it.Task, t.Tier())}
		case !it.Compat() && t.Tier() == schema.TierCompat:
			return &LineError{it.Line, fmt.Errorf("task %q is a compat task: it takes a SWE-bench prediction (instance_id, model_patch)", it.Task)}
		}
		if !it.Compat() {
			if _, err := os.Stat(it.Submission); err != nil {
				return &LineError{it.Line, err}
			}
		}
	}
	return nil
}

// writeKey writes OUT/key.pub, or checks that the one there is pub.
func writeKey(out string, signer *attest.Signer) error {
	pem, err := signer.PublicKeyPEM()
	if err != nil {
		return err
	}
	pub := signer.PublicKey()
	path := filepath.Join(out, KeyFile)
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return WriteFileAtomic(path, pem)
	case err != nil:
		return err
	}
	have, err := attest.LoadPublicKey(old)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	h1, err1 := attest.KeyHint(have)
	h2, err2 := attest.KeyHint(pub)
	if err1 != nil || err2 != nil || h1 != h2 {
		return fmt.Errorf("%w: %s is not the signing key's public half; resume with the key that signed it, or use a new run directory", ErrKeyMismatch, path)
	}
	return nil
}

// readResults reads results.jsonl, the last line of each item winning. A
// line that does not parse (a killed run's last, half-written one) is
// skipped.
func readResults(path string) map[string]Record {
	recs := map[string]Record{}
	f, err := os.Open(path)
	if err != nil {
		return recs
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for {
		line, err := readLine(br)
		if err != nil {
			break
		}
		var r Record
		if json.Unmarshal(line, &r) == nil && r.Item != "" {
			recs[r.Item] = r
		}
	}
	return recs
}

// Resumable decides whether an item a previous run finished is kept. It
// is when OUT/items/<SafeID>/ holds a bundle that verifies with pub and
// whose signed verdict is this item's: its submission digest is that of
// the item's submission as it is now (controller.Admit: a strict item's
// canonical archive of its workspace or tar file, a compat item's patch)
// and of the submission file beside it, its task id, digest and tier are
// the task's, and its nonce names the item in this run (NamesItem) —
// unless the verdict is ERROR and retryErrors is set, or it is an ERROR
// grader_overloaded, which is always graded again. Nothing the
// previous record says is believed but what the signature covers. An
// item whose previous grade errored without any verdict is kept, as an
// ERROR, unless retryErrors is set. The record returned is the previous
// one when it agrees with the verdict, else one rebuilt from the verified
// verdict. ctx bounds reading the submission.
func Resumable(ctx context.Context, out string, pub crypto.PublicKey, it Item, t controller.Task, prev Record, retryErrors bool) (Record, bool) {
	if t == nil {
		return Record{}, false
	}
	run, err := ReadRunInfo(out)
	if err != nil {
		return Record{}, false
	}
	id, digest := describe(t)
	bundlePath, subPath, verdictPath := itemPaths(it.ID)
	bundle, err := attest.ReadBundleFile(filepath.Join(out, filepath.FromSlash(bundlePath)))
	if err != nil {
		// No verdict: only a recorded error without one is kept.
		ok := errors.Is(err, os.ErrNotExist) && prev.Item == it.ID && prev.errored() && prev.Bundle == "" &&
			prev.Task == id && prev.Tier == t.Tier() && prev.TaskDigest == digest && !retryErrors
		return prev, ok
	}
	current, err := admit(ctx, t, it)
	if err != nil {
		return Record{}, false
	}
	// The stored copy is read no further than the bytes it must equal.
	stored, err := readBounded(filepath.Join(out, filepath.FromSlash(subPath)), int64(len(current)))
	if err != nil || !bytes.Equal(stored, current) {
		return Record{}, false // the submission changed, or is not the one graded
	}
	sum := sha256.Sum256(current)
	want := attest.Expect{SubmissionSHA256: hex.EncodeToString(sum[:]), TaskDigest: digest, Tier: t.Tier()}
	res, err := attest.Verify(bundle, pub, want)
	if err != nil {
		return Record{}, false
	}
	v := res.Verdict
	if v.Task.ID != id || !NamesItem(run, it.ID, v.Nonce) {
		return Record{}, false // another task's or another item's verdict
	}
	if checkVerdictFile(filepath.Join(out, filepath.FromSlash(verdictPath)), v) != nil {
		return Record{}, false // verify would refuse it
	}
	if v.Outcome == schema.OutcomeError && (retryErrors || v.ReasonCode == schema.ReasonGraderOverloaded) {
		// An overloaded grade is always graded again.
		return Record{}, false
	}
	rec := Record{Item: it.ID, Task: id, Tier: t.Tier(), Outcome: v.Outcome, ReasonCode: v.ReasonCode,
		TaskDigest: digest, SubmissionSHA256: want.SubmissionSHA256, Nonce: v.Nonce,
		Bundle: bundlePath, Submission: subPath, Verdict: verdictPath,
		Timings: v.Timings, Finished: res.Statement.Predicate.TimeVerified}
	if prev.Item == it.ID && agrees(prev, rec) {
		return prev, true
	}
	return rec, true
}

// agrees reports whether a previous record says what the one rebuilt from
// its verified verdict says (its wall time and finish time aside).
func agrees(prev, rec Record) bool {
	prev.WallMS, prev.Finished, prev.Error = rec.WallMS, rec.Finished, rec.Error
	return prev == rec
}

// admit returns the bytes a grade of it against t binds its verdict to
// (controller.Admit).
func admit(ctx context.Context, t controller.Task, it Item) ([]byte, error) {
	if it.Compat() {
		return controller.Admit(ctx, t, controller.Submission{Diff: it.Patch})
	}
	st, err := os.Stat(it.Submission)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return controller.Admit(ctx, t, controller.Submission{Dir: it.Submission})
	}
	f, err := os.Open(it.Submission)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return controller.Admit(ctx, t, controller.Submission{Archive: f})
}

// runner grades the items left to grade.
type runner struct {
	opts    Options
	run     RunInfo
	limit   Threshold
	results *os.File
	total   int
	resumed int
	start   time.Time

	mu      sync.Mutex
	done    []Record
	errors  int
	stopped bool
}

func (r *runner) grade(ctx context.Context, todo []Item) {
	work := make(chan Item)
	var wg sync.WaitGroup
	for range min(r.opts.Parallel, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				// An item handed over as the run stopped is not started.
				if ctx.Err() == nil && !r.isStopped() {
					r.one(ctx, it)
				}
			}
		}()
	}
	for _, it := range todo {
		if ctx.Err() != nil || r.isStopped() {
			break
		}
		select {
		case work <- it:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

func (r *runner) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// one grades an item and records it. A grade that ctx's end cut short is
// not recorded: the item stays pending, for a resume.
func (r *runner) one(ctx context.Context, it Item) {
	t := r.opts.Tasks[it.Task]
	id, digest := describe(t)
	dir := filepath.Join(r.opts.Out, ItemsDir, SafeID(it.ID))
	bundlePath, subPath, verdictPath := itemPaths(it.ID)
	// A previous, unverifiable bundle never stands beside a new grade.
	if err := os.Remove(filepath.Join(dir, BundleFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.record(Record{Item: it.ID, Task: id, Tier: t.Tier(), Outcome: schema.OutcomeError, TaskDigest: digest,
			Error: err.Error(), Finished: time.Now().UTC()})
		return
	}
	began := time.Now()
	res, err := r.grader(ctx, t, it, ItemNonce(r.run, it.ID))
	// A grade the host's load decided says nothing of the submission:
	// graded again, after a pause, a bounded number of times.
	for _, pause := range overloadPauses {
		if res == nil || res.Verdict.ReasonCode != schema.ReasonGraderOverloaded || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		res, err = r.grader(ctx, t, it, ItemNonce(r.run, it.ID))
	}
	rec := Record{Item: it.ID, Task: id, Tier: t.Tier(), TaskDigest: digest, WallMS: time.Since(began).Milliseconds()}
	if ctx.Err() != nil && (err != nil || res == nil || res.Verdict.Outcome == schema.OutcomeError) {
		return // interrupted: left for a resume
	}
	if err != nil {
		rec.Error = strings.ReplaceAll(err.Error(), "\n", " ")
	}
	if res == nil {
		rec.Outcome = schema.OutcomeError
		rec.Finished = time.Now().UTC()
		r.record(rec)
		return
	}
	v := res.Verdict
	rec.Outcome, rec.ReasonCode, rec.Nonce, rec.Timings = v.Outcome, v.ReasonCode, v.Nonce, v.Timings
	rec.SubmissionSHA256 = v.Submission.SHA256
	if werr := writeItem(dir, res); werr != nil {
		rec.Outcome, rec.Error = schema.OutcomeError, "writing the verdict: "+werr.Error()
	} else {
		rec.Bundle, rec.Submission, rec.Verdict = bundlePath, subPath, verdictPath
	}
	rec.Finished = time.Now().UTC()
	r.record(rec)
}

// overloadPauses are the pauses before each new grade of an item whose
// grade was an ERROR grader_overloaded (sandbox.ErrOverloaded); one still
// overloaded after them is recorded as it is, and a resume grades it
// again.
var overloadPauses = []time.Duration{10 * time.Second, 30 * time.Second}

// grader grades it with nonce, which names the item (ItemNonce).
func (r *runner) grader(ctx context.Context, t controller.Task, it Item, nonce string) (*controller.Result, error) {
	if it.Compat() {
		_, digest := describe(t)
		return r.opts.Controller.Grade(ctx, t, controller.Submission{Diff: it.Patch, Baseline: r.opts.Baselines[digest], Nonce: nonce})
	}
	st, err := os.Stat(it.Submission)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return r.opts.Controller.Grade(ctx, t, controller.Submission{Dir: it.Submission, Nonce: nonce})
	}
	f, err := os.Open(it.Submission)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return r.opts.Controller.Grade(ctx, t, controller.Submission{Archive: f, Nonce: nonce})
}

// writeItem writes an item's files, each atomically, the bundle last: a
// bundle present is a grade finished and signed.
func writeItem(dir string, res *controller.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	verdict, err := json.MarshalIndent(res.Verdict, "", "  ")
	if err != nil {
		return err
	}
	archive := res.Archive
	if archive == nil {
		archive = []byte{}
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{SubmissionFile, archive}, {VerdictFile, append(verdict, '\n')}, {BundleFile, res.Signed.Bundle}} {
		if err := WriteFileAtomic(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

// record appends rec to results.jsonl, synced, and reports progress.
func (r *runner) record(rec Record) {
	line, _ := json.Marshal(rec)
	r.mu.Lock()
	r.results.Write(append(line, '\n'))
	r.results.Sync()
	r.done = append(r.done, rec)
	if rec.errored() {
		r.errors++
	}
	if !r.stopped && r.limit.Exceeded(r.errors, len(r.done)) {
		r.stopped = true
	}
	p := Progress{Record: rec, Done: len(r.done), Total: r.total, Errors: r.errors, Resumed: r.resumed, Elapsed: time.Since(r.start)}
	r.mu.Unlock()
	if p.Done > 0 {
		p.ETA = time.Duration(float64(p.Elapsed) / float64(p.Done) * float64(p.Total-p.Done)).Round(time.Second)
	}
	if r.opts.Progress != nil {
		r.opts.Progress(p)
	}
}

// WriteFileAtomic writes data to path through a synced temporary file in
// the same directory renamed over it: a reader, or a killed writer's
// successor, sees the old file or the whole new one, never part of it.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
