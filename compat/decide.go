package compat

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strictgrade/strictgrade/compat/junit"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
)

// DecidedBy values of compat case records, beyond schema.DecidedByJUnit
// and schema.DecidedByLimit.
const (
	DecidedByDiffGate = "diff_gate" // the gate rejected the diff
	DecidedByGitApply = "git_apply" // the filtered diff did not apply
	DecidedByPrepare  = "prepare"   // the checkout could not be prepared with the diff
	DecidedByOracle   = "oracle"    // not run (an ERROR verdict)
)

// maxReasonChars bounds the characters of a verdict's case reasons all
// together. A reason may quote what the code under test made an assertion
// print, so without a bound a task with thousands of tests and code that
// fails them all verbosely would make a verdict too large to sign.
const maxReasonChars = 256 << 10

// reasonChars is the share of maxReasonChars each case reason of the task
// gets, at most 400 characters. A verdict holds one case per test of
// either suite.
func (t *Task) reasonChars() int {
	return min(400, maxReasonChars/max(1, len(t.ExistingIDs)+len(t.HiddenIDs)))
}

// cases turns a run into verdict records, one per expected test.
func (r *run) cases() []schema.Case {
	out := make([]schema.Case, 0, len(r.ids))
	for _, id := range r.ids {
		o := r.result.Outcomes[id]
		c := schema.Case{ID: id, Suite: r.suite, DecidedBy: schema.DecidedByJUnit, Outcome: schema.OutcomePass,
			DurationMS: min(int64(o.Seconds*1000), 604800000), Flags: slices.Clone(o.Flags)}
		if o.Kind != junit.KindPass {
			c.Outcome = schema.OutcomeFail
			c.Reason = text(o.Reason, r.chars)
		}
		switch {
		case r.refused != nil:
			c.Outcome, c.DecidedBy = schema.OutcomeFail, schema.DecidedByFirewall
			c.Reason = text("the container's output was refused: "+r.refused.Error(), r.chars)
		case r.exit() == sandbox.ExitExited:
			c.Exit = schema.ExitExited
			if r.res.Code >= 0 && r.res.Code <= 255 {
				c.ExitCode = schema.Code(r.res.Code)
			}
		default:
			c.Exit = schema.Exit(r.exit()) // timeout, oom, output_limit
			if c.Outcome != schema.OutcomePass {
				c.DecidedBy = schema.DecidedByLimit
			}
		}
		out = append(out, c)
	}
	return out
}

// limitReason reports a run stopped by a limit or whose output was refused.
func (g *grader) limitReason(r *run) (code, reason string) {
	if r.refused != nil {
		// The firewall refused what the run left (a link, a special file):
		// the candidate's doing, named as a rejected artifact.
		return schema.ReasonRejectedArtifact, fmt.Sprintf("the %s run's output was refused: %v", r.label, r.refused)
	}
	switch r.exit() {
	case sandbox.ExitTimeout:
		return schema.ReasonTimeout, timeLimit("the "+r.label+" run", r.res, g.t.Spec.Limits.WallSeconds)
	case sandbox.ExitOOM:
		return schema.ReasonMemoryLimit, fmt.Sprintf("the %s run exceeded the memory limit of %d MiB", r.label, g.t.Spec.Limits.MemoryMB)
	case sandbox.ExitOutputLimit:
		return schema.ReasonOutputLimit, fmt.Sprintf("the %s run wrote more than %d MiB of output", r.label, testOutput>>20)
	}
	return "", ""
}

// timeLimit says which time limit what (a run, a stage) met: the task's
// wall_seconds is its CPU-time budget where the backend measures CPU time,
// with a wall-clock backstop for a run that sleeps or blocks.
func timeLimit(what string, res *sandbox.Result, seconds int) string {
	switch {
	case res.Limit == sandbox.LimitCPU:
		return fmt.Sprintf("%s exceeded the CPU-time limit of %ds", what, seconds)
	case res.CPUMeasured:
		return fmt.Sprintf("%s reached the wall-clock backstop of %v with %v of CPU time: it slept or blocked",
			what, sandbox.Backstop(time.Duration(seconds)*time.Second), res.CPU.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s exceeded the time limit of %ds", what, seconds)
}

// exit is how the run's container ended: as the engine says, except that a
// run runner.py stopped at the output cap ended at the output limit.
func (r *run) exit() sandbox.ExitKind {
	if r.res.Exit == sandbox.ExitExited && r.res.Code == runnerLimitExit {
		return sandbox.ExitOutputLimit
	}
	return r.res.Exit
}

// tally counts a run's outcomes by kind.
func (r *run) tally() map[junit.Kind][]string {
	t := map[junit.Kind][]string{}
	for _, id := range r.ids {
		k := r.result.Outcomes[id].Kind
		t[k] = append(t[k], id)
	}
	return t
}

// summary is one line per run: "hidden: 1/3 passed, 2 failed".
func summary(runs []*run) string {
	var parts []string
	for _, r := range runs {
		t := r.tally()
		s := fmt.Sprintf("%s: %d/%d passed", r.label, len(t[junit.KindPass]), len(r.ids))
		for _, k := range []junit.Kind{junit.KindFail, junit.KindXfail, junit.KindSkipped, junit.KindMissing} {
			if n := len(t[k]); n > 0 {
				s += fmt.Sprintf(", %d %s", n, k)
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// someIDs lists at most five ids.
func someIDs(ids []string) string {
	if len(ids) <= 5 {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:5], ", ") + fmt.Sprintf(" and %d more", len(ids)-5)
}

// decideFinal makes the final-mode verdict. Only a run that exited by
// itself, left a readable report naming every expected test exactly once
// as passed (and nothing else), and exited with code 0 can PASS; the exit
// code corroborates the report and never decides alone.
func (g *grader) decideFinal(runs []*run) *schema.Verdict {
	v := g.skeleton()
	var cases []schema.Case
	for _, r := range runs {
		cases = append(cases, r.cases()...)
	}
	v.SetCases(cases)
	code, reason, layer := g.finalReason(runs)
	v.Outcome = schema.OutcomePass
	if code != "" {
		v.Outcome = schema.OutcomeFail
	}
	if code == "" {
		reason = ""
	}
	v.ReasonCode, v.Reason = code, g.reason(reason)
	g.event("decide", string(v.Outcome)+" decided by "+layer, "reason_code", code, "reason", reason)
	return v
}

func (g *grader) finalReason(runs []*run) (code, reason, layer string) {
	for _, r := range runs {
		if c, why := g.limitReason(r); c != "" {
			return c, why, "limit"
		}
	}
	sum := summary(runs)
	var failed, missing int
	for _, r := range runs {
		t := r.tally()
		failed += len(t[junit.KindFail])
		missing += len(t[junit.KindXfail]) + len(t[junit.KindSkipped]) + len(t[junit.KindMissing])
	}
	switch {
	case failed > 0:
		return schema.ReasonWrongAnswer, sum, "junit"
	case missing > 0:
		return schema.ReasonTestsMissing, sum, "junit"
	}
	for _, r := range runs {
		if r.repErr != nil {
			return schema.ReasonTestsMissing, fmt.Sprintf("the %s report is unreadable: %v", r.label, r.repErr), "junit"
		}
		if r.result.Extra > 0 {
			return schema.ReasonTestsMissing, fmt.Sprintf("the %s report lists %d tests that were not asked for", r.label, r.result.Extra), "junit"
		}
	}
	for _, r := range runs {
		if r.res.Code != 0 {
			return schema.ReasonRuntimeError, fmt.Sprintf("pytest exited with code %d in the %s run although its report shows every test passed", r.res.Code, r.label), "exit_code"
		}
	}
	return "", sum, "junit"
}

// decideBaseline makes the baseline verdict: FAIL when the task is fit,
// QUARANTINED with the first applicable reason otherwise.
func (g *grader) decideBaseline(runs []*run) *schema.Verdict {
	var existing *run
	var hidden []*run
	for _, r := range runs {
		if r.suite == schema.SuiteExisting {
			existing = r
		} else {
			hidden = append(hidden, r)
		}
	}
	// Tests whose two hidden runs disagree carry the flaky flag.
	var flaky []string
	cases := []schema.Case{}
	if existing != nil {
		cases = append(cases, existing.cases()...)
	}
	for _, c := range hidden[0].cases() {
		id := c.ID
		k1, k2 := hidden[0].result.Outcomes[id].Kind, hidden[1].result.Outcomes[id].Kind
		if k1 != k2 {
			flaky = append(flaky, id)
			c.Flags = junit.AddFlags(c.Flags, schema.FlagFlaky)
			c.Reason = fmt.Sprintf("run 1: %s, run 2: %s", k1, k2)
			if c.Outcome == schema.OutcomePass {
				c.Outcome = schema.OutcomeFail
			}
		}
		cases = append(cases, c)
	}
	v := g.skeleton()
	v.SetCases(cases)
	code, reason := g.baselineReason(existing, hidden, flaky)
	if code == "" {
		v.Outcome, v.ReasonCode = schema.OutcomeFail, schema.ReasonWrongAnswer
		v.Reason = text("the task is fit: "+reason, 1000)
		g.event("decide", "baseline FAIL: the task is fit", "reason", reason)
		return v
	}
	v.Outcome, v.ReasonCode, v.Reason = schema.OutcomeQuarantined, code, text(reason, 1000)
	g.event("decide", "baseline QUARANTINED", "reason_code", code, "reason", reason)
	return v
}

func (g *grader) baselineReason(existing *run, hidden []*run, flaky []string) (code, reason string) {
	all := append([]*run{}, hidden...)
	if existing != nil {
		all = append([]*run{existing}, all...)
	}
	for _, r := range all {
		if c, why := g.limitReason(r); c != "" {
			return c, "at the base, " + why
		}
		if r.repErr != nil {
			return schema.ReasonTestsMissing, fmt.Sprintf("the %s report is unreadable: %v", r.label, r.repErr)
		}
	}
	if existing != nil {
		t := existing.tally()
		if bad := len(existing.ids) - len(t[junit.KindPass]); bad > 0 {
			var ids []string
			for _, k := range []junit.Kind{junit.KindFail, junit.KindXfail, junit.KindSkipped, junit.KindMissing} {
				ids = append(ids, t[k]...)
			}
			return schema.ReasonBaselineSuiteFail, fmt.Sprintf("%d existing tests do not pass at the base: %s", bad, someIDs(ids))
		}
		if existing.result.Extra > 0 || existing.res.Code != 0 {
			return schema.ReasonBaselineSuiteFail, fmt.Sprintf("the existing suite's run is not clean at the base (exit code %d, %d unexpected report entries)", existing.res.Code, existing.result.Extra)
		}
	}
	var missing []string
	for _, r := range hidden {
		for _, id := range r.ids {
			if o := r.result.Outcomes[id]; o.Kind == junit.KindMissing && !o.Blocked && !slices.Contains(missing, id) {
				missing = append(missing, id)
			}
		}
	}
	if len(missing) > 0 {
		return schema.ReasonTestsMissing, "hidden tests absent from the report at the base: " + someIDs(missing)
	}
	if len(flaky) > 0 {
		return schema.ReasonFlaky, "the two hidden runs at the base disagree on: " + someIDs(flaky)
	}
	var passed, wrong []string
	var why []string
	for _, id := range hidden[0].ids {
		o := hidden[0].result.Outcomes[id]
		switch {
		case o.Kind == junit.KindPass:
			passed = append(passed, id)
		case o.Kind != junit.KindFail || o.Collected ||
			slices.Contains(o.Flags, schema.FlagImportError) || slices.Contains(o.Flags, schema.FlagMissingFixture):
			wrong = append(wrong, id)
			why = append(why, id+" ("+o.Reason+")")
		}
	}
	if len(passed) > 0 {
		return schema.ReasonBaselinePassed, "hidden tests pass at the base: " + someIDs(passed)
	}
	if len(wrong) > 0 {
		return schema.ReasonWrongFailure, "hidden tests fail at the base for the wrong reason (an agent could flip them without doing the task): " + someIDs(why)
	}
	return "", summary(all) + "; both hidden runs agree"
}
