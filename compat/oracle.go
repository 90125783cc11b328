package compat

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/compat/diffgate"
	"github.com/strictgrade/strictgrade/compat/junit"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
)

//go:embed prepare.py
var prepareScript []byte

// runnerScript runs pytest with its output capped (see runner.py).
//
//go:embed runner.py
var runnerScript string

// runnerLimitExit is the exit status runner.py is told to use when the
// tests' output passed its cap. pytest's own are 0 to 5.
const runnerLimitExit = 86

// Engine is what the compat tier needs from a sandbox backend: runs, and
// volumes for the checkout and the inputs. Every sandbox.Backend is one.
type Engine interface {
	sandbox.Runner
	sandbox.Volumes
}

// Where things are inside the oracle containers.
const (
	InputsDir = "/inputs"          // read-only: bundle, filtered diff, hidden tests, plan, runner
	WorkDir   = "/work"            // the checkout; read-only for the test runs
	RepoDir   = "/work/repo"       // the repository: pytest's rootdir and confcutdir
	IniPath   = "/work/pytest.ini" // the judge-owned pytest configuration, outside the repository
	OutDir    = "/out"             // each container's own output directory: a tmpfs with a quota
)

// SourceDateEpoch is the fixed SOURCE_DATE_EPOCH of every oracle run
// (1980-01-01T00:00:00Z, the earliest time a zip file can record).
const SourceDateEpoch = "315532800"

// Request describes one compat grade or baseline check.
type Request struct {
	// Header names the run (its id labels every container and volume),
	// the nonce and the host; empty fields get fresh or default values.
	grading.Header
	Task *Task
	// Image is the oracle image (the Python image's ID). Every container
	// must report running exactly this image.
	Image string
	// Diff is the agent's unified diff. Grade requires it (an empty,
	// non-nil diff grades the base); Check requires nil.
	Diff []byte
	// BaselineOutcome is the task's baseline outcome when the caller knows
	// it (from Check). Grade records it and sets Flipped when it is FAIL
	// and the grade PASSes.
	BaselineOutcome schema.Outcome
}

// Outcome is the result of Grade or Check.
type Outcome struct {
	// Verdict is complete, schema-valid and unsigned.
	Verdict *schema.Verdict
	// Log says what happened, in order: the gate's decisions, each
	// container's exit, timings, image and diff digests, test output
	// excerpts and how the outcome was decided.
	Log []Entry
	// Filtered is the diff gate's output (Grade only; nil when the diff
	// was malformed).
	Filtered *diffgate.Filtered
}

// Fit reports whether a baseline Outcome found the task fit: the hidden
// tests fail at the base for the right reason, the same way twice, and the
// existing suite passes. A fit task's baseline verdict is FAIL.
func (o *Outcome) Fit() bool {
	v := o.Verdict
	return v != nil && v.Compat != nil && v.Compat.Mode == schema.ModeBaseline && v.Outcome == schema.OutcomeFail
}

// Entry is one line of a grade's log: the event of every tier.
type Entry = grading.Event

// Grade grades req.Diff against req.Task in final mode: the diff passes the
// gate, is applied to a fresh checkout of the base, the hidden tests are
// injected, and the existing suite then the hidden suite run, each in a
// fresh container. It returns PASS or FAIL with a nil error. An error means
// the oracle could not grade (never the candidate's fault); the Outcome
// then, when not nil, holds an ERROR verdict and the log so far. The
// verdict lists the first 256 dropped hunks, with paths cut to 256
// characters, and says in its reason how many it leaves out; the log and
// Outcome.Filtered have more.
func Grade(ctx context.Context, eng Engine, req Request) (*Outcome, error) {
	if req.Diff == nil {
		return nil, errors.New("compat: Grade needs a diff (an empty diff grades the base; use Check for the baseline)")
	}
	g, err := newGrader(eng, req, schema.ModeFinal)
	if err != nil {
		return nil, err
	}
	return g.finish(ctx, g.final)
}

// Check runs the task's baseline: no diff, the existing suite once and the
// hidden suite twice, each in a fresh container. The verdict (mode
// baseline) is FAIL when the task is fit: every hidden test fails for the
// right reason in both runs and the existing suite passes. It is
// QUARANTINED, with the reason, when the existing suite fails
// (baseline_suite_failed), a hidden test is missing (tests_missing), the
// two hidden runs disagree (flaky), a hidden test passes at the base
// (baseline_passed), a hidden test fails for the wrong reason — an import
// or collection error, a missing fixture, a skip or xfail
// (wrong_failure_reason) — or a run exceeds a limit (timeout,
// memory_limit, output_limit). Errors are as for Grade.
func Check(ctx context.Context, eng Engine, req Request) (*Outcome, error) {
	if req.Diff != nil {
		return nil, errors.New("compat: Check takes no diff")
	}
	g, err := newGrader(eng, req, schema.ModeBaseline)
	if err != nil {
		return nil, err
	}
	return g.finish(ctx, g.baseline)
}

// grader is the state of one Grade or Check call.
type grader struct {
	eng      Engine
	req      Request
	t        *Task
	mode     schema.CompatMode
	start    time.Time
	subm     schema.Submission
	filtered *diffgate.Filtered
	inputs   string // the inputs volume
	imageID  string
	timings  schema.Timings

	cl       sandbox.Cleanup // the volumes' removals
	teardown time.Duration

	mu  sync.Mutex // guards imageID
	log *grading.Log
}

func newGrader(eng Engine, req Request, mode schema.CompatMode) (*grader, error) {
	switch {
	case eng == nil:
		return nil, fmt.Errorf("%w: compat: nil engine", grading.ErrBadRequest)
	case req.Task == nil:
		return nil, fmt.Errorf("%w: compat: nil task", grading.ErrBadRequest)
	case req.Image == "":
		return nil, fmt.Errorf("%w: compat: no oracle image", grading.ErrBadRequest)
	}
	if req.BaselineOutcome != "" {
		if _, err := schema.ParseOutcome(string(req.BaselineOutcome)); err != nil {
			return nil, fmt.Errorf("%w: compat: baseline outcome: %w", grading.ErrBadRequest, err)
		}
	}
	h, err := req.Header.Complete()
	if err != nil {
		return nil, err
	}
	req.Header = h
	g := &grader{eng: eng, req: req, t: req.Task, mode: mode, start: time.Now(), log: grading.NewLog(h)}
	sum := sha256.Sum256(req.Diff)
	g.subm = schema.Submission{Kind: schema.SubmissionDiff, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(req.Diff))}
	return g, nil
}

func (g *grader) event(phase, msg string, kv ...any) { g.log.Add(phase, msg, kv...) }

// finish runs body, removes every volume, and completes the verdict: the
// body's, or an ERROR verdict when it failed.
func (g *grader) finish(ctx context.Context, body func(context.Context) (*schema.Verdict, error)) (*Outcome, error) {
	g.event("setup", "compat "+string(g.mode)+" started", "task", g.t.Spec.ID, "task_digest", g.t.Digest,
		"image", g.req.Image, "diff_sha256", g.subm.SHA256, "diff_bytes", g.subm.Size)
	v, err := body(ctx)
	g.cleanup(ctx)
	if err != nil {
		g.event("error", "could not grade", "error", err.Error())
		code := ""
		if errors.Is(err, sandbox.ErrOverloaded) {
			code = schema.ReasonGraderOverloaded
		}
		v = grading.Errored(g.skeleton(), code, g.reason(err.Error()))
	}
	g.timings.TeardownMS = g.teardown.Milliseconds()
	g.timings.TotalMS = time.Since(g.start).Milliseconds()
	v.Timings = g.timings
	if g.mode == schema.ModeBaseline {
		v.Compat.BaselineOutcome = v.Outcome
	} else if g.req.BaselineOutcome != "" {
		v.Compat.BaselineOutcome = g.req.BaselineOutcome
		v.Compat.Flipped = g.req.BaselineOutcome == schema.OutcomeFail && v.Outcome == schema.OutcomePass
	}
	if _, merr := schema.Marshal(v); merr != nil {
		return nil, fmt.Errorf("compat: the verdict fails its schema: %w", errors.Join(err, merr))
	}
	g.event("verdict", "verdict "+string(v.Outcome), "reason_code", v.ReasonCode, "reason", v.Reason,
		"tests_hash", v.TestsHash, "flipped", v.Compat.Flipped, "total_ms", v.Timings.TotalMS)
	out := &Outcome{Verdict: v, Log: g.log.Events(), Filtered: g.filtered}
	if err != nil {
		return out, err
	}
	return out, nil
}

// skeleton returns the verdict fields known before any test ran, with
// every expected test recorded as not run.
func (g *grader) skeleton() *schema.Verdict {
	v := schema.New(schema.Task{ID: g.t.Spec.ID, Digest: g.t.Digest, Kind: schema.KindRepository}, schema.TierCompat)
	v.RunID = g.req.Run
	v.Nonce = g.req.Nonce
	v.Submission = g.subm
	v.Controller = g.req.Controller()
	v.Images = schema.Images{Oracle: g.imageID}
	v.Compat.Mode = g.mode
	if g.filtered != nil {
		v.Compat.AppliedDiffSHA256 = g.filtered.SHA256
		v.Compat.DroppedHunks = verdictHunks(g.filtered)
	}
	v.SetCases(g.notRun("not run"))
	return v
}

// What a verdict records of the dropped hunks: the first maxVerdictHunks
// in diff order, each path cut to maxVerdictPath characters, and, when
// that is not all of them, a note in the reason with the counts. A verdict
// therefore stays far below schema.MaxSize whatever the diff; the grade's
// log has the longer list (Filtered.Dropped) and the counts by rule.
const (
	maxVerdictHunks = 256
	maxVerdictPath  = 256
	maxVerdictRule  = 256
)

func verdictHunks(f *diffgate.Filtered) []schema.DroppedHunk {
	n := min(len(f.Dropped), maxVerdictHunks)
	out := make([]schema.DroppedHunk, n)
	for i, d := range f.Dropped[:n] {
		out[i] = schema.DroppedHunk{Path: text(d.Path, maxVerdictPath), Rule: text(d.Rule, maxVerdictRule)}
	}
	return out
}

// omitted describes the dropped hunks a verdict does not list, or is
// empty when it lists them all: the total and the count of the most
// frequent rules.
func omitted(f *diffgate.Filtered) string {
	if f == nil || f.DroppedTotal <= maxVerdictHunks {
		return ""
	}
	rules := sortedKeys(f.DroppedByRule)
	slices.SortStableFunc(rules, func(a, b string) int { return f.DroppedByRule[b] - f.DroppedByRule[a] })
	var parts []string
	for i, r := range rules {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more rules", len(rules)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", text(r, 48), f.DroppedByRule[r]))
	}
	return fmt.Sprintf("the diff gate dropped %d hunks (%s); the verdict lists the first %d",
		f.DroppedTotal, strings.Join(parts, ", "), maxVerdictHunks)
}

// reason makes a verdict's reason out of s, escaped and cut by text,
// followed by the note about unlisted dropped hunks when there is one.
func (g *grader) reason(s string) string {
	note := omitted(g.filtered)
	switch {
	case note == "":
		return text(s, 1000)
	case s == "":
		return note
	}
	return text(s, 1000-utf8.RuneCountInString(note)-2) + "; " + note
}

// maxLoggedDrops bounds the log entries listing dropped hunks.
const maxLoggedDrops = 1000

// logDropped lists the dropped hunks Filtered recorded in the log, one
// entry per run of hunks with the same path and rule.
func (g *grader) logDropped(f *diffgate.Filtered) {
	logged := 0
	for i := 0; i < len(f.Dropped); {
		j := i + 1
		for j < len(f.Dropped) && f.Dropped[j] == f.Dropped[i] {
			j++
		}
		if logged == maxLoggedDrops {
			g.event("gate", "more hunks dropped", "hunks", f.DroppedTotal-i)
			return
		}
		g.event("gate", "hunk dropped", "path", f.Dropped[i].Path, "rule", f.Dropped[i].Rule, "hunks", j-i)
		logged++
		i = j
	}
	if n := len(f.Dropped); f.DroppedTotal > n {
		g.event("gate", "more hunks dropped", "hunks", f.DroppedTotal-n)
	}
}

// notRun records every expected test as not run.
func (g *grader) notRun(reason string) []schema.Case {
	var cases []schema.Case
	add := func(ids []string, suite schema.Suite) {
		for _, id := range ids {
			cases = append(cases, schema.Case{ID: id, Outcome: schema.OutcomeFail, DecidedBy: DecidedByOracle, Exit: schema.ExitNotRun,
				Suite: suite, Reason: text(reason, g.t.reasonChars())})
		}
	}
	add(g.t.ExistingIDs, schema.SuiteExisting)
	add(g.t.HiddenIDs, schema.SuiteHidden)
	return cases
}

// failEarly is a FAIL decided before any test ran.
func (g *grader) failEarly(code, decidedBy, reason string) *schema.Verdict {
	v := g.skeleton()
	v.Outcome = schema.OutcomeFail
	v.ReasonCode = code
	v.Reason = g.reason(reason)
	cases := g.notRun("not run: " + code)
	for i := range cases {
		cases[i].DecidedBy = decidedBy
	}
	v.SetCases(cases)
	g.event("decide", "FAIL decided by "+decidedBy, "reason_code", code, "reason", reason)
	return v
}

// final is Grade's body.
func (g *grader) final(ctx context.Context) (*schema.Verdict, error) {
	setup := time.Now()
	f, err := g.t.Gate().Filter(g.req.Diff)
	if err != nil {
		if errors.Is(err, diffgate.ErrDiff) {
			g.event("gate", "diff rejected", "error", err.Error())
			g.timings.SetupMS = time.Since(setup).Milliseconds()
			return g.failEarly(schema.ReasonRejectedArtifact, DecidedByDiffGate, err.Error()), nil
		}
		return nil, err
	}
	g.filtered = f
	g.logDropped(f)
	g.event("gate", "diff filtered", "sections", f.Sections, "kept_paths", len(f.Paths), "dropped_hunks", f.DroppedTotal,
		"dropped_by_rule", f.DroppedByRule, "ignored_lines", f.Ignored, "applied_diff_sha256", f.SHA256, "applied_diff_bytes", len(f.Diff))

	work, err := g.setup(ctx, f)
	g.timings.SetupMS = time.Since(setup).Milliseconds()
	if err != nil {
		return nil, err
	}
	oracle := time.Now()
	defer func() { g.timings.OracleMS = time.Since(oracle).Milliseconds() }()
	if err := g.prepare(ctx, work); err != nil {
		var fault *diffFault
		if errors.As(err, &fault) {
			return g.failEarly(fault.code, fault.decidedBy, fault.reason), nil
		}
		return nil, err
	}
	runs, err := g.suites(ctx, work, 1)
	if err != nil {
		return nil, err
	}
	return g.decideFinal(runs), nil
}

// baseline is Check's body.
func (g *grader) baseline(ctx context.Context) (*schema.Verdict, error) {
	setup := time.Now()
	work, err := g.setup(ctx, nil)
	g.timings.SetupMS = time.Since(setup).Milliseconds()
	if err != nil {
		return nil, err
	}
	oracle := time.Now()
	defer func() { g.timings.OracleMS = time.Since(oracle).Milliseconds() }()
	if err := g.prepare(ctx, work); err != nil {
		return nil, err
	}
	runs, err := g.suites(ctx, work, 2)
	if err != nil {
		return nil, err
	}
	v := g.decideBaseline(runs)
	reason, err := g.checkImports(ctx, work)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		g.shadowed(v, reason)
	}
	return v, nil
}

// newVolume creates a volume and registers its removal.
func (g *grader) newVolume(ctx context.Context, phase string) (string, error) {
	vol, err := g.eng.NewVolume(ctx, g.req.Run, phase)
	g.cl.Volume(g.eng, vol)
	return vol, err
}

// cleanup removes every volume the grading made, on a context that
// survives cancellation for a bounded time.
func (g *grader) cleanup(ctx context.Context) {
	start := time.Now()
	if err := g.cl.Run(ctx); err != nil {
		g.event("teardown", "volume removal failed", "error", err.Error())
	}
	g.teardown = time.Since(start)
}

// setup creates the inputs volume (bundle, hidden tests, plan, runner,
// judge-owned pytest configuration and, in final mode, the filtered diff)
// and the empty work volume.
func (g *grader) setup(ctx context.Context, f *diffgate.Filtered) (work string, err error) {
	inputs, err := g.newVolume(ctx, "oracle-inputs")
	if err != nil {
		return "", err
	}
	spool, err := os.CreateTemp("", "strictgrade-compat-task-*.tar")
	if err != nil {
		return "", err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	// The oracle's inputs are taken from the canonical archive whose
	// digest the verdict binds, not from the directory as it is now.
	man, err := g.t.archive(ctx, spool)
	if err != nil {
		return "", err
	}
	if man.ArchiveSHA256 != g.t.Digest {
		return "", fmt.Errorf("compat: task %s changed since it was loaded (digest %s, loaded %s)", g.t.Dir, man.ArchiveSHA256, g.t.Digest)
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	pr, pw := io.Pipe()
	written := make(chan struct{})
	go func() {
		defer close(written)
		pw.CloseWithError(g.writeInputs(pw, spool, f))
	}()
	im, err := g.eng.CopyIn(ctx, g.req.Run, inputs, pr, sandbox.CopyInOptions{Policy: taskPolicy})
	pr.Close()
	<-written
	if err != nil {
		return "", fmt.Errorf("compat: load the oracle's inputs: %w", err)
	}
	g.event("setup", "oracle inputs loaded", "files", len(im.Files), "bytes", im.TotalBytes, "sha256", im.ArchiveSHA256)
	work, err = g.newVolume(ctx, "oracle-work")
	if err != nil {
		return "", err
	}
	g.inputs = inputs
	return work, nil
}

// plan is what prepare.py reads.
type plan struct {
	Base    string   `json:"base"`
	Diff    bool     `json:"diff"`
	Allowed []string `json:"allowed"`
	Hidden  []string `json:"hidden"`
}

// writeInputs writes the inputs archive: the bundle and the hidden files
// out of the task's canonical archive, then the generated files.
func (g *grader) writeInputs(w io.Writer, taskArchive io.Reader, f *diffgate.Filtered) error {
	tw := tar.NewWriter(w)
	tr := tar.NewReader(taskArchive)
	hiddenPrefix := g.t.Spec.Hidden.Dir + "/"
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		var name string
		switch {
		case h.Name == g.t.Spec.Repo.Bundle:
			name = "repo.bundle"
		case strings.HasPrefix(h.Name, hiddenPrefix):
			name = "hidden/" + strings.TrimPrefix(h.Name, hiddenPrefix)
		default:
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: h.Size, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	p := plan{Base: g.t.Spec.Repo.Base, Allowed: []string{}, Hidden: g.t.HiddenFiles}
	if f != nil {
		p.Diff = len(f.Diff) > 0
		p.Allowed = f.Paths
	}
	planJSON, err := json.Marshal(p)
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{{"plan.json", planJSON}, {"prepare.py", prepareScript}, {"pytest.ini", g.t.pytestIni()}}
	if f != nil && len(f.Diff) > 0 {
		files = append(files, struct {
			name string
			data []byte
		}{"diff.patch", f.Diff})
	}
	for _, file := range files {
		if err := tw.WriteHeader(&tar.Header{Name: file.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(file.data)), Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(file.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// pytestIni is the judge-owned pytest configuration. The repository's own
// (pytest.ini, pyproject.toml, tox.ini, setup.cfg) is never read because
// "-c" names this file. pythonpath (pytest >= 7) puts the repository on
// sys.path explicitly: the interpreter runs with -P, so neither the working
// directory nor PYTHONPATH is on it. xfail_strict turns an unexpected pass
// of an xfail-marked test into a failure, which pytest's JUnit report
// would otherwise show as a plain pass.
func (t *Task) pytestIni() []byte {
	paths := make([]string, len(t.Spec.Repo.PythonPath))
	for i, p := range t.Spec.Repo.PythonPath {
		paths[i] = RepoDir
		if p != "." {
			paths[i] += "/" + p
		}
	}
	return []byte("[pytest]\n" +
		"# Written by strictgrade for the compat oracle; the repository's own\n" +
		"# pytest configuration is never read.\n" +
		"pythonpath = " + strings.Join(paths, " ") + "\n" +
		"xfail_strict = true\n" +
		"junit_family = xunit2\n" +
		"junit_logging = no\n" +
		"junit_duration_report = call\n" +
		"console_output_style = classic\n")
}

// env is the complete environment of every oracle process. Docker adds
// the image's own variables unless they are set here, so every variable
// the Python image declares (PATH, LANG, PYTHONDONTWRITEBYTECODE) is.
func (t *Task) env() []string {
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/tmp",
		"TZ=UTC",
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"SOURCE_DATE_EPOCH=" + SourceDateEpoch,
		"PYTHONHASHSEED=0",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONPYCACHEPREFIX=/tmp/pycache",
		"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1",
	}
	for _, k := range sortedKeys(t.Spec.Env) {
		env = append(env, k+"="+t.Spec.Env[k])
	}
	return env
}

// runnerCmd runs cmd under runner.py, which caps its output at testOutput
// bytes.
func runnerCmd(cmd []string) []string {
	return append([]string{"python3", "-I", "-c", runnerScript, strconv.Itoa(testOutput), strconv.Itoa(runnerLimitExit)}, cmd...)
}

// pytestCmd is the hardened pytest invocation. The interpreter is not run
// with -I: isolated mode implies -E, which would also drop PYTHONHASHSEED.
// -P (no unsafe sys.path entry), -s (no user site) and -B (no bytecode)
// give the rest of -I, and the environment is built from scratch, so no
// PYTHON* variable but the oracle's is ever set.
func pytestCmd(ids []string) []string {
	return append([]string{"python3", "-P", "-s", "-B", "-m", "pytest",
		"-c", IniPath, "--rootdir=" + RepoDir, "--confcutdir=" + RepoDir,
		"-p", "no:cacheprovider", "-o", "addopts=",
		"--junitxml=" + OutDir + "/report.xml", "-q", "--"}, ids...)
}

// mibPerProcess is the memory the oracle sets aside for each process it
// allows: a container gets at most one process per mibPerProcess MiB of its
// memory limit. A forked Python process costs about 1 MiB of kernel and
// copied memory, so a fork bomb always meets the pids limit with most of
// the memory to spare and cannot end in a race between the two.
const mibPerProcess = 4

// testOutput caps what a test run may print, standard output and error
// together. runner.py stops the run one byte past it: a flood of output is
// FAIL output_limit within milliseconds, long before the wall clock could
// decide.
const testOutput = 8 << 20

// limits are the engine limits of an oracle container that may print up
// to output bytes. Every container streams its output directory, so what
// it prints arrives on standard error.
func (g *grader) limits(output int64) sandbox.Limits {
	l := g.t.Spec.Limits
	return sandbox.Limits{
		CPU:         time.Duration(l.WallSeconds) * time.Second,
		MemoryBytes: l.MemoryMB << 20,
		PIDs:        min(l.PIDs, l.MemoryMB/mibPerProcess),
		TmpfsBytes:  l.TmpfsMB << 20,
		StderrBytes: output,
	}
}

// outDir is the output directory of an oracle container: a tmpfs of at
// most size bytes (charged to the container's memory) and inodes files, which
// the engine streams out through the firewall under outPolicy once the
// container has ended by itself. Code under test that fills it gets
// ENOSPC; the host's disk is never involved.
func outDir(size, inodes int64) *sandbox.StreamOut {
	return &sandbox.StreamOut{Dir: OutDir, Bytes: size, Inodes: inodes}
}

// workPolicy bounds the checkout the preparation container leaves in the
// work volume, on a backend that carries a writable mount's content out
// through the firewall to keep it (Kubernetes; a Docker volume stays where
// it is): the task's own bound on its files (taskPolicy) for the working
// tree and the clone's pack, and entries for a large repository. A
// checkout the firewall refuses is the grader's error, never the
// candidate's: the gate keeps links out of the diff, and a diff is far
// smaller than the bounds, so what is refused came with the repository
// (a symbolic link in its tree, say).
var workPolicy = firewall.Policy{MaxEntries: 200_000, MaxFileBytes: 1 << 30, MaxTotalBytes: 2 << 30, MaxInputBytes: 3 << 30, MaxDepth: 64}

// outPolicy bounds what a container leaves in its output directory.
var outPolicy = firewall.Policy{MaxEntries: 1000, MaxFileBytes: junit.MaxReportBytes, MaxTotalBytes: 64 << 20}

// prepared is prepare.py's report.
type prepared struct {
	Status  string `json:"status"`
	Stage   string `json:"stage"`
	Message string `json:"message"`
	Head    string `json:"head"`
	// Changed names the first paths git changed; ChangedCount counts
	// them all.
	Changed      []string         `json:"changed"`
	ChangedCount int              `json:"changed_count"`
	StepsMS      map[string]int64 `json:"steps_ms"`
}

// maxPrepareReport bounds prepare.json, whose message and path list
// prepare.py bounds itself.
const maxPrepareReport = 1 << 20

// stageDiff is the stage in which prepare.py first reads the candidate's
// diff (git apply --check). It announces every stage on standard error
// before it starts it.
const stageDiff = "apply_check"

// stages returns the stages prepare.py announced, in order.
func stages(stderr []byte) []string {
	var out []string
	for _, line := range strings.Split(string(stderr), "\n") {
		if name, ok := strings.CutPrefix(line, "prepare: stage "); ok {
			out = append(out, name)
		}
	}
	return out
}

// diffFault is a failure of the preparation container after it started
// on the candidate's diff: the grade is a FAIL decided before any test ran,
// not an ERROR.
type diffFault struct {
	code, decidedBy, reason string
}

func (f *diffFault) Error() string { return f.reason }

// prepare runs the preparation container. No candidate code runs in it,
// but from the stage that reads the diff on, its inputs are the
// candidate's bytes: a diff that does not apply, changes a path the gate
// did not keep, leaves no room for the hidden tests, or drives git into a
// limit is a *diffFault. A failure before that stage (the clone, the
// checkout of the base) or of the engine itself is the grader's.
func (g *grader) prepare(ctx context.Context, work string) error {
	res, err := g.eng.Run(ctx, sandbox.Spec{
		Run: g.req.Run, Phase: "oracle-prepare", Image: g.req.Image,
		Cmd: []string{"python3", "-I", "-B", InputsDir + "/prepare.py"}, Env: g.t.env(), WorkDir: WorkDir,
		Mounts: []sandbox.Mount{{Volume: g.inputs, Target: InputsDir, ReadOnly: true}, {Volume: work, Target: WorkDir, Policy: workPolicy}},
		Limits: g.limits(256 << 10), StreamOut: outDir(2*maxPrepareReport, 16), CollectPolicy: outPolicy,
	})
	if err != nil {
		return fmt.Errorf("compat: prepare: %w", err)
	}
	if err := g.checkImage(res); err != nil {
		return err
	}
	seen := stages(res.Stderr)
	last := "the start" // of prepare.py, before it announced a stage
	if len(seen) > 0 {
		last = "stage " + seen[len(seen)-1]
	}
	touched := g.mode == schema.ModeFinal && slices.Contains(seen, stageDiff)
	g.event("prepare", "prepare exited", "exit", string(res.Exit), "code", res.Code, "ms", res.Duration.Milliseconds(),
		"image", res.ImageID, "reached", last, "diff_read", touched, "stderr_tail", tail(res.Stderr, 1024))
	// fail attributes a failure: the candidate's once the diff was read,
	// the grader's before.
	fail := func(code, decidedBy, reason string) error {
		if touched {
			return &diffFault{code: code, decidedBy: decidedBy, reason: "preparing the checkout with the diff: " + reason}
		}
		return fmt.Errorf("compat: prepare: %s", reason)
	}
	switch {
	case res.Exit == sandbox.ExitTimeout:
		return fail(schema.ReasonTimeout, schema.DecidedByLimit,
			timeLimit(last, res, g.t.Spec.Limits.WallSeconds))
	case res.Exit == sandbox.ExitOOM:
		return fail(schema.ReasonMemoryLimit, schema.DecidedByLimit,
			fmt.Sprintf("%s exceeded the memory limit of %d MiB", last, g.t.Spec.Limits.MemoryMB))
	case res.Exit != sandbox.ExitExited:
		return fail(schema.ReasonOutputLimit, schema.DecidedByLimit, fmt.Sprintf("%s exceeded the output limit", last))
	case res.Code != 0:
		return fail(schema.ReasonRejectedArtifact, DecidedByPrepare,
			fmt.Sprintf("%s ended with code %d: %s", last, res.Code, tail(res.Stderr, 400)))
	}
	st, err := readPrepared(res.Collected[OutDir].Archive)
	if err != nil {
		return fail(schema.ReasonRejectedArtifact, DecidedByPrepare, err.Error())
	}
	g.event("prepare", "checkout prepared", "status", st.Status, "stage", st.Stage, "message", st.Message,
		"head", st.Head, "changed", st.Changed, "changed_count", st.ChangedCount, "steps_ms", st.StepsMS)
	switch st.Status {
	case "ok":
		if st.Head != g.t.Spec.Repo.Base {
			return fmt.Errorf("compat: prepare checked out %q, want %s", st.Head, g.t.Spec.Repo.Base)
		}
		return nil
	case "apply_failed":
		return fail(schema.ReasonDiffDoesNotApply, DecidedByGitApply, "the filtered diff does not apply to the base: "+st.Message)
	case "gate_mismatch":
		return fail(schema.ReasonRejectedArtifact, DecidedByDiffGate, st.Message)
	}
	return fail(schema.ReasonRejectedArtifact, DecidedByPrepare, fmt.Sprintf("stage %s failed: %s", st.Stage, st.Message))
}

// readPrepared reads and decodes prepare.json out of the collected /out.
func readPrepared(archive []byte) (*prepared, error) {
	data, ok, err := fileFrom(archive, "out/prepare.json", maxPrepareReport)
	switch {
	case err != nil:
		return nil, fmt.Errorf("no readable report: %w", err)
	case !ok:
		return nil, errors.New("no report")
	}
	if err := schema.CheckJSON(data, maxPrepareReport); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var st prepared
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return &st, nil
}

func (g *grader) checkImage(res *sandbox.Result) error {
	if res.ImageID == "" {
		return errors.New("compat: the engine did not report the oracle's image")
	}
	if strings.HasPrefix(g.req.Image, "sha256:") && res.ImageID != g.req.Image {
		return fmt.Errorf("compat: container ran image %s, expected %s", res.ImageID, g.req.Image)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.imageID != "" && res.ImageID != g.imageID {
		return fmt.Errorf("compat: containers ran different images (%s, %s)", g.imageID, res.ImageID)
	}
	g.imageID = res.ImageID
	return nil
}

// run is one pytest run of one suite in its own container.
type run struct {
	suite   schema.Suite
	label   string
	ids     []string
	chars   int // the most characters a case reason may have
	res     *sandbox.Result
	refused error // the container's output was refused by the firewall
	repErr  error // the report exists but cannot be read
	result  junit.Result
}

// suites runs the existing suite (when it has tests) and then the hidden
// suite hiddenRuns times, one fresh container each.
func (g *grader) suites(ctx context.Context, work string, hiddenRuns int) ([]*run, error) {
	var runs []*run
	if len(g.t.ExistingIDs) > 0 {
		r, err := g.runSuite(ctx, work, schema.SuiteExisting, "existing", g.t.ExistingIDs)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	for i := 1; i <= hiddenRuns; i++ {
		label := "hidden"
		if i > 1 {
			label = fmt.Sprintf("hidden-%d", i)
		}
		r, err := g.runSuite(ctx, work, schema.SuiteHidden, label, g.t.HiddenIDs)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// The output directory of a test run: room for the largest report the
// host reads and some, and as many files as outPolicy lets through.
const (
	testOutBytes  = 2 * junit.MaxReportBytes
	testOutInodes = 1024
)

func (g *grader) runSuite(ctx context.Context, work string, suite schema.Suite, label string, ids []string) (*run, error) {
	r := &run{suite: suite, label: label, ids: ids, chars: g.t.reasonChars()}
	res, err := g.eng.Run(ctx, sandbox.Spec{
		Run: g.req.Run, Phase: "oracle-" + label, Image: g.req.Image,
		Cmd: runnerCmd(pytestCmd(ids)), Env: g.t.env(), WorkDir: RepoDir,
		Mounts: []sandbox.Mount{{Volume: work, Target: WorkDir, ReadOnly: true}},
		// runner.py's line about the cap must fit after the output.
		Limits: g.limits(testOutput + 4<<10), StreamOut: outDir(testOutBytes, testOutInodes), CollectPolicy: outPolicy,
	})
	if errors.Is(err, sandbox.ErrCollect) {
		// Candidate code ran in the container: what it left is its doing.
		r.refused = err
		g.event(label, "output refused", "error", err.Error())
		r.result = junit.Classify(nil, ids, "no report: the container's output was refused")
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("compat: %s run: %w", label, err)
	}
	if err := g.checkImage(res); err != nil {
		return nil, err
	}
	r.res = res
	g.event(label, "pytest exited", "exit", string(r.exit()), "code", res.Code, "ms", res.Duration.Milliseconds(),
		"output_head", head(res.Stderr, 1024), "output_tail", tail(res.Stderr, 2048), "output_bytes", len(res.Stderr),
		"output_truncated", res.StderrTruncated)
	data, ok, err := fileFrom(res.Collected[OutDir].Archive, "out/report.xml", junit.MaxReportBytes)
	var rep *junit.Report
	switch {
	case err != nil:
		r.repErr = err
	case ok:
		rep, r.repErr = junit.Parse(data)
	}
	noReport := fmt.Sprintf("no report: pytest %s with code %d", r.exit(), res.Code)
	if r.repErr != nil {
		noReport = "report unreadable: " + r.repErr.Error()
	}
	r.result = junit.Classify(rep, ids, noReport)
	counts := map[string]int{}
	for _, id := range ids {
		counts[r.result.Outcomes[id].Kind.String()]++
	}
	g.event(label, "report read", "report", ok, "error", errString(r.repErr), "counts", counts,
		"extra", r.result.Extra, "duplicates", r.result.Duplicates, "collection_problems", r.result.CollectProblems)
	return r, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// text makes s safe for a verdict's reason: escaped as schema.Excerpt
// does (control characters, invalid UTF-8, bidirectional overrides) but
// without the surrounding quotes, cut to at most max characters.
func text(s string, max int) string {
	q := schema.Excerpt([]byte(s), max+2)[1:]
	if strings.HasSuffix(q, `"…`) {
		return strings.TrimSuffix(q, `"…`) + "…"
	}
	return strings.TrimSuffix(q, `"`)
}

// head quotes the first n bytes of b for the log.
func head(b []byte, n int) string {
	return schema.Excerpt(b[:min(len(b), n)], n+64)
}

// tail quotes the last n bytes of b for the log.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return schema.Excerpt(b, n+64)
}

// fileFrom reads one regular file out of a canonical archive.
func fileFrom(archive []byte, name string, limit int64) ([]byte, bool, error) {
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if h.Name != name || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > limit {
			return nil, true, fmt.Errorf("%s is %d bytes, more than %d", name, h.Size, limit)
		}
		data, err := io.ReadAll(io.LimitReader(tr, limit))
		return data, true, err
	}
}
