package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	sgbatch "github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

func init() {
	register(command{name: "run", summary: "grade many submissions (JSONL items) into a resumable run directory", do: runRun})
}

const runAbout = `Grades every item of a JSONL file against tasks, N at a time, and writes each item's signed
verdict to OUT/items/<item>/ (bundle.sigstore.json, submission: the exact bytes graded,
verdict.json), one line per item to OUT/results.jsonl and the counts to OUT/summary.json.

An item is a SWE-bench prediction {"instance_id", "model_patch", "model_name_or_path"}, graded
against the compat task whose id is its instance_id, or a strict item {"id" (optional), "task",
"submission": a directory or tar file, relative to the items file}.

Running again with the same --out resumes: an item is kept, not graded again, when its bundle
verifies (with OUT/key.pub) and its signed verdict is the item's own: for the item's submission as
it is now, its task (id, digest, tier), and a nonce naming the item in this run; any other item is
graded again, an ERROR only with --retry-errors. A resume needs the signing key: with the default
ephemeral key a run cannot be resumed. A run directory made before verdicts named their items (no
OUT/run.json) is refused: grade into a new --out.

Exit codes: 0 every item graded (PASS or FAIL: a run is a measurement), 2 usage, 3 grader errors,
too many errors (the run stopped) or interrupted (resume by running the same command again).`

// runArgs is a run's command line.
type runArgs struct {
	items, tasks, out, key, maxErrors string
	parallel                          int
	retryErrors                       bool
	backendArgs
}

func runRun(ctx context.Context, args []string, stdio IO) error {
	var a runArgs
	fs := flagSet(stdio.Stderr, "run", "--items FILE.jsonl --tasks DIR[,DIR...] --out DIR [flags]", runAbout)
	fs.StringVar(&a.items, "items", "", "JSONL `FILE` of items (required)")
	fs.StringVar(&a.tasks, "tasks", "", "comma-separated task directories, or directories of task directories (required)")
	fs.StringVar(&a.out, "out", "", "run `DIR`, created if missing; the same DIR resumes (required)")
	fs.IntVar(&a.parallel, "parallel", controller.DefaultMaxInFlight(), "grade `N` items at once (default: the CPUs)")
	fs.StringVar(&a.key, "key", "", keyHelp+"; needed to resume")
	fs.BoolVar(&a.retryErrors, "retry-errors", false, "on resume, grade ERROR items again")
	a.backendArgs.register(fs)
	fs.StringVar(&a.maxErrors, "max-errors", "", "stop the run when the grader errors on more than `N` items, or a FRACTION (0.2, 20%) of those done, after 5 (default: 10 or 20%, whichever is larger)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if a.items == "" || a.tasks == "" || a.out == "" || fs.NArg() != 0 {
		return usagef("--items FILE, --tasks DIR and --out DIR are required, and nothing else")
	}
	if a.parallel < 1 {
		return usagef("--parallel must be at least 1")
	}
	opts := sgbatch.Options{Out: a.out, Parallel: a.parallel, RetryErrors: a.retryErrors}
	if a.maxErrors != "" {
		th, err := sgbatch.ParseThreshold(a.maxErrors)
		if err != nil {
			return usagef("--max-errors %v", err)
		}
		opts.MaxErrors = &th
	}
	items, err := sgbatch.ReadItems(a.items)
	if err != nil {
		return badInput(fmt.Errorf("--items %s: %w", a.items, err))
	}
	opts.Items = items
	var dirs []string
	for _, d := range strings.Split(a.tasks, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	if opts.Tasks, err = sgbatch.LoadTasks(ctx, dirs); err != nil {
		return badInput(err)
	}
	if _, err := sgbatch.ReadRunInfo(a.out); errors.Is(err, sgbatch.ErrOldRun) {
		return badInput(fmt.Errorf("%w: its verdicts do not name their items, so they cannot be resumed; grade into a new --out", err))
	}
	if a.key == "" {
		for _, f := range []string{sgbatch.KeyFile, sgbatch.ResultsFile} {
			if _, err := os.Stat(filepath.Join(a.out, f)); err == nil {
				return usagef("%s holds a run already: resuming it needs --key, the private key that signed it (a run signed with the default ephemeral key cannot be resumed; use a new --out)", a.out)
			}
		}
	}
	signer, ephemeral, err := loadSigner(a.key)
	if err != nil {
		return err
	}
	opts.Signer = signer
	if ephemeral {
		fmt.Fprintf(stdio.Stderr, "run: signing with an ephemeral key (public key: %s); this run cannot be resumed — give --key FILE (strictgrade keygen) for one that can\n",
			filepath.Join(a.out, sgbatch.KeyFile))
	}
	// One slog line per grade event would bury the progress: warnings only.
	quiet := slog.New(slog.NewTextHandler(stdio.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctrl, closeCtrl, err := a.open(ctx, stdio, controller.Config{Signer: signer, Logger: quiet, MaxInFlight: a.parallel}, true)
	if err != nil {
		return err
	}
	defer closeCtrl()
	opts.Controller = ctrl
	opts.Baselines = runBaselines(stdio, opts.Tasks, ctrl.RuntimeImage())
	prog := newRunProgress(stdio.Stderr)
	opts.Progress = prog.update
	sum, err := sgbatch.Run(ctx, opts)
	prog.finish()
	if sum != nil {
		printRunSummary(stdio.Stdout, a.out, sum)
	}
	switch {
	case errors.Is(err, sgbatch.ErrBadItem), errors.Is(err, sgbatch.ErrKeyMismatch):
		return badInput(err)
	case errors.Is(err, sgbatch.ErrOldRun):
		return badInput(fmt.Errorf("%w: its verdicts do not name their items, so they cannot be resumed; grade into a new --out", err))
	case errors.Is(err, sgbatch.ErrInterrupted) && sum == nil:
		return fmt.Errorf("interrupted before any item was graded: %w", err)
	case errors.Is(err, sgbatch.ErrInterrupted):
		if ephemeral {
			return fmt.Errorf("interrupted: %d items not graded; the finished verdicts in %s were signed with an ephemeral key, so this run cannot be resumed: start again with a new --out and --key FILE (strictgrade keygen)",
				sum.Pending, a.out)
		}
		return fmt.Errorf("interrupted: %d items not graded; every finished verdict is kept in %s — resume with: strictgrade run --items %s --tasks %s --out %s --key %s",
			sum.Pending, a.out, a.items, a.tasks, a.out, a.key)
	case errors.Is(err, sgbatch.ErrTooManyErrors):
		return fmt.Errorf("%v; the run stopped (%d items not started). See %s for the errors; fix the grader, then resume with --retry-errors",
			err, sum.Pending, filepath.Join(a.out, sgbatch.ResultsFile))
	case err != nil:
		return err
	}
	if n := sum.Outcomes[schema.OutcomeError]; n > 0 {
		return fmt.Errorf("the grader errored on %d items (ERROR, not FAIL): see %s; grade them again with --retry-errors",
			n, filepath.Join(a.out, sgbatch.ResultsFile))
	}
	return nil
}

func printRunSummary(w io.Writer, out string, s *sgbatch.Summary) {
	fmt.Fprintf(w, "run: %d items: %d PASS, %d FAIL, %d ERROR", s.Items,
		s.Outcomes[schema.OutcomePass], s.Outcomes[schema.OutcomeFail], s.Outcomes[schema.OutcomeError])
	if n := s.Outcomes[schema.OutcomeQuarantined]; n > 0 {
		fmt.Fprintf(w, ", %d QUARANTINED", n)
	}
	if s.Pending > 0 {
		fmt.Fprintf(w, ", %d not graded", s.Pending)
	}
	fmt.Fprintf(w, "; %d graded now, %d kept from before; %.1f grades/min; %s\n",
		s.Graded, s.Resumed, s.GradesPerMinute, filepath.Join(out, sgbatch.SummaryFile))
}

// runProgress shows a run's progress on stderr: a bar with ETA on a
// terminal, else a plain line at most every plainEvery (and the last).
type runProgress struct {
	w    io.Writer
	tty  bool
	mu   sync.Mutex
	bar  *progressbar.ProgressBar
	last time.Time
}

const plainEvery = 10 * time.Second

func newRunProgress(w io.Writer) *runProgress {
	f, ok := w.(*os.File)
	return &runProgress{w: w, tty: ok && term.IsTerminal(int(f.Fd())), last: time.Now()}
}

func (p *runProgress) update(u sgbatch.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if u.Done == 0 {
		fmt.Fprintf(p.w, "run: %d items to grade, %d kept from a previous run\n", u.Total, u.Resumed)
		if p.tty && u.Total > 0 {
			p.bar = progressbar.NewOptions(u.Total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription("run"),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionSetElapsedTime(true),
				progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetWidth(30))
			p.bar.RenderBlank()
		}
		return
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("run (%d ERROR)", u.Errors))
		p.bar.Set(u.Done)
		return
	}
	if u.Done < u.Total && time.Since(p.last) < plainEvery {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "run: %d/%d done, %d ERROR, eta %s\n", u.Done, u.Total, u.Errors, u.ETA)
}

func (p *runProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}

// runBaselines returns the baselines task check recorded for the compat
// tasks of a run, by task digest, and says on stderr how many it has.
func runBaselines(stdio IO, tasks sgbatch.Tasks, runtimeImage string) map[string]schema.Outcome {
	out := map[string]schema.Outcome{}
	compats, missing := 0, ""
	for _, id := range slices.Sorted(maps.Keys(tasks)) {
		ct, ok := tasks[id].(*compat.Task)
		if !ok {
			continue
		}
		compats++
		if o, why := lookupBaseline(ct, runtimeImage); o != "" {
			out[ct.Digest] = o
		} else if missing == "" {
			missing = why
		}
	}
	if compats > 0 && len(out) < compats {
		fmt.Fprintf(stdio.Stderr, "run: %d of %d compat tasks have a recorded baseline; the others' verdicts record none and flipped is false (first: %s)\n", len(out), compats, missing)
	}
	return out
}
