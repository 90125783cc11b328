// Package batch grades many submissions, of either tier, into a run
// directory that a killed or interrupted run resumes and a verifier checks
// item by item (`strictgrade run`, `strictgrade verify --run`).
//
// ReadItems parses a JSONL items file (SWE-bench predictions for compat
// tasks, {"id","task","submission"} for strict ones); LoadTasks indexes
// task directories by spec id; Run grades the items through one
// controller.Controller and writes, for each, OUT/items/<SafeID>/ (the
// Sigstore bundle, the exact bytes graded, the verdict) atomically and
// the bundle last, one line of OUT/results.jsonl, and OUT/summary.json at
// the end. Running again with the same directory keeps every item whose
// bundle verifies (Resumable) and grades the rest. VerifyRun checks every
// item of a run directory against the submission bytes, tier, task digest
// and nonce it records. WriteReport (which Run calls last) renders a run
// directory as OUT/results.md and a self-contained OUT/report.html: pass
// rates per task, outcome and reason-code counts, the grader errors apart
// from the failures, the grade-time histogram, and each compat item's
// per-test results, all from the verdicts that verify.
//
// A strict item's submission is re-read from its path when graded: a
// resume does not notice a strict submission changed since its verdict
// (a compat item's patch is compared); give a changed submission a new
// item id.
package batch
