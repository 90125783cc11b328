package judge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/strictgrade/strictgrade/schema"
)

// The checker comparator.
//
// A checker is a WebAssembly module (WASI preview 1, "wasip1", such as
// GOOS=wasip1 GOARCH=wasm go build makes) among the task's hidden files,
// which decides a case when no fixed comparison can: a problem with many
// right answers. The judge runs it with the pure-Go runtime wazero, so the
// judge binary still executes nothing but its own code: the module is
// compiled once per run and instantiated afresh for every case it decides,
// with no file system, no network, no environment, one argument
// ("checker"), a deterministic clock and random source (wazero's
// defaults: a fake clock advancing 1 ms per reading, sleeping returns at
// once, a fixed random stream), a memory limit, a fuel budget (see
// instrument: a count of the instructions it runs, the same on every
// machine), a wall-clock backstop, and a cap on what it writes. Its
// standard input is one JSON document (CheckerInput) and its standard
// output must be one JSON document (CheckerAnswer).
//
// The candidate's output is only data to the checker: base64 in its
// input. Whatever the candidate wrote, the checker must answer accept or
// reject. A run that uses up its fuel fails the case (reason code
// ReasonCheckerFuel): how much a checker computes depends on the output
// the candidate wrote, and the count is deterministic, so the same output
// fails on every run, loaded or not. task check proves a task's checker
// on outputs as large as the task allows, so that an honest answer never
// comes near it. A checker that does anything else (traps, exits
// non-zero, runs past its wall-clock backstop, its memory or its output
// cap, answers something that is not an answer, or is not a module at
// all, or not one instrument can meter) is a defect of the task: Judge
// returns an error wrapping ErrChecker, the judge program exits with
// ExitCheckerFailed, and the controller makes the grade an ERROR with
// reason code checker_failed. It is never the candidate's FAIL, and
// never a PASS.
//
// A reject's message is task text: the checker may quote the case's
// input or expected value in it. A message over 4096 bytes is cut to
// 4096 (at a character boundary), never refused. Under the digest
// disclosure policy the verdict says only that the checker rejected the
// output (and, as for every comparator, the length and sha256 prefix of
// the candidate's own output): nothing of the message, not even its
// length. Under the detailed policy it quotes the message, escaped and
// cut to 240 bytes: a task that grades with detailed verdicts must keep
// hidden data out of its checker's messages.

// Limits of a checker, as a Comparator sets them: 0 means the default.
const (
	// DefaultCheckerMemoryPages is the default memory limit in 64 KiB
	// pages (64 MiB); MaxCheckerMemoryPages the largest accepted (256 MiB).
	DefaultCheckerMemoryPages = 1024
	MaxCheckerMemoryPages     = 4096
	// DefaultCheckerTimeoutMS is the default wall-clock backstop of one
	// run in milliseconds, instantiation included; MaxCheckerTimeoutMS
	// the largest accepted. Fuel decides a run (DefaultCheckerFuel); the
	// backstop only catches a grader that cannot go on, so it leaves
	// ample room for the fuel. On two cores at load 12 to 30 (a CI run,
	// and four busy loops beside it) the measured rate was 0.2 to 1.8
	// units a nanosecond (the slowest: f7459a3's toposort checker decoding
	// a 1 MiB list into []any, which allocates much; the fastest a tight
	// loop), so the default fuel takes at most about 15 s there, a
	// quarter of the default backstop. A task that raises fuel should
	// keep timeout_ms at 20 ms or more for every million units. A run
	// still going at its backstop is an ERROR.
	DefaultCheckerTimeoutMS = 60000
	MaxCheckerTimeoutMS     = 100000
	// DefaultCheckerOutputBytes is the default cap on what one run
	// writes to standard output; MaxCheckerOutputBytes the largest
	// accepted.
	DefaultCheckerOutputBytes = 64 << 10
	MaxCheckerOutputBytes     = 1 << 20
	// CheckerTotalTime bounds the time all checker runs (and their
	// compilation) of one Judge take together: a backstop, as the deadline
	// of a run is, four times what CheckerTotalFuel took at the slowest
	// rate measured (about 75 s on two loaded cores), so that a candidate
	// whose outputs spend the grade's whole fuel meets its FAIL, not the
	// clock. The judge's sandbox is given this and a minute more.
	CheckerTotalTime = 300 * time.Second
	// maxCheckerMessage bounds the message of an answer.
	maxCheckerMessage = 4096
)

// ExitCheckerFailed is the judge program's exit status when a checker
// failed (an error wrapping ErrChecker): the controller turns it into an
// ERROR with reason code schema.ReasonCheckerFailed.
const ExitCheckerFailed = 4

// CheckerInput is the document a checker reads on its standard input.
type CheckerInput struct {
	// ID is the case id.
	ID string `json:"id"`
	// Kind is the task kind: function or command.
	Kind schema.TaskKind `json:"kind"`
	// Input is the case input: for a function task the JSON array of
	// arguments (args); for a command task {"argv":[...],"stdin":"..."}.
	Input json.RawMessage `json:"input"`
	// Expected is the case's expected value when it has one: for a
	// function task the JSON value of expected, for a command task
	// expected_stdout as a JSON string. Absent otherwise.
	Expected json.RawMessage `json:"expected,omitempty"`
	// Output is the candidate's output, base64 (standard, padded): for a
	// function task the JSON encoding of the value it returned, for a
	// command task its standard output, byte for byte.
	Output []byte `json:"output"`
}

// CheckerAnswer is the document a checker writes on its standard output
// (white space around it is allowed, nothing else).
type CheckerAnswer struct {
	// Verdict is accept or reject.
	Verdict string `json:"verdict"`
	// Message says why, for a reject: UTF-8, cut to 4096 bytes when
	// longer. A digest verdict says nothing of it (it may echo the
	// case), a detailed one quotes an escaped, truncated excerpt.
	Message string `json:"message,omitempty"`
}

// Checker answers.
const (
	CheckerAccept = "accept"
	CheckerReject = "reject"
)

// commandInput is CheckerInput.Input for a command task.
type commandInput struct {
	Argv  []string `json:"argv"`
	Stdin string   `json:"stdin"`
}

// checkerFrame encodes the input of one checker run.
func checkerFrame(in CheckerInput) ([]byte, error) {
	if in.Output == nil {
		in.Output = []byte{}
	}
	return json.Marshal(in)
}

// parseCheckerAnswer reads a checker's standard output strictly.
func parseCheckerAnswer(out []byte) (CheckerAnswer, error) {
	var a CheckerAnswer
	if len(bytes.TrimSpace(out)) == 0 {
		return a, errors.New("it wrote no answer")
	}
	tree, err := decodeStrict(out, &a)
	if err != nil {
		return a, fmt.Errorf("its answer is not a JSON object of verdict and message: %v", err)
	}
	obj, _ := tree.(map[string]any)
	if _, ok := obj["verdict"].(string); !ok {
		return a, errors.New("its answer has no verdict string")
	}
	if m, has := obj["message"]; has {
		if _, ok := m.(string); !ok {
			return a, errors.New("its answer's message is not a string")
		}
	}
	switch {
	case a.Verdict != CheckerAccept && a.Verdict != CheckerReject:
		return a, fmt.Errorf("its verdict is %s, not accept or reject", schema.Excerpt([]byte(a.Verdict), 40))
	}
	a.Message = schema.Clip(a.Message, maxCheckerMessage)
	return a, nil
}

// checkerFuel returns the fuel of one run of a checker comparator.
func (c Comparator) checkerFuel() int64 {
	if c.Fuel == 0 {
		return DefaultCheckerFuel
	}
	return c.Fuel
}

// checkerLimits returns the limits of a checker comparator, defaults
// filled in.
func (c Comparator) checkerLimits() (pages uint32, timeout time.Duration, output int) {
	pages, ms, output := c.MemoryPages, c.TimeoutMS, c.OutputBytes
	if pages == 0 {
		pages = DefaultCheckerMemoryPages
	}
	if ms == 0 {
		ms = DefaultCheckerTimeoutMS
	}
	if output == 0 {
		output = DefaultCheckerOutputBytes
	}
	return pages, time.Duration(ms) * time.Millisecond, output
}

// compilationCache keeps compiled modules in memory for the life of the
// process: the judge program judges once, but tests and in-process judges
// (sandboxtest) compile the same module again and again. A module is still
// decoded and validated, against its runtime's memory limit, every time.
var compilationCache = wazero.NewCompilationCache()

// checkers holds the compiled checkers of one Judge, by module and memory
// limit, and the time they have left in all.
type checkers struct {
	ctx    context.Context
	cancel context.CancelFunc
	byKey  map[checkerKey]*checker
	// fuelLeft is what remains of CheckerTotalFuel.
	fuelLeft int64
	// onRun, when set, is told about every run (Input.OnChecker).
	onRun func(CheckerUse)
}

type checkerKey struct {
	module string
	pages  uint32
}

// checker is one compiled module.
type checker struct {
	module string // path under hidden/
	sum    string // sha256 of the module, hex
	rt     wazero.Runtime
	code   wazero.CompiledModule
}

func newCheckers() *checkers {
	ctx, cancel := context.WithTimeout(context.Background(), CheckerTotalTime)
	return &checkers{ctx: ctx, cancel: cancel, byKey: map[checkerKey]*checker{}, fuelLeft: CheckerTotalFuel}
}

// close releases every runtime.
func (ks *checkers) close() {
	if ks == nil {
		return
	}
	for _, k := range ks.byKey {
		k.rt.Close(context.Background())
	}
	ks.cancel()
}

// compile compiles the module of a checker comparator, once per module
// and memory limit. Its error wraps ErrChecker.
func (ks *checkers) compile(c Comparator, hidden map[string][]byte) (*checker, error) {
	pages, _, _ := c.checkerLimits()
	key := checkerKey{c.Module, pages}
	if k, ok := ks.byKey[key]; ok {
		return k, nil
	}
	wasm, ok := hidden[c.Module]
	if !ok {
		return nil, fmt.Errorf("%w: module %s was not read", ErrChecker, c.Module)
	}
	sum := sha256.Sum256(wasm)
	k := &checker{module: c.Module, sum: hex.EncodeToString(sum[:])}
	cfg := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(pages).
		WithCloseOnContextDone(true).
		WithCompilationCache(compilationCache)
	k.rt = wazero.NewRuntimeWithConfig(ks.ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ks.ctx, k.rt); err != nil {
		k.rt.Close(context.Background())
		return nil, k.failed("", fmt.Sprintf("WASI: %v", err))
	}
	metered, err := instrument(wasm)
	if err != nil {
		k.rt.Close(context.Background())
		return nil, k.failed("", "not a usable WebAssembly module: "+oneLine(err.Error()))
	}
	code, err := k.rt.CompileModule(ks.ctx, metered.wasm)
	if err != nil {
		k.rt.Close(context.Background())
		return nil, k.failed("", "not a usable WebAssembly module: "+oneLine(err.Error()))
	}
	k.code = code
	ks.byKey[key] = k
	return k, nil
}

// failed is a checker failure: an error wrapping ErrChecker that names
// the module, its sha256 and the case, in words digest reasons may keep
// (schema.Redact keeps them up to the first quote).
func (k *checker) failed(caseID, what string) error {
	where := ""
	if caseID != "" {
		where = " case " + caseID + ":"
	}
	return fmt.Errorf("%w: module %s sha256 %s:%s %s", ErrChecker, k.module, k.sum, where, what)
}

// capWriter keeps at most max bytes and stops the run past them.
type capWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	max    int
	over   bool
	cancel context.CancelFunc
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over || w.buf.Len()+len(p) > w.max {
		w.over = true
		w.cancel()
		return 0, errors.New("output limit")
	}
	return w.buf.Write(p)
}

// checkerRun is what one checker run came to.
type checkerRun struct {
	answer CheckerAnswer
	// fuel is the fuel the run was given, used what it used of it;
	// outOfFuel says it was stopped by running out (used is then fuel,
	// and answer is empty).
	fuel, used int64
	outOfFuel  bool
}

// run runs the checker on one case with the given fuel and returns its
// answer, or that it ran out of fuel; the error wraps ErrChecker.
func (k *checker) run(parent context.Context, c Comparator, caseID string, frame []byte, fuel int64) (checkerRun, error) {
	_, timeout, maxOut := c.checkerLimits()
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	stdout := &capWriter{max: maxOut, cancel: cancel}
	stderr := &capWriter{max: 4 << 10, cancel: func() {}}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("checker").
		WithStdin(bytes.NewReader(frame)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithStartFunctions() // _start is called below, once the fuel is set
	start := time.Now()
	res := checkerRun{fuel: fuel}
	mod, err := k.rt.InstantiateModule(ctx, k.code, cfg)
	if err == nil {
		g, _ := mod.ExportedGlobal(FuelExport).(api.MutableGlobal)
		if g == nil {
			mod.Close(context.Background())
			return res, k.failed(caseID, "its instrumented module has no fuel global")
		}
		g.Set(uint64(fuel))
		if f := mod.ExportedFunction("_start"); f != nil {
			_, err = f.Call(ctx)
		}
		res.used, res.outOfFuel = fuelUsed(fuel, g.Get())
		mod.Close(context.Background())
	}
	elapsed := time.Since(start).Milliseconds()
	tail := ""
	if stderr.buf.Len() > 0 {
		tail = " (its stderr: " + schema.Excerpt(stderr.buf.Bytes(), 120) + ")"
	}
	var exit *sys.ExitError
	switch {
	case res.outOfFuel && ctx.Err() == nil:
		// Stopped by its fuel: deterministic, and decided by the
		// output the candidate wrote. The caller fails the case.
		return res, nil
	case stdout.over:
		return res, k.failed(caseID, fmt.Sprintf("wrote more than its output cap of %d bytes", maxOut))
	case parent.Err() != nil:
		return res, k.failed(caseID, fmt.Sprintf("the checkers ran past their total time of %s", CheckerTotalTime))
	case ctx.Err() != nil:
		return res, k.failed(caseID, fmt.Sprintf("ran past its deadline of %d ms", timeout.Milliseconds()))
	case errors.As(err, &exit) && exit.ExitCode() != 0:
		return res, k.failed(caseID, fmt.Sprintf("exited with status %d after %d ms%s", exit.ExitCode(), elapsed, tail))
	case err != nil && !errors.As(err, &exit) && strings.Contains(err.Error(), "wasm error: "):
		return res, k.failed(caseID, "trapped: "+trapMessage(err)+tail)
	case err != nil && !errors.As(err, &exit):
		// Not a trap: an import wazero does not provide (a module for
		// another host than WASI), or a start function that failed.
		return res, k.failed(caseID, "could not run: "+trapMessage(err)+tail)
	}
	a, err := parseCheckerAnswer(stdout.buf.Bytes())
	if err != nil {
		return res, k.failed(caseID, err.Error())
	}
	res.answer = a
	return res, nil
}

// trapMessage is the first line of a trap's error, without wazero's
// stack trace: "wasm error: unreachable".
func trapMessage(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "wasm stack trace"); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, "wasm error: "); i >= 0 {
		msg = msg[i:]
	}
	return clampText(oneLine(msg), 200)
}

// oneLine keeps a message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// checkerOutputs are the candidate bytes a checker decides on.
type checkerCall struct {
	input, expected, output []byte
}

// checkerReads is the largest candidate output a checker with a memory
// limit of pages is given: a sixteenth of its memory, so that no output a
// candidate can produce leaves a checker too little memory to read it
// (base64 in a JSON document, decoded) and turns its FAIL into a task's
// ERROR. A larger output fails its case (output_limit).
func checkerReads(pages uint32) int { return int(pages) * 65536 / 16 }

// CheckerReads is the largest candidate output the checker of c is
// given; a larger one fails its case before the checker runs
// (output_limit). 0 when c is not a checker comparator.
func (c Comparator) CheckerReads() int {
	if c.Kind != KindChecker {
		return 0
	}
	pages, _, _ := c.checkerLimits()
	return checkerReads(pages)
}

// decideChecker asks the checker about one case. A checker failure is a
// decision with err set.
func decideChecker(d schema.Disclosure, ks *checkers, w expectation, kind schema.TaskKind, c Case, call checkerCall) decision {
	pages, _, _ := w.cmp.checkerLimits()
	if n, most := len(call.output), checkerReads(pages); n > most {
		return fail(schema.DecidedByLimit, schema.ReasonOutputLimit,
			fmt.Sprintf("output is %d bytes, more than the checker reads (%d, a sixteenth of its memory)", n, most))
	}
	frame, err := checkerFrame(CheckerInput{ID: c.ID, Kind: kind, Input: call.input, Expected: call.expected, Output: call.output})
	if err != nil {
		return decision{err: w.chk.failed(c.ID, "cannot encode its input: "+err.Error())}
	}
	fuel, capped := w.cmp.checkerFuel(), false
	if ks.fuelLeft < fuel {
		fuel, capped = ks.fuelLeft, true
	}
	run, err := w.chk.run(ks.ctx, w.cmp, c.ID, frame, fuel)
	if err != nil {
		return decision{err: err}
	}
	ks.fuelLeft -= run.used
	if ks.onRun != nil {
		ks.onRun(CheckerUse{Case: c.ID, Fuel: run.fuel, Used: run.used, OutOfFuel: run.outOfFuel})
	}
	if run.outOfFuel {
		if capped {
			return fail(KindChecker, ReasonCheckerFuel,
				fmt.Sprintf("the checker ran out of fuel on the output: the checkers of the grade used up their total fuel of %d", CheckerTotalFuel))
		}
		return fail(KindChecker, ReasonCheckerFuel,
			fmt.Sprintf("the checker ran out of fuel on the output: it used up its fuel of %d", fuel))
	}
	a := run.answer
	if a.Verdict == CheckerAccept {
		return pass(KindChecker)
	}
	// Under the digest policy nothing of the message: it is task text
	// that may quote the case's hidden data, and even its length or a
	// hash can tell which of a few messages it is.
	digest := "the checker rejected the output; output " + schema.Summary(call.output)
	detail := "the checker rejected the output"
	if a.Message != "" {
		detail += ": " + schema.Excerpt([]byte(a.Message), 240)
	}
	return fail(KindChecker, schema.ReasonWrongAnswer, say(d, digest, detail))
}

// checkerInput returns the input and expected value a checker is given
// for a case.
func checkerInput(kind schema.TaskKind, c Case) (input, expected []byte, err error) {
	switch kind {
	case schema.KindFunction:
		return c.Args, c.Expected, nil
	case schema.KindCommand:
		argv := c.Argv
		if argv == nil {
			argv = []string{}
		}
		input, err = json.Marshal(commandInput{Argv: argv, Stdin: c.Stdin})
		if err != nil {
			return nil, nil, err
		}
		if c.ExpectedStdout != nil {
			if expected, err = json.Marshal(*c.ExpectedStdout); err != nil {
				return nil, nil, err
			}
		}
		return input, expected, nil
	}
	return nil, nil, fmt.Errorf("%w: the checker comparator does not apply to %s tasks", ErrComparator, kind)
}
