// Package judge holds the strict tier's judge: the deterministic comparators,
// the hidden-case format, and the logic of the judge program
// (judge/cmd/judge) that runs in its own container, a static binary on an
// empty root filesystem.
//
// The judge never executes, imports, loads or interprets candidate bytes as
// anything but data. It reads the candidate's outputs (stdout, output files,
// the function shim's JSON record) as byte strings, parses them with strict,
// bounded parsers, and compares them with the hidden expected values using a
// Comparator:
//
//   - exact: the bytes are identical.
//   - lines: line by line, after turning CRLF into LF, dropping trailing
//     white space on each line and trailing empty lines.
//   - tokens: the sequences of white-space-separated tokens are equal.
//   - numbers: the tokens are numbers, equal within abs_tol or rel_tol; NaN
//     equals nothing unless allow_nan is set.
//   - json: semantic JSON equality: object key order never matters,
//     numbers compare by value (1 equals 1.0) or within the tolerance,
//     arrays optionally as multisets (unordered_arrays). The first
//     difference is the first in index and key byte order.
//   - unordered_lines: the multisets of lines are equal.
//   - csv: rows and cells equal, numeric cells by value or within the
//     tolerance, an optional header row compared exactly.
//   - checker: the task's own WebAssembly module (hidden, WASI preview 1)
//     decides, for cases with many right answers. The judge runs it with
//     wazero, without file system, network or environment, with a
//     deterministic clock and random source and within a memory limit, a
//     fuel budget (the module is metered before it is compiled: a count
//     of the instructions it runs, the same on any machine at any load),
//     a wall-clock backstop and an output cap; the candidate's output is
//     data in its input (see CheckerInput). A run that uses up its fuel
//     fails the case (checker_out_of_fuel): the candidate's output decided
//     how much the checker computed. A checker that otherwise does not
//     answer accept or reject is the task's defect (ErrChecker): the grade
//     is an ERROR. A checker's message is task text that may quote hidden
//     data: a digest reason says only that the checker rejected.
//
// Every comparator is deterministic, bounded in time and memory, never
// panics, and explains a difference in a short Reason that points at the
// first difference. How much a reason says is the verdict's disclosure
// policy (schema.Disclosure), which the controller sets in meta.json and
// the verdict records. Under the default, digest, a reason names the check
// that decided and where the candidate's output first differs, in
// positions of that output only (byte offset, line, token, row and column,
// or a JSON path of array indices and key ranks such as $[2].#1), and
// describes the candidate's bytes by their length and a sha256 prefix
// (schema.Summary): it quotes no candidate text, which could echo a hidden
// input, and states nothing about the expected output, not even its
// length, type or keys. Under detailed, for human debugging, reasons also
// quote candidate text escaped and truncated (schema.Excerpt) and state
// expected lengths, types and counts. Under neither does a reason quote an
// expected value or an expected object key, with one exception: a
// detailed reason quotes a checker's reject message, which is the task's
// own text and may quote expected data. A verdict is bounded in size
// for every task LoadCases accepts (MaxCases), so that no candidate can
// make it too large to sign.
//
// Cases and LoadCases define a task's hidden cases (hidden/cases.json).
// ReadInput reads what the controller puts into the judge's read-only volume
// (see ReadInput for the layout), and Judge turns it into a
// schema.Verdict. A candidate that misbehaves in any way (wrong answer,
// crash, timeout, malformed or missing output) gets a FAIL; Judge returns an
// error only when the judge's own input is unusable, which is never the
// candidate's doing, or when a task's checker fails (ErrChecker), which is
// the task's.
package judge
