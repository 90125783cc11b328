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
// the end. WriteReport (which Run calls last) renders a run directory as
// OUT/results.md and a self-contained OUT/report.html: pass rates per
// task, outcome and reason-code counts, the grader errors apart from the
// failures, the grade-time histogram, and each compat item's per-test
// results, all from the verdicts that verify.
//
// # Binding a verdict to its item
//
// Anyone who can write to a run directory can copy, swap or edit what is
// in it, so a resume and a verifier believe only what the signature
// covers. SafeID, an item's directory name, is an injective function of
// the id (its readable characters and 128 bits of its sha256), so no item
// can name another's directory. OUT/run.json holds a random run id, and
// each grade's nonce (ItemNonce) is derived from the run id and the item
// id with fresh randomness after it: the signed verdict names its item
// (NamesItem), and no verdict of another item, or of another run signed
// with the same key, passes for it.
//
// Running again with the same directory keeps an item (Resumable) only
// when the bundle in its own directory verifies and its signed verdict is
// about the item's submission as it is now (controller.Admit: a strict
// item's workspace or tar file is admitted again, so one changed since its
// verdict is graded again, as a compat item whose patch changed is), the
// item's task (id, digest, tier) and the item itself; it grades the rest.
// VerifyRun checks each line of results.jsonl the same way, comparing the
// record with the signed verdict and never the other way round, and fails
// two records that name one bundle or one signed verdict.
//
// A run directory made before this binding (no run.json) is refused by
// Run and VerifyRun with ErrOldRun: its verdicts do not name their items,
// so none of them could be kept or verified item by item. Grade into a new
// directory; an older strictgrade verifies the old one as before, without
// the item binding.
package batch
