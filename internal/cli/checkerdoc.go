package cli

import (
	"fmt"
	"strings"

	"github.com/strictgrade/strictgrade/judge"
)

// checkerGenerate is the go:generate line that builds a checker written in
// Go: go generate runs its words as a command, so the environment must be
// set with env (a line starting GOOS=... names no program and fails).
// examples/toposort/checker/main.go carries the same line, and
// TestCheckerBuildLine runs it as the docs print it.
const checkerGenerate = `//go:generate env GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= go build -trimpath -buildvcs=false "-ldflags=-s -w -buildid=" -o ../task/hidden/checker.wasm .`

// checkerFuel holds what the docs say of the checker's fuel budget, the
// deterministic limit that decides how much work one checker run may do,
// from the judge's own constants.
var checkerFuel = struct{ option, def, max, total, code string }{
	option: "fuel",
	def:    fmt.Sprint(judge.DefaultCheckerFuel),
	max:    fmt.Sprint(judge.MaxCheckerFuel),
	total:  fmt.Sprint(judge.CheckerTotalFuel),
	code:   judge.ReasonCheckerFuel,
}

// checkerProtocol is the checker comparator's reference, from the code
// (the judge's limits and its CheckerInput and CheckerAnswer documents),
// with headings at level h. task new writes it into a scaffold's README,
// and docs/checkers.md is made of it (TestDocsCheckers).
func checkerProtocol(h string) string {
	r := strings.NewReplacer(
		"{h}", h,
		"{pages}", fmt.Sprint(judge.DefaultCheckerMemoryPages),
		"{mib}", fmt.Sprint(judge.DefaultCheckerMemoryPages/16),
		"{maxpages}", fmt.Sprint(judge.MaxCheckerMemoryPages),
		"{maxmib}", fmt.Sprint(judge.MaxCheckerMemoryPages/16),
		"{timeout}", fmt.Sprint(judge.DefaultCheckerTimeoutMS),
		"{maxtimeout}", fmt.Sprint(judge.MaxCheckerTimeoutMS),
		"{total}", fmt.Sprintf("%.0f", judge.CheckerTotalTime.Seconds()),
		"{answer}", fmt.Sprint(judge.DefaultCheckerOutputBytes),
		"{maxanswer}", fmt.Sprint(judge.MaxCheckerOutputBytes),
		"{reads}", fmt.Sprint(judge.DefaultCheckerMemoryPages*65536/16),
		"{fuel}", checkerFuel.option,
		"{fueldef}", checkerFuel.def,
		"{fuelmax}", checkerFuel.max,
		"{fueltotal}", checkerFuel.total,
		"{fuelcode}", checkerFuel.code,
		"{generate}", checkerGenerate,
		"{accept}", judge.CheckerAccept,
		"{reject}", judge.CheckerReject,
	)
	return r.Replace(checkerProtocolText)
}

const checkerProtocolText = `When a case has many right answers (any topological order, any shortest path, any valid schedule), a
task can decide it with its own **checker**: a WebAssembly module (WASI preview 1) among its hidden files. The
judge runs it with the pure-Go runtime wazero, once per case it decides, and the checker answers accept or
reject. Function and command tasks can use one (not data tasks), for the whole task or for one case:

` + "```json" + `
{"compare": {"kind": "checker", "module": "checker.wasm"}}
` + "```" + `

` + "`module`" + ` is the module's path under ` + "`hidden/`" + `. A function case a checker decides may omit ` + "`expected`" + `;
a command case needs ` + "`expected_stdout`" + ` or ` + "`expected_exit`" + ` as any command case does.

{h} The protocol

The judge instantiates the module afresh for every case, with no file system, no network, no environment, the
single argument ` + "`checker`" + `, and a deterministic clock and random source (a fake clock that advances 1 ms per
reading; sleeping returns at once; a fixed random stream): the same input always gets the same answer.

**Standard input** is one JSON document:

` + "```json" + `
{"id": "diamond", "kind": "function", "input": [4, [[0,1],[0,2],[1,3],[2,3]]], "expected": [0,1,2,3], "output": "WzAsMiwxLDNd"}
` + "```" + `

- ` + "`id`" + `: the case id; ` + "`kind`" + `: ` + "`function`" + ` or ` + "`command`" + `.
- ` + "`input`" + `: the case's ` + "`args`" + ` (function), or ` + "`{\"argv\": [...], \"stdin\": \"...\"}`" + ` (command).
- ` + "`expected`" + `: the case's ` + "`expected`" + ` value (function) or its ` + "`expected_stdout`" + ` as a JSON string
  (command); **absent** when the case has none.
- ` + "`output`" + `: base64 (standard, padded) of the candidate's bytes: the JSON text of the value the function
  returned, or the command's standard output byte for byte.

**Standard output** is one JSON document, white space around it allowed, nothing else, and the module exits 0:

` + "```json" + `
{"verdict": "{accept}"}
{"verdict": "{reject}", "message": "edge 0->1 points backwards"}
` + "```" + `

(one of the two). The message is optional, UTF-8, and kept to its first 4096 bytes.

{h} Limits

Each is a field of ` + "`compare`" + ` next to ` + "`module`" + `; an omitted one takes its default.

- ` + "`{fuel}`" + `: how much work one run may do, in units the judge meters into the module before compiling it (a
  charge for each straight run of instructions it executes, bulk memory operations by their length), default
  {fueldef}, at most {fuelmax}; all checker runs of a grade share {fueltotal}. The count does not depend
  on the machine or its load: the same module on the same input always uses the same fuel.
- ` + "`memory_pages`" + `: the module's memory in 64 KiB pages, default {pages} ({mib} MiB), at most {maxpages} ({maxmib} MiB).
- ` + "`output_bytes`" + `: the most the checker may write as its answer, default {answer}, at most {maxanswer}.
- ` + "`timeout_ms`" + `: a wall-clock backstop per run, default {timeout} ms, at most {maxtimeout}; all checker runs of a
  grade share {total} s. It catches a grader that cannot go on, not a slow checker: fuel decides that. A task
  that raises ` + "`{fuel}`" + ` should raise ` + "`timeout_ms`" + ` with it.

A candidate output larger than a sixteenth of the checker's memory ({reads} bytes at the default) is not
given to the checker: the case FAILs with reason code ` + "`output_limit`" + `, as do the candidate's other failures
(timeouts, crashes, a malformed result record), before any checker runs.

{h} Who is to blame: FAIL or ERROR

| the checker | the case | the grade |
|---|---|---|
| answers ` + "`{accept}`" + ` | PASS (decided by ` + "`checker`" + `) | as the other cases decide |
| answers ` + "`{reject}`" + ` | FAIL, reason code ` + "`wrong_answer`" + ` | FAIL |
| runs out of fuel (its own, or what is left of the grade's) | FAIL, reason code ` + "`{fuelcode}`" + `: the candidate's output made it work that much | FAIL |
| traps, panics, exits non-zero, runs out of memory, writes more than ` + "`output_bytes`" + `, answers nothing or something else, reaches the wall-clock backstop, or does not compile | not decided | **ERROR**, reason code ` + "`checker_failed`" + ` |

An ERROR is a defect of the task (or of the grader), never the candidate's FAIL and never a PASS: the judge
exits 4 with one line naming the module, its sha256 and the case. The module's sha256 is in the ERROR reason;
for a PASS or FAIL the module is bound to the verdict through the task digest, which covers every hidden file.
Exit non-zero only when the case itself is malformed (` + "`examples/toposort`" + `'s checker checks the expected
order too).

{h} The candidate controls what the checker reads

` + "`output`" + ` is whatever the candidate produced: any bytes, of any length up to the task's ` + "`output_bytes`" + `
(and the sixteenth of the checker's memory above), chosen to hurt the checker if it can: invalid UTF-8, JSON
nested thousands deep, numbers with a thousand digits, a list of a million elements, the expected value with
garbage after it. So a checker must:

- **parse defensively**: treat every output it cannot read as a ` + "`{reject}`" + `, never as a reason to trap, panic or
  exit non-zero (that would be an ERROR the candidate chose, on every grade);
- **bound its work by what it can afford**: prefer a linear pass, check sizes before nested loops (a list longer
  than the expected one can be rejected at once), and keep within the fuel for the largest output the task
  allows: ` + "`task check`" + ` feeds it outputs of that size, and a checker that runs out of fuel on a right
  answer fails honest candidates. Reading its input is most of a checker's cost: a Go checker that decodes the
  whole document with ` + "`encoding/json`" + ` spends one to three thousand units per byte of output, so at the
  default fuel it can afford about a megabyte at most. Set the task's ` + "`limits.output_bytes`" + ` to what a right
  answer can need (a sorted list of a few hundred numbers needs kilobytes, not the default MiB), or make the
  checker stop reading once an output is longer than any right answer;
- **not trust the input it echoes**: a message that quotes the output is the candidate's text (it is kept to
  4096 bytes and escaped in a verdict, but say only what a task author needs).

{h} What a verdict says of a reject

Under the default disclosure policy, ` + "`digest`" + `, a rejected case's reason says only that the checker rejected
the output (and, as for every comparator, the length and a sha256 prefix of the candidate's own output): no
part, length or digest of the message. Under ` + "`detailed`" + ` the message is quoted, escaped and cut to 240 bytes. The message is **task text**: whatever the checker puts in it (the expected value, a hidden edge,
the right length) reaches whoever reads a detailed verdict, the agent included when the harness shows it. Keep
expected data out of messages, or keep detailed verdicts away from the agent.

{h} Writing a checker in Go

A checker in Go is a ` + "`main`" + ` package that reads standard input and writes the answer, built with this line in
its source (the paths assume the checker sits next to the task directory, as in ` + "`examples/toposort`" + `):

` + "```go" + `
{generate}
` + "```" + `

` + "`go generate`" + ` runs the words of the line as a command, so ` + "`env`" + ` sets the target (a line starting
` + "`GOOS=wasip1`" + ` fails: there is no such program); ` + "`-trimpath`" + `, no VCS stamp and no build id make a rebuild with
the same Go release give the same bytes. Then ` + "`go generate ./path/to/checker`" + ` and ` + "`strictgrade task check DIR`" + `.
Any language that targets WASI preview 1 works the same way.
`
