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
// once, a fixed random stream), a memory limit, a deadline, and a cap on
// what it writes. Its standard input is one JSON document (CheckerInput)
// and its standard output must be one JSON document (CheckerAnswer).
//
// The candidate's output is only data to the checker: base64 in its
// input. Whatever the candidate wrote, the checker must answer accept or
// reject; a checker that does anything else (traps, exits non-zero, runs
// past its deadline, its memory or its output cap, answers something
// that is not an answer, or is not a module at all) is a defect of the
// task: Judge returns an error wrapping ErrChecker, the judge program
// exits with ExitCheckerFailed, and the controller makes the grade an
// ERROR with reason code checker_failed. It is never the candidate's FAIL,
// and never a PASS.

// Limits of a checker, as a Comparator sets them: 0 means the default.
const (
	// DefaultCheckerMemoryPages is the default memory limit in 64 KiB
	// pages (64 MiB); MaxCheckerMemoryPages the largest accepted (256 MiB).
	DefaultCheckerMemoryPages = 1024
	MaxCheckerMemoryPages     = 4096
	// DefaultCheckerTimeoutMS is the default deadline of one run in
	// milliseconds, wall-clock time (wazero has no fuel), instantiation
	// included; MaxCheckerTimeoutMS the largest accepted. A deadline is
	// the one limit that depends on the machine's load: leave a checker
	// ample room.
	DefaultCheckerTimeoutMS = 5000
	MaxCheckerTimeoutMS     = 10000
	// DefaultCheckerOutputBytes is the default cap on what one run
	// writes to standard output; MaxCheckerOutputBytes the largest
	// accepted.
	DefaultCheckerOutputBytes = 64 << 10
	MaxCheckerOutputBytes     = 1 << 20
	// CheckerTotalTime bounds the time all checker runs (and their
	// compilation) of one Judge take together, well within the judge
	// container's wall-clock limit.
	CheckerTotalTime = 60 * time.Second
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
	// Message says why, for a reject; at most 4096 bytes of UTF-8. A
	// digest verdict quotes none of it (it may echo the case), a
	// detailed one an escaped, truncated excerpt.
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
	case len(a.Message) > maxCheckerMessage:
		return a, fmt.Errorf("its message is longer than %d bytes", maxCheckerMessage)
	}
	return a, nil
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
	return &checkers{ctx: ctx, cancel: cancel, byKey: map[checkerKey]*checker{}}
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
	code, err := k.rt.CompileModule(ks.ctx, wasm)
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

// run runs the checker on one case and returns its answer; the error
// wraps ErrChecker.
func (k *checker) run(parent context.Context, c Comparator, caseID string, frame []byte) (CheckerAnswer, error) {
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
		WithStderr(stderr)
	start := time.Now()
	mod, err := k.rt.InstantiateModule(ctx, k.code, cfg)
	if mod != nil {
		mod.Close(context.Background())
	}
	elapsed := time.Since(start).Milliseconds()
	tail := ""
	if stderr.buf.Len() > 0 {
		tail = " (its stderr: " + schema.Excerpt(stderr.buf.Bytes(), 120) + ")"
	}
	var exit *sys.ExitError
	switch {
	case stdout.over:
		return CheckerAnswer{}, k.failed(caseID, fmt.Sprintf("wrote more than its output cap of %d bytes", maxOut))
	case parent.Err() != nil:
		return CheckerAnswer{}, k.failed(caseID, fmt.Sprintf("the checkers ran past their total time of %s", CheckerTotalTime))
	case ctx.Err() != nil:
		return CheckerAnswer{}, k.failed(caseID, fmt.Sprintf("ran past its deadline of %d ms", timeout.Milliseconds()))
	case errors.As(err, &exit) && exit.ExitCode() != 0:
		return CheckerAnswer{}, k.failed(caseID, fmt.Sprintf("exited with status %d after %d ms%s", exit.ExitCode(), elapsed, tail))
	case err != nil && !errors.As(err, &exit) && strings.Contains(err.Error(), "wasm error: "):
		return CheckerAnswer{}, k.failed(caseID, "trapped: "+trapMessage(err)+tail)
	case err != nil && !errors.As(err, &exit):
		// Not a trap: an import wazero does not provide (a module for
		// another host than WASI), or a start function that failed.
		return CheckerAnswer{}, k.failed(caseID, "could not run: "+trapMessage(err)+tail)
	}
	a, err := parseCheckerAnswer(stdout.buf.Bytes())
	if err != nil {
		return a, k.failed(caseID, err.Error())
	}
	return a, nil
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
	a, err := w.chk.run(ks.ctx, w.cmp, c.ID, frame)
	if err != nil {
		return decision{err: err}
	}
	if a.Verdict == CheckerAccept {
		return pass(KindChecker)
	}
	digest := "the checker rejected the output; output " + schema.Summary(call.output)
	if a.Message != "" {
		digest += "; message " + schema.Summary([]byte(a.Message))
	}
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
