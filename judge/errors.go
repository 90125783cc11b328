package judge

import "errors"

// Sentinel errors. Every error the package returns wraps one of them, so a
// caller can tell a broken task from a broken judge input with errors.Is.
// None of them is ever caused by candidate bytes, those make a case FAIL,
// with one exception: a checker (ErrChecker) that fails on what a
// candidate wrote instead of rejecting it is still the task's defect.
var (
	// ErrComparator: a Comparator is not valid (Comparator.Validate).
	ErrComparator = errors.New("judge: invalid comparator")
	// ErrCases: hidden/cases.json is not a valid set of cases (LoadCases).
	ErrCases = errors.New("judge: invalid cases")
	// ErrExpected: an expected value cannot be used by its comparator (not
	// JSON, not CSV, not numbers, or NaN without allow_nan).
	ErrExpected = errors.New("judge: unusable expected value")
	// ErrInput: the judge's input is malformed or incomplete (meta.json,
	// result.json, a missing hidden file, too many outputs).
	ErrInput = errors.New("judge: invalid input")
	// ErrTooLarge: a trusted input file (meta.json, cases.json, an expected
	// file) exceeds the judge's limits.
	ErrTooLarge = errors.New("judge: input too large")
	// ErrChecker: a checker comparator's module failed: it is not a
	// usable module, or a run trapped, exited non-zero, ran past its
	// deadline, memory or output cap, or answered something that is not
	// an answer. A defect of the task: the grade is an ERROR.
	ErrChecker = errors.New("judge: checker failed")
)
