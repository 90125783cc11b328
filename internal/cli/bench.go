package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/strictgrade/strictgrade/candidate"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/tarball"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

func init() {
	register(command{name: "bench", summary: "time strict grades against a one-container baseline", do: runBench})
}

// baselineScript is the one-container baseline's program: it runs every
// case against the candidate in one process and compares in-process.
//
//go:embed bench_baseline.py
var baselineScript string

// Names of the two sides, as the table and the JSON report print them.
const (
	sideStrict = "strict"
	sideOne    = "one-container"
)

// benchArgs is a bench's command line.
type benchArgs struct {
	task, submission string
	n, parallel      int
	json             bool
	backendArgs
}

const benchAbout = `
Grades the submission N times with the strict tier (controller.Grade, an
ephemeral signing key) and, in the same invocation on the same engine, N
times with a one-container baseline: one hardened container of the same
runtime image, with the task's memory and pids limits, in which one Python
process runs every case against the artifacts and compares with the
expected values itself, as most harnesses do. Batches of --parallel grades
alternate between the sides, so that machine load affects both alike.

The baseline is a yardstick, not a grader: its pass/fail, and each case's,
must agree with the strict verdict of every run, or bench fails (exit 3). A strict verdict
of ERROR also fails it (exit 3). Images are never built here: run
strictgrade images build first.

Prints, per side, the runs, their outcomes, the p50, p90 and max latency of
one grade (nearest rank) and grades per minute (runs over the wall time of
that side's batches), then the ratios strict/one-container.`

// parseBench reads and checks a bench's command line.
func parseBench(args []string, stderr io.Writer) (*benchArgs, error) {
	a := &benchArgs{}
	fs := flagSet(stderr, "bench", "--task DIR --submission DIR|TAR [-n N] [--parallel P] [--json]", benchAbout)
	fs.StringVar(&a.task, "task", "", "strict-tier task `DIR` (required)")
	fs.StringVar(&a.submission, "submission", "", "submission: a directory or a tar file (required)")
	fs.IntVar(&a.n, "n", 10, "grades per side")
	fs.IntVar(&a.parallel, "parallel", 1, "grades in flight on each side (controller.Config.MaxInFlight)")
	fs.BoolVar(&a.json, "json", false, "print the report as JSON instead of a table")
	a.backendArgs.register(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	switch {
	case a.task == "" || a.submission == "" || fs.NArg() != 0:
		return nil, usagef("--task DIR and --submission PATH are required, and nothing else")
	case a.n < 1:
		return nil, usagef("-n must be at least 1")
	case a.parallel < 1:
		return nil, usagef("--parallel must be at least 1")
	case a.parallel > a.n:
		return nil, usagef("--parallel %d is more than -n %d", a.parallel, a.n)
	}
	return a, nil
}

func runBench(ctx context.Context, args []string, stdio IO) error {
	a, err := parseBench(args, stdio.Stderr)
	if err != nil {
		return err
	}
	loaded, err := controller.LoadTask(ctx, a.task)
	if err != nil {
		return badInput(err)
	}
	t, ok := loaded.(*task.Task)
	if !ok {
		return usagef("bench takes a strict-tier task; %s is a %s-tier task", a.task, loaded.Tier())
	}
	sub, err := readBenchSubmission(a.submission)
	if err != nil {
		return badInput(err)
	}
	signer, _, err := loadSigner("")
	if err != nil {
		return err
	}
	// controller.New, not newController: a bench must not build images
	// (and time the build); a missing one is an error naming the command.
	ctrl, closeCtrl, err := a.open(ctx, stdio, controller.Config{Signer: signer, MaxInFlight: a.parallel,
		RuntimeImage: os.Getenv("STRICTGRADE_RUNTIME_IMAGE"), JudgeImage: os.Getenv("STRICTGRADE_JUDGE_IMAGE")}, false)
	if err != nil {
		return err
	}
	defer closeCtrl()
	base, err := newBaseline(ctrl.Backend(), ctrl.RuntimeImage(), t, sub)
	if err != nil {
		return err
	}
	b := &bench{ctrl: ctrl, task: t, sub: sub, base: base, n: a.n, parallel: a.parallel, progress: stdio.Stderr}
	rep, runErr := b.run(ctx)
	if rep != nil {
		rep.Task, rep.Kind, rep.Cases = t.Spec.ID, string(t.Spec.Kind), len(t.Cases.Cases)
		rep.Submission, rep.Runtime = a.submission, ctrl.Backend().Runtime()
		if err := rep.write(stdio.Stdout, a.json); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return runErr
}

// benchSubmission is the submission as bench reads it once: a directory
// walked at every grade, or the bytes of a tar file.
type benchSubmission struct {
	dir string
	tar []byte
}

// grade returns the submission in the controller's form.
func (s benchSubmission) grade() controller.Submission {
	if s.dir != "" {
		return controller.Submission{Dir: s.dir}
	}
	return controller.Submission{Archive: bytes.NewReader(s.tar)}
}

// maxBenchTar bounds a tar submission read into memory.
const maxBenchTar = 256 << 20

func readBenchSubmission(path string) (benchSubmission, error) {
	st, err := os.Stat(path)
	if err != nil {
		return benchSubmission{}, err
	}
	if st.IsDir() {
		return benchSubmission{dir: path}, nil
	}
	if !st.Mode().IsRegular() || st.Size() > maxBenchTar {
		return benchSubmission{}, fmt.Errorf("%s: a submission is a directory or a tar file of at most %d bytes", path, maxBenchTar)
	}
	data, err := os.ReadFile(path)
	return benchSubmission{tar: data}, err
}

// bench is one bench invocation.
type bench struct {
	ctrl        *controller.Controller
	task        *task.Task
	sub         benchSubmission
	base        *baseline
	n, parallel int
	progress    io.Writer
}

// sample is one grade of either side.
type sample struct {
	latency time.Duration
	// queued is how long the grade waited for a slot, within latency.
	queued  time.Duration
	outcome schema.Outcome // PASS or FAIL
	run     string         // the run id, for the leftovers check
	reason  string         // the baseline's first failing case
	// cases says, in the task's order, which cases passed; nil when the
	// grade ended before its cases were decided one by one.
	cases []bool
}

// run grades n times on each side, in batches of parallel grades that
// alternate strict, baseline, strict, … and returns the report. An error
// comes with a nil report when a side could not grade (a strict ERROR, a
// baseline that failed to run), and with the report when the sides
// disagreed or something was left behind.
func (b *bench) run(ctx context.Context) (*benchReport, error) {
	var strict, one []sample
	var strictWall, oneWall time.Duration
	var disagree []string
	for done := 0; done < b.n; {
		k := min(b.parallel, b.n-done)
		if err := b.settle(ctx); err != nil {
			return nil, err
		}
		s, wall, err := batch(ctx, k, b.strictGrade)
		if err != nil {
			return nil, fmt.Errorf("strict grade %d of %d: %w", done+1, b.n, err)
		}
		strict, strictWall = append(strict, s...), strictWall+wall
		if err := b.settle(ctx); err != nil {
			return nil, err
		}
		o, wall, err := batch(ctx, k, b.base.grade)
		if err != nil {
			return nil, fmt.Errorf("one-container grade %d of %d: %w", done+1, b.n, err)
		}
		one, oneWall = append(one, o...), oneWall+wall
		for i := range k {
			if d := b.disagreement(s[i], o[i]); d != "" {
				disagree = append(disagree, fmt.Sprintf("run %d: %s", done+i+1, d))
			}
		}
		done += k
		fmt.Fprintf(b.progress, "bench: %d/%d: strict %s, one-container %s\n", done, b.n, batchSummary(s), batchSummary(o))
	}
	// The streams: each side's grades back to back, nothing settled
	// between them, the other side idle.
	var streams [2][]sample
	var streamWall [2]time.Duration
	for i, grade := range []func(context.Context) (sample, error){b.strictGrade, b.base.grade} {
		if err := b.settle(ctx); err != nil {
			return nil, err
		}
		fmt.Fprintf(b.progress, "bench: a stream of %d %s grades, %d in flight\n", b.n, []string{sideStrict, sideOne}[i], b.parallel)
		var err error
		if streams[i], streamWall[i], err = stream(ctx, b.n, b.parallel, grade); err != nil {
			return nil, fmt.Errorf("%s stream: %w", []string{sideStrict, sideOne}[i], err)
		}
	}
	sr, or := summarize(sideStrict, strict, strictWall), summarize(sideOne, one, oneWall)
	sr.StreamGradesPerMin = throughput(len(streams[0]), streamWall[0])
	or.StreamGradesPerMin = throughput(len(streams[1]), streamWall[1])
	rep := newReport(b.n, b.parallel, sr, or)
	rep.Disagreements = append(rep.Disagreements, disagree...)
	var errs []error
	if len(disagree) > 0 {
		errs = append(errs, fmt.Errorf("the one-container baseline disagreed with the strict verdict in %d of %d runs: %s",
			len(disagree), b.n, strings.Join(disagree, "; ")))
	}
	if err := b.leftovers(ctx, slices.Concat(strict, one, streams[0], streams[1])); err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// disagreement says how a strict grade and a baseline grade of the same
// submission disagree: in outcome, or in a case both decided; "" when they
// agree.
func (b *bench) disagreement(strict, one sample) string {
	why := ""
	if one.reason != "" {
		why = " (" + one.reason + ")"
	}
	if strict.outcome != one.outcome {
		return fmt.Sprintf("strict %s, one-container %s%s", strict.outcome, one.outcome, why)
	}
	if len(strict.cases) != len(one.cases) {
		return ""
	}
	word := map[bool]string{true: "PASS", false: "FAIL"}
	for j := range strict.cases {
		if strict.cases[j] != one.cases[j] {
			return fmt.Sprintf("case %s: strict %s, one-container %s%s",
				b.task.Cases.Cases[j].ID, word[strict.cases[j]], word[one.cases[j]], why)
		}
	}
	return ""
}

// settle waits, when the backend can say, until it does nothing in the
// background (a pool refilling, removals under way), so that no side's
// batch is charged with the other's leftover work.
func (b *bench) settle(ctx context.Context) error {
	s, ok := b.ctrl.Backend().(interface{ Settle(context.Context) error })
	if !ok {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := s.Settle(sctx); err != nil {
		return fmt.Errorf("waiting for the backend to settle: %w", err)
	}
	return nil
}

// stream runs n grades with k in flight, each worker starting its next
// grade as soon as its last ends, and returns them with the wall time.
func stream(ctx context.Context, n, k int, grade func(context.Context) (sample, error)) ([]sample, time.Duration, error) {
	out := make([]sample, n)
	errs := make([]error, n)
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				out[i], errs[i] = grade(ctx)
			}
		})
	}
	wg.Wait()
	return out, time.Since(start), errors.Join(errs...)
}

// batch runs k grades at once and returns them in order, with the wall
// time of the batch.
func batch(ctx context.Context, k int, grade func(context.Context) (sample, error)) ([]sample, time.Duration, error) {
	out := make([]sample, k)
	errs := make([]error, k)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() { out[i], errs[i] = grade(ctx) })
	}
	wg.Wait()
	return out, time.Since(start), errors.Join(errs...)
}

func batchSummary(s []sample) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprintf("%s %d ms", x.outcome, x.latency.Milliseconds())
		if x.reason != "" {
			parts[i] += " (" + x.reason + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// strictGrade is one strict grade through the controller. A verdict other
// than PASS or FAIL is an error.
func (b *bench) strictGrade(ctx context.Context) (sample, error) {
	start := time.Now()
	res, err := b.ctrl.Grade(ctx, b.task, b.sub.grade())
	lat := time.Since(start)
	if res == nil {
		return sample{}, err
	}
	v := res.Verdict
	if err != nil || (v.Outcome != schema.OutcomePass && v.Outcome != schema.OutcomeFail) {
		return sample{}, fmt.Errorf("the verdict is %s (run %s): %s: %w", v.Outcome, v.RunID, v.Reason, err)
	}
	out := sample{latency: lat, queued: res.Queued, outcome: v.Outcome, run: v.RunID}
	if len(v.Cases) == len(b.task.Cases.Cases) {
		out.cases = make([]bool, len(v.Cases))
		for i, c := range v.Cases {
			out.cases[i] = c.Outcome == schema.OutcomePass
		}
	}
	return out, nil
}

// leftovers checks that no run of either side left a container or a
// volume behind.
func (b *bench) leftovers(ctx context.Context, samples []sample) error {
	var left []string
	for _, s := range samples {
		l, err := b.ctrl.Backend().Leftovers(ctx, s.run)
		if err != nil {
			return fmt.Errorf("leftovers of run %s: %w", s.run, err)
		}
		left = append(left, l...)
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind: %s (strictgrade gc removes them)", strings.Join(left, ", "))
	}
	return nil
}

// baseline is the one-container baseline for one task and submission.
type baseline struct {
	eng      sandbox.Backend
	image    string
	task     *task.Task
	sub      benchSubmission
	input    []byte // the baseline program's standard input: the cases, expected values included
	policy   firewall.Policy
	limits   sandbox.Limits
	writable bool // data tasks: /input and /output are writable volumes
}

// baselineEnv is the complete environment of the baseline process: the
// strict candidate's (package candidate's env). The program's mount points
// are the candidate's too: candidate.ArtifactsDir, InputDir, OutputDir.
var baselineEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"LANG=C.UTF-8",
	"LC_ALL=C.UTF-8",
	"TZ=UTC",
	"HOME=/tmp",
	"PYTHONHASHSEED=0",
	"PYTHONDONTWRITEBYTECODE=1",
}

// baselineCase is one case as the baseline program reads it.
type baselineCase struct {
	ID             string            `json:"id"`
	Compare        judge.Comparator  `json:"compare"`
	Args           string            `json:"args,omitempty"`     // function: the JSON text of the arguments
	Expected       string            `json:"expected,omitempty"` // function: the JSON text of the value
	Argv           []string          `json:"argv"`
	Stdin          string            `json:"stdin"`
	ExpectedStdout *string           `json:"expected_stdout"`
	ExpectedExit   int               `json:"expected_exit"`
	Inputs         map[string][]byte `json:"inputs"`
	ExpectedFiles  map[string][]byte `json:"expected_files"`
}

// newBaseline prepares what every baseline grade of t sends in: the
// cases with their expected values, the limits, the candidate's calling
// convention.
func newBaseline(eng sandbox.Backend, image string, t *task.Task, sub benchSubmission) (*baseline, error) {
	s := t.Spec
	in := map[string]any{
		"kind": s.Kind, "case_seconds": s.Limits.CaseSeconds, "output_bytes": s.Limits.OutputBytes,
	}
	env := map[string]string{}
	for _, kv := range baselineEnv {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	in["env"] = env
	switch s.Kind {
	case schema.KindFunction:
		in["module"], in["name"] = s.Function.Module, s.Function.Name
	case schema.KindCommand:
		in["path"] = s.Command.Path
	case schema.KindData:
		in["argv"] = s.Data.Argv
	default:
		return nil, fmt.Errorf("bench: unsupported task kind %q", s.Kind)
	}
	cases := make([]baselineCase, len(t.Cases.Cases))
	for i, c := range t.Cases.Cases {
		bc := baselineCase{ID: c.ID, Compare: t.Cases.Comparator(c), Args: string(c.Args), Expected: string(c.Expected),
			Argv: c.Argv, Stdin: c.Stdin, ExpectedStdout: c.ExpectedStdout, ExpectedExit: c.WantExit(),
			Inputs: map[string][]byte{}, ExpectedFiles: map[string][]byte{}}
		if bc.Argv == nil {
			bc.Argv = []string{}
		}
		for _, m := range []struct {
			from map[string]string
			to   map[string][]byte
		}{{c.InputFiles, bc.Inputs}, {c.ExpectedFiles, bc.ExpectedFiles}} {
			for name, rel := range m.from {
				data, err := t.HiddenFile(rel)
				if err != nil {
					return nil, fmt.Errorf("bench: case %s: %w", c.ID, err)
				}
				m.to[name] = data
			}
		}
		cases[i] = bc
	}
	in["cases"] = cases
	input, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	l := s.Limits
	// One container for every case: the per-case limit is the program's,
	// the wall clock covers them all plus interpreter start, as the strict
	// candidate's shared process has it (a CPU-time budget, with its
	// backstop); memory, pids and the rest are the
	// strict candidate's (candidate.caseLimits).
	limits := sandbox.Limits{
		CPU:               candidate.SharedCPU(l.CaseTime(), len(cases)),
		MemoryBytes:       l.MemoryMB << 20,
		PIDs:              l.PIDs,
		StdoutBytes:       1 << 20, // the report; the candidate's output is the program's to bound
		StderrBytes:       64 << 10,
		FileBytes:         max(l.OutputBytes, 1<<20),
		TmpfsBytes:        32 << 20,
		KillOnOutputLimit: true,
	}
	return &baseline{eng: eng, image: image, task: t, sub: sub, input: input, limits: limits,
		policy:   firewall.Policy{MaxTotalBytes: l.ArtifactBytes, MaxFileBytes: l.ArtifactBytes},
		writable: s.Kind == schema.KindData}, nil
}

// artifacts returns the archive of the submission's declared artifacts,
// which the volume's copy-in passes through the firewall.
func (b *baseline) artifacts(ctx context.Context) ([]byte, error) {
	keep := tarball.Under(b.task.Spec.Artifacts)
	var out bytes.Buffer
	if b.sub.dir != "" {
		err := tarball.WriteDir(&out, b.sub.dir, keep)
		return out.Bytes(), err
	}
	var whole bytes.Buffer
	if _, err := firewall.Filter(ctx, bytes.NewReader(b.sub.tar), &whole, b.policy); err != nil {
		return nil, err
	}
	err := tarball.Rewrite(&out, &whole, func(h *tar.Header) bool {
		return keep(strings.TrimSuffix(h.Name, "/"), h.Typeflag == tar.TypeDir)
	})
	return out.Bytes(), err
}

// grade is one baseline grade: a fresh run id, the artifacts volume, one
// container, and the removal of everything it made, all timed.
func (b *baseline) grade(ctx context.Context) (sample, error) {
	start := time.Now()
	run, err := benchRunID()
	if err != nil {
		return sample{}, err
	}
	cl := &sandbox.Cleanup{}
	s, err := b.gradeIn(ctx, run, cl)
	cerr := cl.Run(ctx)
	s.latency, s.run = time.Since(start), run
	if err == nil && cerr != nil {
		err = fmt.Errorf("cleanup: %w", cerr)
	}
	return s, err
}

func (b *baseline) gradeIn(ctx context.Context, run string, cl *sandbox.Cleanup) (sample, error) {
	archive, err := b.artifacts(ctx)
	if rejected(err) {
		return sample{outcome: schema.OutcomeFail, reason: "submission rejected: " + err.Error()}, nil
	}
	if err != nil {
		return sample{}, err
	}
	vol, _, err := b.eng.NewVolumeWith(ctx, run, "artifacts", bytes.NewReader(archive), sandbox.CopyInOptions{Policy: b.policy})
	cl.Volume(b.eng, vol)
	if rejected(err) {
		return sample{outcome: schema.OutcomeFail, reason: "submission rejected: " + err.Error()}, nil
	}
	if err != nil {
		return sample{}, err
	}
	spec := sandbox.Spec{
		Run: run, Phase: "baseline", Image: b.image, Env: baselineEnv, WorkDir: candidate.ArtifactsDir,
		Cmd:    []string{"python3", "-I", "-c", baselineScript},
		Stdin:  bytes.NewReader(b.input),
		Mounts: []sandbox.Mount{{Volume: vol, Target: candidate.ArtifactsDir, ReadOnly: true}},
		Limits: b.limits,
	}
	if b.writable {
		// One container for every case: the case's files go in and come
		// out of writable volumes at the places the strict candidate has
		// them, emptied by the program between cases.
		for _, dir := range []string{candidate.InputDir, candidate.OutputDir} {
			v, err := b.eng.NewVolume(ctx, run, strings.TrimPrefix(dir, "/"))
			cl.Volume(b.eng, v)
			if err != nil {
				return sample{}, err
			}
			spec.Mounts = append(spec.Mounts, sandbox.Mount{Volume: v, Target: dir})
		}
	}
	res, err := b.eng.Run(ctx, spec)
	if err != nil {
		return sample{}, err
	}
	if res.ImageID != "" && res.ImageID != b.image {
		return sample{}, fmt.Errorf("the baseline ran image %s, expected %s", res.ImageID, b.image)
	}
	return readBaselineReport(res, b.task.Cases.Cases)
}

// rejected reports whether err is the firewall's refusal of the
// submission, which the strict tier fails too.
func rejected(err error) bool {
	var rej *firewall.RejectError
	return errors.As(err, &rej) || errors.Is(err, tarball.ErrWalk)
}

// readBaselineReport reads the baseline program's report. A report that
// ends early (the candidate killed the process, or a limit did) is a FAIL,
// as it is for a harness that waits for a PASS line; an "error" line is
// the program's own failure.
func readBaselineReport(res *sandbox.Result, tc []judge.Case) (sample, error) {
	if res.Exit != sandbox.ExitExited {
		return sample{outcome: schema.OutcomeFail, reason: "the container was stopped: " + string(res.Exit)}, nil
	}
	var reason string
	var cases []bool
	for line := range strings.Lines(string(res.Stdout)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		switch {
		case f[0] == "error":
			return sample{}, fmt.Errorf("the baseline program failed: %s", strings.Join(f[1:], " "))
		case f[0] == "case" && len(f) == 4:
			if i, err := strconv.Atoi(f[1]); err != nil || i != len(cases) || i >= len(tc) || (f[2] != "PASS" && f[2] != "FAIL") {
				return sample{}, fmt.Errorf("the baseline program's report is malformed: %q", line)
			}
			cases = append(cases, f[2] == "PASS")
			if f[2] == "FAIL" && reason == "" {
				reason = "case " + tc[len(cases)-1].ID + ": " + f[3]
			}
		case f[0] == "result" && len(f) == 4:
			passed, err1 := strconv.Atoi(f[2])
			total, err2 := strconv.Atoi(f[3])
			if err1 != nil || err2 != nil || total != len(cases) || passed != count(cases, true) ||
				(f[1] == "PASS") != (passed == total) || (f[1] != "PASS" && f[1] != "FAIL") {
				return sample{}, fmt.Errorf("the baseline program's report is malformed: %q", line)
			}
			if res.Code != 0 {
				return sample{outcome: schema.OutcomeFail, reason: fmt.Sprintf("exited with status %d after its report", res.Code)}, nil
			}
			return sample{outcome: schema.Outcome(f[1]), reason: reason, cases: cases}, nil
		}
	}
	return sample{outcome: schema.OutcomeFail, reason: fmt.Sprintf("the process ended before its report (exit status %d)", res.Code)}, nil
}

func count(s []bool, v bool) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// benchRunID returns a fresh run id for a baseline grade.
func benchRunID() (string, error) {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "bench-" + hex.EncodeToString(b[:]), nil
}

// sideReport is what the report says of one side.
type sideReport struct {
	Side  string `json:"side"`
	Runs  int    `json:"runs"`
	Pass  int    `json:"pass"`
	Fail  int    `json:"fail"`
	P50MS int64  `json:"p50_ms"`
	// QueueP50MS and QueueMaxMS are the time grades waited for a slot
	// (controller.Result.Queued), part of their latency; 0 for the
	// one-container side, which has no admission.
	QueueP50MS   int64   `json:"queue_p50_ms"`
	QueueMaxMS   int64   `json:"queue_max_ms"`
	P90MS        int64   `json:"p90_ms"`
	MaxMS        int64   `json:"max_ms"`
	WallMS       int64   `json:"wall_ms"`
	GradesPerMin float64 `json:"grades_per_min"`
	// StreamGradesPerMin is the throughput of a stream of Runs grades
	// kept Parallel in flight back to back, with nothing settled between
	// them: what a harness grading continuously gets, background work
	// (a pool refilling, removals) included.
	StreamGradesPerMin float64 `json:"stream_grades_per_min"`
}

// benchReport is a bench's result, printed as a table or as JSON.
type benchReport struct {
	Task         string     `json:"task"`
	Kind         string     `json:"kind"`
	Cases        int        `json:"cases"`
	Submission   string     `json:"submission"`
	Runtime      string     `json:"runtime"`
	Runs         int        `json:"runs"`
	Parallel     int        `json:"parallel"`
	Strict       sideReport `json:"strict"`
	OneContainer sideReport `json:"one_container"`
	// Ratio is strict over one-container: of the p50 latencies (above 1:
	// strict is slower) and of the throughputs (below 1: strict grades
	// fewer per minute).
	Ratio struct {
		P50              float64 `json:"p50"`
		Throughput       float64 `json:"throughput"`
		StreamThroughput float64 `json:"stream_throughput"`
	} `json:"strict_over_one_container"`
	Disagreements []string `json:"disagreements"`
}

func newReport(runs, parallel int, strict, one sideReport) *benchReport {
	r := &benchReport{Runs: runs, Parallel: parallel, Strict: strict, OneContainer: one, Disagreements: []string{}}
	r.Ratio.P50 = ratio(float64(strict.P50MS), float64(one.P50MS))
	r.Ratio.Throughput = ratio(strict.GradesPerMin, one.GradesPerMin)
	r.Ratio.StreamThroughput = ratio(strict.StreamGradesPerMin, one.StreamGradesPerMin)
	return r
}

// ratio is a/b rounded to two decimals, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*100) / 100
}

// summarize computes one side's figures from its samples and the wall
// time of its batches.
func summarize(side string, samples []sample, wall time.Duration) sideReport {
	lat := make([]time.Duration, len(samples))
	queue := make([]time.Duration, len(samples))
	r := sideReport{Side: side, Runs: len(samples), WallMS: wall.Milliseconds(), GradesPerMin: throughput(len(samples), wall)}
	for i, s := range samples {
		lat[i], queue[i] = s.latency, s.queued
		if s.outcome == schema.OutcomePass {
			r.Pass++
		} else {
			r.Fail++
		}
	}
	r.P50MS = percentile(lat, 50).Milliseconds()
	r.P90MS = percentile(lat, 90).Milliseconds()
	r.MaxMS = percentile(lat, 100).Milliseconds()
	r.QueueP50MS = percentile(queue, 50).Milliseconds()
	r.QueueMaxMS = percentile(queue, 100).Milliseconds()
	return r
}

// percentile returns the p-th percentile of d by nearest rank: the
// smallest value with at least p percent of the values at or below it.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(d))
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// throughput is grades per minute: n grades over wall time, rounded to
// one decimal.
func throughput(n int, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return math.Round(float64(n)/wall.Minutes()*10) / 10
}

// write prints the report.
func (r *benchReport) write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(w, "task %s (%s, %d cases), %d runs per side, %d in flight, %s\n", r.Task, r.Kind, r.Cases, r.Runs, r.Parallel, r.Runtime)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SIDE\tRUNS\tPASS\tFAIL\tP50 MS\tP90 MS\tMAX MS\tQUEUED P50/MAX MS\tGRADES/MIN\tSTREAM GRADES/MIN")
	for _, s := range []sideReport{r.Strict, r.OneContainer} {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d\t%.1f\t%.1f\n", s.Side, s.Runs, s.Pass, s.Fail, s.P50MS, s.P90MS, s.MaxMS, s.QueueP50MS, s.QueueMaxMS, s.GradesPerMin, s.StreamGradesPerMin)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "strict/one-container: p50 %.2fx, throughput %.2fx, stream throughput %.2fx\n", r.Ratio.P50, r.Ratio.Throughput, r.Ratio.StreamThroughput)
	for _, d := range r.Disagreements {
		fmt.Fprintf(w, "DISAGREEMENT %s\n", d)
	}
	return err
}
