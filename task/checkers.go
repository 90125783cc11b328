package task

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
)

// CheckerFindings is what CheckCheckers found out about a task's checker
// modules. A task whose findings are not Fit must not grade anyone: its
// checker would fail a right answer, pass a wrong one, or turn a
// candidate's bad output into an ERROR.
type CheckerFindings struct {
	// Cases is the number of cases a checker decides; 0 when the task
	// has none (there is then nothing to check).
	Cases int `json:"cases"`
	// Expected is how many of them carry an expected output, the ones
	// the accept check runs on.
	Expected int `json:"expected"`
	// Runs is the number of checker runs made.
	Runs int `json:"runs"`
	// Accept is empty when the checker accepted every expected output;
	// otherwise it says which case it did not accept and why.
	Accept string `json:"accept,omitempty"`
	// Reject is empty when the checker answered every corrupted output
	// and rejected at least one in each case; otherwise it says where it
	// did not.
	Reject string `json:"reject,omitempty"`
	// Large is empty when the checker answered every output of the
	// largest size a candidate can give it, in every case, within its
	// fuel; otherwise it says where it did not.
	Large string `json:"large,omitempty"`
	// Probes are the figures of the large outputs, one per shape.
	Probes []CheckerProbe `json:"probes,omitempty"`
}

// CheckerProbe is what the checker used on one shape of large output.
type CheckerProbe struct {
	// Shape names the output.
	Shape string `json:"shape"`
	// Bytes is the size of the largest output of the shape given (the
	// task's output limit, or what the checker reads when that is less).
	Bytes int `json:"bytes"`
	// Fuel is the most fuel a case's run used, Case that case, and
	// Budget its fuel.
	Fuel   int64  `json:"fuel"`
	Case   string `json:"case"`
	Budget int64  `json:"budget"`
	// OutOfFuel counts the cases whose run used up its fuel.
	OutOfFuel int `json:"out_of_fuel,omitempty"`
}

// Fit reports whether the checkers passed every check.
func (f *CheckerFindings) Fit() bool { return f.Accept == "" && f.Reject == "" && f.Large == "" }

// corruption is a wrong output CheckCheckers hands a checker: it must
// answer it, and reject at least one of them in every case.
type corruption struct {
	name string
	// function is the returned value (JSON), made from the expected
	// value; command the standard output, made from the expected one
	// (nil when the case has none).
	function func(expected []byte) []byte
	command  func(expected []byte) []byte
}

// garbage is a kilobyte of every byte value in turn: invalid UTF-8, NUL
// bytes, control characters.
var garbage = func() []byte {
	b := make([]byte, 1024)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}()

var corruptions = []corruption{
	{
		name:     "no output",
		function: func([]byte) []byte { return []byte("null") },
		command:  func([]byte) []byte { return []byte{} },
	},
	{
		name:     "the expected output with garbage added",
		function: func(e []byte) []byte { return []byte(`{"strictgrade-corrupted":` + string(e) + `}`) },
		command: func(e []byte) []byte {
			return append(append(bytes.Clone(e), "\n\x00\xff\xfe not an answer\n"...), garbage[:64]...)
		},
	},
	{
		name: "a kilobyte of garbage",
		function: func([]byte) []byte {
			return []byte(`"not an answer \u0000 \ufffd ` + strings.Repeat("\\u00ff", 160) + `"`)
		},
		command: func([]byte) []byte { return bytes.Clone(garbage) },
	},
}

// largeShape is an output of a given size CheckCheckers hands a checker:
// it must answer it within its fuel, accept or reject.
type largeShape struct {
	name string
	// function makes a JSON value of about n bytes, command standard
	// output of n bytes, from the expected output (nil when the case has
	// none).
	function func(expected []byte, n int) []byte
	command  func(expected []byte, n int) []byte
}

// noise is n bytes of a fixed pseudo-random stream.
func noise(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// repeat is as many whole copies of unit as fit in n bytes, at least
// one.
func repeat(unit []byte, n int) []byte {
	if len(unit) == 0 {
		unit = []byte("x")
	}
	out := make([]byte, 0, max(n, len(unit)))
	for len(out)+len(unit) <= n || len(out) == 0 {
		out = append(out, unit...)
	}
	return out
}

// fill is exactly n bytes of copies of unit, the last one cut.
func fill(unit []byte, n int) []byte {
	out := repeat(unit, n+len(unit))
	return out[:n]
}

var largeShapes = []largeShape{
	{
		name: "the expected output repeated",
		function: func(e []byte, n int) []byte {
			if e == nil {
				e = []byte("0")
			}
			items := repeat(append(bytes.Clone(e), ','), n-2)
			return append(append([]byte("["), items[:len(items)-1]...), ']')
		},
		command: func(e []byte, n int) []byte { return fill(e, n) },
	},
	{
		name: "a long JSON array of numbers",
		function: func(_ []byte, n int) []byte {
			items := repeat([]byte("0,"), n-2)
			return append(append([]byte("["), items[:len(items)-1]...), ']')
		},
		command: func(_ []byte, n int) []byte {
			items := repeat([]byte("0,"), n-2)
			return append(append([]byte("["), items[:len(items)-1]...), ']')
		},
	},
	{
		name: "random bytes",
		function: func(_ []byte, n int) []byte {
			// A JSON string of random printable characters.
			b := noise(n - 2)
			for i := range b {
				b[i] = ' ' + b[i]%94
				if b[i] == '"' || b[i] == '\\' {
					b[i] = '.'
				}
			}
			return append(append([]byte(`"`), b...), '"')
		},
		command: func(_ []byte, n int) []byte { return noise(n) },
	},
}

// recordOverhead is what a function's record adds to its value:
// {"ok":true,"value":...}.
const recordOverhead = 64

// CheckCheckers runs the task's checker modules on the host, through the
// judge's own code (judge.Judge on outputs made here, so the module, its
// limits and the input it reads are those of a grade), without a
// container:
//
//   - accept: every case a checker decides that has an expected output
//     (expected for a function task, expected_stdout for a command task)
//     is given that output as the candidate's; the checker must accept it;
//   - reject: every such case is given three wrong outputs (no output,
//     the expected output with garbage added, a kilobyte of garbage
//     bytes, or for a function task JSON values of the same spirit),
//     except one that equals the expected output; the checker must
//     answer each (a failure here is an ERROR any candidate could
//     cause) and reject at least one of them;
//   - large: every such case, with or without an expected output, is
//     given outputs of the largest size a candidate can give the checker
//     (the task's output_bytes, or what the checker reads when that is
//     less): the expected output repeated, a long JSON array of numbers,
//     random bytes (a JSON string of them for a function task). The
//     checker must answer each, accept or reject, within its fuel: a run
//     out of fuel would fail an answer for its size alone, and a failure
//     is an ERROR any candidate could cause. Each case is judged on its
//     own, so that the grade's total fuel is not what is tested; the
//     fuel used is recorded per shape (Probes).
//
// A checker that fails (traps, runs past its limits, answers garbage) is
// a finding, never an error. The error means the check could not be made:
// the task was not made by Load, or the judge refuses its cases.
func (t *Task) CheckCheckers() (*CheckerFindings, error) {
	if t.snap == nil || t.Cases == nil {
		return nil, ErrNotLoaded
	}
	f := &CheckerFindings{}
	kind := t.Spec.Kind
	var checked []int // indices of the cases a checker decides
	hidden := map[string][]byte{}
	for i, c := range t.Cases.Cases {
		cmp := t.Cases.Comparator(c)
		if cmp.Kind != judge.KindChecker {
			continue
		}
		checked = append(checked, i)
		if _, ok := hidden[cmp.Module]; !ok {
			data, err := t.HiddenFile(cmp.Module)
			if err != nil {
				return nil, err
			}
			hidden[cmp.Module] = data
		}
		if expectedOutput(kind, c) != nil {
			f.Expected++
		}
	}
	f.Cases = len(checked)
	if f.Cases == 0 {
		return f, nil
	}
	// judgeOutputs judges the outputs given, by case index; it is safe
	// for concurrent use. run counts the runs, one goroutine at a time.
	judgeOutputs := func(outputs map[int][]byte, onChecker func(judge.CheckerUse)) (*schema.Verdict, error) {
		in := &judge.Input{
			Meta: judge.Meta{Kind: kind, Verdict: schema.Verdict{
				Schema:     schema.ID,
				Tier:       schema.TierStrict,
				Task:       schema.Task{ID: t.Spec.ID, Digest: t.Digest, Kind: kind},
				Disclosure: schema.DisclosureDetailed,
			}},
			Cases:     t.Cases,
			Hidden:    hidden,
			Outputs:   make([]judge.Output, len(t.Cases.Cases)),
			OnChecker: onChecker,
		}
		for i, out := range outputs {
			in.Outputs[i] = candidateOutput(kind, t.Cases.Cases[i], out)
		}
		return judge.Judge(in)
	}
	run := func(outputs map[int][]byte) (*schema.Verdict, error) {
		f.Runs += len(outputs)
		return judgeOutputs(outputs, nil)
	}

	// Accept: the expected outputs.
	outputs := map[int][]byte{}
	for _, i := range checked {
		c := t.Cases.Cases[i]
		if e := expectedOutput(kind, c); e != nil {
			outputs[i] = e
		}
	}
	if len(outputs) > 0 {
		v, err := run(outputs)
		switch {
		case errors.Is(err, judge.ErrChecker):
			f.Accept = "the checker failed on an expected output: " + err.Error()
		case err != nil:
			return nil, err
		default:
			for _, i := range checked {
				if _, ran := outputs[i]; ran && v.Cases[i].Outcome != schema.OutcomePass {
					f.Accept = fmt.Sprintf("the checker did not accept the expected output of case %s: %s", v.Cases[i].ID, v.Cases[i].Reason)
					break
				}
			}
		}
	}

	// Reject: the corrupted outputs.
	rejected := make(map[int]bool, len(checked))
	for _, cr := range corruptions {
		outputs := map[int][]byte{}
		for _, i := range checked {
			c := t.Cases.Cases[i]
			e := expectedOutput(kind, c)
			var out []byte
			if kind == schema.KindFunction {
				out = cr.function(e)
			} else {
				out = cr.command(e)
			}
			if e != nil && sameOutput(kind, out, e) {
				continue // not wrong for this case
			}
			outputs[i] = out
		}
		if len(outputs) == 0 {
			continue
		}
		v, err := run(outputs)
		switch {
		case errors.Is(err, judge.ErrChecker):
			f.Reject = fmt.Sprintf("the checker failed on a wrong output (%s), an ERROR any candidate could cause: %v", cr.name, err)
			return f, nil
		case err != nil:
			return nil, err
		}
		for i := range outputs {
			if r := v.Cases[i]; r.Outcome == schema.OutcomeFail && r.DecidedBy == judge.KindChecker {
				rejected[i] = true
			}
		}
	}
	for _, i := range checked {
		if !rejected[i] {
			names := make([]string, len(corruptions))
			for k, cr := range corruptions {
				names[k] = cr.name
			}
			f.Reject = fmt.Sprintf("the checker accepted every wrong output of case %s (%s)", t.Cases.Cases[i].ID, strings.Join(names, "; "))
			break
		}
	}

	// Large: the largest outputs, each case judged on its own. The runs
	// are independent and long (a checker may spend billions of fuel
	// units on one), so they run on every CPU at once; the findings are
	// then taken in their order, as if they had run one by one.
	// Runs start in order; once one has found a fault (which ends the
	// findings there), the later ones are not started, as the check one
	// by one would not have run them.
	type largeRun struct {
		bytes   int
		use     judge.CheckerUse
		err     error
		skipped bool
	}
	results := make([]largeRun, len(largeShapes)*len(checked))
	var found atomic.Bool
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for k, sh := range largeShapes {
		for j, i := range checked {
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				r := &results[k*len(checked)+j]
				if found.Load() {
					r.skipped = true
					return
				}
				c := t.Cases.Cases[i]
				n := largest(t.Spec.Limits.withDefaults().OutputBytes, t.Cases.Comparator(c).CheckerReads())
				var out []byte
				if kind == schema.KindFunction {
					out = sh.function(expectedOutput(kind, c), max(n-recordOverhead, 16))
				} else {
					out = sh.command(expectedOutput(kind, c), n)
				}
				r.bytes = len(out)
				_, r.err = judgeOutputs(map[int][]byte{i: out}, func(u judge.CheckerUse) { r.use = u })
				if r.err != nil || r.use.OutOfFuel {
					found.Store(true)
				}
			}()
		}
	}
	wg.Wait()
	for k, sh := range largeShapes {
		p := CheckerProbe{Shape: sh.name}
		for j, i := range checked {
			c := t.Cases.Cases[i]
			r := results[k*len(checked)+j]
			if r.skipped {
				// Started after a fault that comes before it.
				return nil, fmt.Errorf("task: check of %s: a large-output run was skipped before the fault that stopped them", c.ID)
			}
			f.Runs++
			p.Bytes = max(p.Bytes, r.bytes)
			switch {
			case errors.Is(r.err, judge.ErrChecker):
				f.Large = fmt.Sprintf("the checker failed on an output of %d bytes (%s), an ERROR any candidate could cause: %v", r.bytes, sh.name, r.err)
			case r.err != nil:
				return nil, r.err
			}
			if r.use.Used > p.Fuel || p.Case == "" {
				p.Fuel, p.Case, p.Budget = r.use.Used, c.ID, r.use.Fuel
			}
			if r.use.OutOfFuel {
				p.OutOfFuel++
				if f.Large == "" {
					f.Large = fmt.Sprintf("the checker ran out of its fuel of %d on an output of %d bytes (%s) in case %s: a candidate's answer of that size would fail for its size alone", r.use.Fuel, r.bytes, sh.name, c.ID)
				}
			}
			if f.Large != "" {
				f.Probes = append(f.Probes, p)
				return f, nil
			}
		}
		f.Probes = append(f.Probes, p)
	}
	return f, nil
}

// largest is the size of the largest output a candidate can give a
// checker: the task's output limit, or what the checker reads when that
// is less.
func largest(limit int64, reads int) int {
	if limit < int64(reads) {
		return int(limit)
	}
	return reads
}

// expectedOutput is the output a case expects, as a candidate would
// produce it: the expected value of a function case, the expected
// standard output of a command case; nil when it has none.
func expectedOutput(kind schema.TaskKind, c judge.Case) []byte {
	switch {
	case kind == schema.KindFunction && len(c.Expected) > 0:
		return bytes.Clone(c.Expected)
	case kind == schema.KindCommand && c.ExpectedStdout != nil:
		return []byte(*c.ExpectedStdout)
	}
	return nil
}

// sameOutput reports whether a made-up output is the expected one.
func sameOutput(kind schema.TaskKind, out, expected []byte) bool {
	if kind == schema.KindFunction {
		return bytes.Equal(bytes.TrimSpace(out), bytes.TrimSpace(expected))
	}
	return bytes.Equal(out, expected)
}

// candidateOutput is what a candidate that produced out would leave for
// the judge: a function's record of a returned value, or a command's
// standard output, with the exit status the case expects.
func candidateOutput(kind schema.TaskKind, c judge.Case, out []byte) judge.Output {
	o := judge.Output{Result: &judge.RunResult{Exit: schema.ExitExited, ExitCode: c.WantExit()}, Files: map[string]*judge.Blob{}}
	if kind == schema.KindFunction {
		o.Files[judge.ValueFile] = &judge.Blob{Data: []byte(`{"ok":true,"value":` + string(out) + `}`)}
		return o
	}
	o.Stdout = &judge.Blob{Data: out}
	return o
}
