package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/strictgrade/strictgrade/schema"
)

// Values of Case.DecidedBy and Verdict.ReasonCode the judge uses beyond
// those the schema package names.
const (
	// DecidedByOutput: the output the case is graded on is missing,
	// malformed or the case did not run.
	DecidedByOutput = "output"
	// DecidedByException: the function raised instead of returning (the
	// shim's record says ok: false).
	DecidedByException = "exception"
	// ReasonMissingOutput: the case did not run, or did not produce the
	// output it is graded on.
	ReasonMissingOutput = "missing_output"
)

// maxMillis is the largest duration the verdict schema accepts (7 days).
const maxMillis = 604_800_000

// Judge grades the candidate's outputs against the hidden cases and returns
// the verdict: the controller's skeleton (in.Meta.Verdict) with the outcome,
// reason code, reason, per-case records and tests hash filled in. It is a
// pure function of its input, but for one thing: whether a checker
// comparator meets its wall-clock deadline.
//
// Reasons are written under the skeleton's disclosure policy, or
// schema.DisclosureDigest when it names none (the verdict then records
// it); the skeleton's case_order, if any, is kept as it is. Neither
// changes how a case is decided. Every part of the verdict is bounded so
// that it always stays within schema.MaxSize (see MaxCases).
//
// Each case passes or fails; the first rule that applies decides:
//
//  1. no result.json: FAIL, decided by output (missing_output);
//  2. timeout, oom, output_limit, or a truncated stdout: FAIL, decided by
//     limit (timeout, memory_limit, output_limit);
//  3. not run: FAIL, decided by output (missing_output);
//  4. an error the controller pinned on the candidate: FAIL, decided by
//     firewall (rejected_artifact);
//  5. killed by a signal: FAIL, decided by exit_code (runtime_error);
//  6. per kind:
//     function: the shim's record must exist and be exactly
//     {"ok":true,"value":V} or {"ok":false,"error":"..."}; a missing
//     or malformed record fails (output), ok:false fails (exception,
//     runtime_error), so does a non-zero exit status; V is compared with
//     the expected value (json, wrong_answer);
//     command: the exit status must be expected_exit (exit_code:
//     runtime_error when 0 was expected, else wrong_answer), then stdout
//     is compared with expected_stdout if there is one (wrong_answer);
//     data: the exit status as for command, then every expected file
//     must have been written and compare equal (extra files are
//     ignored);
//     with the checker comparator (function and command), the
//     checker's answer replaces the comparison of V or stdout: accept
//     passes, reject fails (checker, wrong_answer).
//
// An output the judge does not read whole (over MaxFileSize or what is
// left of MaxOutputsSize, or over MaxJSONSize for the json comparator)
// fails its case, decided by limit (output_limit).
//
// The verdict is PASS when there is at least one case and every case
// passed, otherwise FAIL with the reason code of the first failing case.
//
// The error, wrapping ErrInput, ErrComparator or ErrExpected, means the
// judge cannot grade: the skeleton, a run result, a comparator or an
// expected value is unusable. Nothing the candidate wrote can cause it.
// An error wrapping ErrChecker means a checker module failed (see
// CheckerInput): the task is broken, though what the candidate wrote may
// be what broke it.
func Judge(in *Input) (*schema.Verdict, error) {
	if in == nil || in.Cases == nil {
		return nil, fmt.Errorf("%w: no cases", ErrInput)
	}
	kind := in.Meta.Kind
	if _, ok := caseFields[kind]; !ok {
		return nil, fmt.Errorf("%w: task kind %q (want function, command or data)", ErrInput, kind)
	}
	v := in.Meta.Verdict
	v.CaseOrder = slices.Clone(v.CaseOrder)
	v.Disclosure = effective(v.Disclosure)
	switch {
	case v.Tier != schema.TierStrict:
		return nil, fmt.Errorf("%w: tier %q: the judge grades the strict tier only", ErrInput, v.Tier)
	case v.Task.Kind == "":
		v.Task.Kind = kind
	case v.Task.Kind != kind:
		return nil, fmt.Errorf("%w: meta kind %q differs from the verdict's task kind %q", ErrInput, kind, v.Task.Kind)
	}
	switch {
	case v.Schema != schema.ID:
		return nil, fmt.Errorf("%w: the skeleton follows schema %q; this judge writes %s", ErrInput, v.Schema, schema.ID)
	case v.Disclosure != schema.DisclosureDigest && v.Disclosure != schema.DisclosureDetailed:
		return nil, fmt.Errorf("%w: disclosure policy %q (want digest or detailed)", ErrInput, v.Disclosure)
	}
	cases := in.Cases.Cases
	switch {
	case len(cases) == 0:
		return nil, fmt.Errorf("%w: there are no cases", ErrInput)
	case len(cases) > MaxCases:
		return nil, fmt.Errorf("%w: %d cases, more than the limit of %d", ErrInput, len(cases), MaxCases)
	case len(in.Outputs) != len(cases):
		return nil, fmt.Errorf("%w: %d outputs for %d cases", ErrInput, len(in.Outputs), len(cases))
	}
	if err := checkOrder(v.CaseOrder, len(cases)); err != nil {
		return nil, err
	}
	for _, c := range cases {
		if err := checkID(c.ID); err != nil {
			return nil, fmt.Errorf("%w: case id: %v", ErrInput, err)
		}
	}

	// Everything trusted is checked before any candidate byte is looked
	// at, so that whether the judge can grade never depends on them.
	ks := newCheckers()
	ks.onRun = in.OnChecker
	defer ks.close()
	wants := make([]expectation, len(cases))
	for i, c := range cases {
		w, err := expect(in, ks, c)
		if errors.Is(err, ErrChecker) {
			return nil, err // names the module, in words a digest keeps
		}
		if err != nil {
			return nil, fmt.Errorf("case %q: %w", c.ID, err)
		}
		wants[i] = w
		if err := checkResult(in.Outputs[i].Result); err != nil {
			return nil, fmt.Errorf("case %q: %w", c.ID, err)
		}
	}

	records := make([]schema.Case, len(cases))
	failed, first := 0, -1
	firstCode := ""
	for i, c := range cases {
		out := in.Outputs[i]
		d := decide(v.Disclosure, ks, kind, c, wants[i], out)
		if d.err != nil {
			return nil, d.err
		}
		rec := schema.Case{ID: c.ID, Outcome: schema.OutcomePass, DecidedBy: d.by, Exit: schema.ExitNotRun}
		if !d.pass {
			rec.Outcome = schema.OutcomeFail
			rec.ReasonCode = d.code
			rec.Reason = clampText(d.reason, maxCaseReasonBytes)
			failed++
			if first < 0 {
				first, firstCode = i, d.code
			}
		}
		if r := out.Result; r != nil {
			rec.Exit, rec.DurationMS, rec.CPUMS = r.Exit, r.DurationMS, r.CPUMS
			if r.Exit == schema.ExitTimeout {
				rec.Limit = r.Limit
			}
			if r.Exit == schema.ExitExited {
				rec.ExitCode = schema.Code(r.ExitCode)
			}
		}
		records[i] = rec
	}
	v.SetCases(records)
	if failed == 0 {
		v.Outcome, v.ReasonCode, v.Reason = schema.OutcomePass, "", ""
		return &v, nil
	}
	v.Outcome, v.ReasonCode = schema.OutcomeFail, firstCode
	v.Reason = clampText(fmt.Sprintf("%d of %s failed; first: case %s: %s",
		failed, plural(len(cases), "case"), records[first].ID, records[first].Reason), maxVerdictReasonBytes)
	return &v, nil
}

// checkOrder checks a skeleton's case_order: nil, or a permutation of the
// n case indices.
func checkOrder(order []int, n int) error {
	if order == nil {
		return nil
	}
	if len(order) != n {
		return fmt.Errorf("%w: case_order has %d entries for %d cases", ErrInput, len(order), n)
	}
	seen := make([]bool, n)
	for _, i := range order {
		if i < 0 || i >= n || seen[i] {
			return fmt.Errorf("%w: case_order is not a permutation of the case indices", ErrInput)
		}
		seen[i] = true
	}
	return nil
}

// expectation is a case's checked expected values.
type expectation struct {
	cmp   Comparator
	value any               // function: the parsed expected value
	files map[string][]byte // data: expected content by output name
	chk   *checker          // checker: the compiled module
	// checker: the case's input and expected value as the checker
	// reads them.
	input, expected []byte
}

// expect checks a case's comparator and expected values.
func expect(in *Input, ks *checkers, c Case) (expectation, error) {
	w := expectation{cmp: in.Cases.Comparator(c)}
	if err := checkComparator(w.cmp, in.Meta.Kind); err != nil {
		return w, fmt.Errorf("%w: %v", ErrComparator, err)
	}
	if w.cmp.Kind == KindChecker {
		var err error
		if w.input, w.expected, err = checkerInput(in.Meta.Kind, c); err != nil {
			return w, err
		}
		if w.chk, err = ks.compile(w.cmp, in.Hidden); err != nil {
			return w, err
		}
	}
	switch in.Meta.Kind {
	case schema.KindFunction:
		if len(c.Expected) == 0 && w.cmp.Kind == KindChecker {
			break // the checker decides without one (LoadCases allows it)
		}
		v, err := parseJSON(c.Expected)
		if err != nil {
			return w, fmt.Errorf("%w: expected: %v", ErrExpected, err)
		}
		w.value = v
	case schema.KindCommand:
		if c.ExpectedStdout != nil {
			if err := checkExpected(w.cmp, []byte(*c.ExpectedStdout)); err != nil {
				return w, fmt.Errorf("expected_stdout: %w", err)
			}
		}
	case schema.KindData:
		if len(c.ExpectedFiles) == 0 {
			return w, fmt.Errorf("%w: no expected files", ErrInput)
		}
		w.files = make(map[string][]byte, len(c.ExpectedFiles))
		for _, name := range sortedKeys(c.ExpectedFiles) {
			data, ok := in.Hidden[c.ExpectedFiles[name]]
			if !ok {
				return w, fmt.Errorf("%w: expected file %s (%s) was not read", ErrInput, name, c.ExpectedFiles[name])
			}
			if err := checkExpected(w.cmp, data); err != nil {
				return w, fmt.Errorf("expected file %s: %w", name, err)
			}
			w.files[name] = data
		}
	}
	if c.ExpectedExit != nil && (*c.ExpectedExit < 0 || *c.ExpectedExit > 255) {
		return w, fmt.Errorf("%w: expected_exit %d is not in 0..255", ErrInput, *c.ExpectedExit)
	}
	return w, nil
}

// checkResult checks what the controller recorded about a run.
func checkResult(r *RunResult) error {
	if r == nil {
		return nil
	}
	switch r.Exit {
	case schema.ExitExited:
		if r.ExitCode < 0 || r.ExitCode > 255 {
			return fmt.Errorf("%w: result: exit code %d is not in 0..255", ErrInput, r.ExitCode)
		}
	case schema.ExitSignaled, schema.ExitTimeout, schema.ExitOOM, schema.ExitOutputLimit, schema.ExitNotRun:
	default:
		return fmt.Errorf("%w: result: unknown exit %q", ErrInput, r.Exit)
	}
	if r.DurationMS < 0 || r.DurationMS > maxMillis {
		return fmt.Errorf("%w: result: duration %d ms is out of range", ErrInput, r.DurationMS)
	}
	if r.CPUMS != nil && (*r.CPUMS < 0 || *r.CPUMS > maxMillis) {
		return fmt.Errorf("%w: result: CPU time %d ms is out of range", ErrInput, *r.CPUMS)
	}
	switch r.Limit {
	case "", schema.LimitCPU, schema.LimitWall:
	default:
		return fmt.Errorf("%w: result: unknown limit %q", ErrInput, r.Limit)
	}
	return nil
}

// timeoutReason says which time limit a case met.
func timeoutReason(r *RunResult) string {
	cpu := ""
	if r.CPUMS != nil {
		cpu = fmt.Sprintf(", %d ms of CPU time", *r.CPUMS)
	}
	switch r.Limit {
	case schema.LimitCPU:
		return fmt.Sprintf("CPU time limit exceeded (stopped after %d ms%s)", r.DurationMS, cpu)
	case schema.LimitWall:
		return fmt.Sprintf("wall-clock limit reached with CPU time to spare: the candidate slept or blocked (stopped after %d ms%s)", r.DurationMS, cpu)
	}
	return fmt.Sprintf("time limit exceeded (stopped after %d ms)", r.DurationMS)
}

// decision is how one case was decided.
type decision struct {
	pass   bool
	by     string // Case.DecidedBy
	reason string
	code   string // Verdict.ReasonCode when the case is the first failure
	// err, when set, is a checker failure (ErrChecker): the case is not
	// decided and the run cannot be graded.
	err error
}

func pass(by string) decision { return decision{pass: true, by: by} }

func fail(by, code, reason string) decision {
	return decision{by: by, code: code, reason: reason}
}

// decide grades one case (see Judge for the rules), writing its reason
// under policy d.
func decide(d schema.Disclosure, ks *checkers, kind schema.TaskKind, c Case, w expectation, out Output) decision {
	r := out.Result
	if r == nil {
		return fail(DecidedByOutput, ReasonMissingOutput, "the case did not run: no result was recorded")
	}
	switch r.Exit {
	case schema.ExitTimeout:
		return fail(schema.DecidedByLimit, schema.ReasonTimeout, timeoutReason(r))
	case schema.ExitOOM:
		return fail(schema.DecidedByLimit, schema.ReasonMemoryLimit, "memory limit exceeded")
	case schema.ExitOutputLimit:
		return fail(schema.DecidedByLimit, schema.ReasonOutputLimit, "output limit exceeded")
	}
	switch {
	case r.StdoutTruncated:
		return fail(schema.DecidedByLimit, schema.ReasonOutputLimit, "standard output exceeded its limit")
	case r.Exit == schema.ExitNotRun:
		return fail(DecidedByOutput, ReasonMissingOutput, "the case did not run")
	case r.Error != "":
		// The controller's words, which may quote a name the candidate
		// chose (an output file the firewall refused).
		return fail(schema.DecidedByFirewall, schema.ReasonRejectedArtifact, say(d, schema.Redact(r.Error), r.Error))
	case r.Exit == schema.ExitSignaled:
		return fail(schema.DecidedByExitCode, schema.ReasonRuntimeError, "killed by a signal")
	}
	switch kind {
	case schema.KindFunction:
		return decideFunction(d, ks, c, r, w, out)
	case schema.KindCommand:
		if dec, ok := decideExit(c, r); !ok {
			return dec
		}
		if w.cmp.Kind == KindChecker {
			if dec, ok := usable(out.Stdout, "standard output"); !ok {
				return dec
			}
			return decideChecker(d, ks, w, kind, c, checkerCall{input: w.input, expected: w.expected, output: out.Stdout.Data})
		}
		if c.ExpectedStdout == nil {
			return pass(schema.DecidedByExitCode)
		}
		if dec, ok := usable(out.Stdout, "standard output"); !ok {
			return dec
		}
		return compared(d, w.cmp, out.Stdout.Data, []byte(*c.ExpectedStdout), mainOutput)
	default: // data
		if dec, ok := decideExit(c, r); !ok {
			return dec
		}
		names := sortedKeys(c.ExpectedFiles)
		for i, name := range names {
			// A file's name comes from the hidden cases: only the detailed
			// policy names it, the digest one counts.
			s := subject{
				detailed: "file " + quoteString(name),
				digest:   fmt.Sprintf("output file %d of %d", i+1, len(names)),
				noun:     "file",
			}
			b := out.Files[name]
			if dec, ok := usable(b, say(d, s.digest, "output "+s.detailed)); !ok {
				return dec
			}
			if dec := compared(d, w.cmp, b.Data, w.files[name], s); !dec.pass {
				return dec
			}
		}
		return pass(w.cmp.Kind)
	}
}

// decideExit checks the exit status of a command or data case.
func decideExit(c Case, r *RunResult) (decision, bool) {
	want := c.WantExit()
	if r.ExitCode == want {
		return decision{}, true
	}
	code := schema.ReasonWrongAnswer
	if want == 0 {
		code = schema.ReasonRuntimeError
	}
	return fail(schema.DecidedByExitCode, code, fmt.Sprintf("exited with status %d, not the expected status", r.ExitCode)), false
}

// usable checks that a candidate output exists and was read whole.
func usable(b *Blob, what string) (decision, bool) {
	switch {
	case b == nil:
		return fail(DecidedByOutput, ReasonMissingOutput, what+" is missing"), false
	case b.TooLarge && b.Limit < MaxFileSize:
		return fail(schema.DecidedByLimit, schema.ReasonOutputLimit,
			fmt.Sprintf("%s is larger than what was left (%d bytes) of the %d bytes the judge reads of all candidate outputs", what, b.Limit, MaxOutputsSize)), false
	case b.TooLarge:
		return fail(schema.DecidedByLimit, schema.ReasonOutputLimit, fmt.Sprintf("%s is larger than the judge reads of one file (%d bytes)", what, b.Limit)), false
	}
	return decision{}, true
}

// compared runs a comparator whose expected value is known to be usable.
func compared(d schema.Disclosure, c Comparator, got, want []byte, s subject) decision {
	if c.Kind == KindJSON && len(got) > MaxJSONSize {
		return jsonTooLarge(s, len(got))
	}
	f, err := compare(c, got, want)
	switch {
	case err != nil:
		// expect checked want; should it still be refused, the case
		// fails rather than passes.
		return fail(c.Kind, schema.ReasonWrongAnswer, prefixed(say(d, s.digest, s.detailed), "the expected value is unusable"))
	case f == nil:
		return pass(c.Kind)
	}
	return fail(c.Kind, schema.ReasonWrongAnswer, s.reason(d, f, got))
}

// jsonTooLarge fails a case whose output is too large for the json
// comparator. It names no file: the size is the candidate's.
func jsonTooLarge(s subject, n int) decision {
	return fail(schema.DecidedByLimit, schema.ReasonOutputLimit,
		fmt.Sprintf("%s is %d bytes, more than the json comparator reads (%d)", s.noun, n, MaxJSONSize))
}

// decideFunction grades a function case from the shim's record.
func decideFunction(d schema.Disclosure, ks *checkers, c Case, r *RunResult, w expectation, out Output) decision {
	b := out.Files[ValueFile]
	if b == nil && r.ExitCode != 0 {
		return fail(schema.DecidedByExitCode, schema.ReasonRuntimeError, fmt.Sprintf("exited with status %d without recording a result", r.ExitCode))
	}
	if dec, ok := usable(b, "the result record ("+valuePath+")"); !ok {
		return dec
	}
	record := subject{noun: "record"}
	if len(b.Data) > MaxJSONSize {
		return jsonTooLarge(record, len(b.Data))
	}
	rec, err := parseRecord(b.Data)
	if err != nil {
		// Only a syntax error has a position worth giving; what else is
		// wrong with a record would quote its keys.
		digest := "malformed result record"
		if je := (*jsonError)(nil); errors.As(err, &je) {
			digest += ": " + jsonSyntax(je).render(schema.DisclosureDigest)
		}
		return fail(DecidedByOutput, schema.ReasonWrongAnswer,
			say(d, digest+"; record "+schema.Summary(b.Data), "malformed result record: "+err.Error()))
	}
	if !rec.ok {
		// The exception's text is the candidate's: it can hold anything,
		// its arguments included.
		return fail(DecidedByException, schema.ReasonRuntimeError,
			say(d, "raised an exception; message "+schema.Summary([]byte(rec.err)), "raised "+schema.Excerpt([]byte(rec.err), 240)))
	}
	if r.ExitCode != 0 {
		return fail(schema.DecidedByExitCode, schema.ReasonRuntimeError, fmt.Sprintf("exited with status %d after recording a result", r.ExitCode))
	}
	if w.cmp.Kind == KindChecker {
		value, err := json.Marshal(rec.value)
		if err != nil {
			// parseJSON made the value; it always encodes.
			return fail(DecidedByOutput, schema.ReasonWrongAnswer, "the returned value cannot be encoded for the checker")
		}
		return decideChecker(d, ks, w, schema.KindFunction, c, checkerCall{input: w.input, expected: w.expected, output: value})
	}
	if f := compareJSONValues(w.cmp, rec.value, w.value); f != nil {
		return fail(KindJSON, schema.ReasonWrongAnswer, record.reason(d, f, b.Data))
	}
	return pass(KindJSON)
}

// record is the function shim's record of one call.
type record struct {
	ok    bool
	value any
	err   string
}

// parseRecord reads {"ok":true,"value":V} or {"ok":false,"error":"..."},
// strictly: one JSON object with exactly these keys and types.
func parseRecord(data []byte) (record, error) {
	v, err := parseJSON(data)
	if err != nil {
		return record{}, err
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return record{}, fmt.Errorf("got %s, want an object", describe(v))
	}
	ok, isBool := obj["ok"].(bool)
	if !isBool {
		return record{}, fmt.Errorf("field ok is missing or not a boolean")
	}
	want := "error"
	if ok {
		want = "value"
	}
	for _, k := range sortedKeys(obj) {
		if k != "ok" && k != want {
			return record{}, fmt.Errorf("unexpected field %s", quoteString(k))
		}
	}
	val, has := obj[want]
	if !has {
		return record{}, fmt.Errorf("field %s is missing", want)
	}
	if ok {
		return record{ok: true, value: val}, nil
	}
	msg, isString := val.(string)
	if !isString {
		return record{}, fmt.Errorf("field error is not a string")
	}
	return record{err: msg}, nil
}
