package schema

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Outcome is the result of a grade. The four values are distinct: only PASS
// is a success, and ERROR is never a statement about the graded work.
type Outcome string

// The outcomes of a verdict: ERROR and QUARANTINED are never counted as a pass or a fail.
const (
	// OutcomePass: the candidate was graded and every case passed.
	OutcomePass Outcome = "PASS"
	// OutcomeFail: the candidate was graded and did not pass (wrong answer,
	// runtime error, timeout, memory or output limit, rejected artifact,
	// diff that does not apply).
	OutcomeFail Outcome = "FAIL"
	// OutcomeError: the grader could not grade (daemon failure, judge crash,
	// schema-invalid judge output). Never counted as pass or fail.
	OutcomeError Outcome = "ERROR"
	// OutcomeQuarantined: the task itself is unfit (its baseline passes, its
	// existing suite fails, or it is flaky).
	OutcomeQuarantined Outcome = "QUARANTINED"
)

// ParseOutcome returns the Outcome spelled s, or an error wrapping
// ErrUnknownValue.
func ParseOutcome(s string) (Outcome, error) {
	switch o := Outcome(s); o {
	case OutcomePass, OutcomeFail, OutcomeError, OutcomeQuarantined:
		return o, nil
	}
	return "", fmt.Errorf("%w: outcome %q (want PASS, FAIL, ERROR or QUARANTINED)", ErrUnknownValue, s)
}

// Tier is the isolation tier a verdict was graded under.
type Tier string

// The tiers: strict (ADR 0001) and compat (ADR 0004).
const (
	// TierStrict: agent, candidate and judge in separate containers; outputs
	// are compared as data.
	TierStrict Tier = "strict"
	// TierCompat: repository tests that import the candidate, run in a fresh
	// oracle container.
	TierCompat Tier = "compat"
)

// ParseTier returns the Tier spelled s, or an error wrapping ErrUnknownValue.
func ParseTier(s string) (Tier, error) {
	switch t := Tier(s); t {
	case TierStrict, TierCompat:
		return t, nil
	}
	return "", fmt.Errorf("%w: tier %q (want strict or compat)", ErrUnknownValue, s)
}

// Verdict is the Go form of a verdict document. Field for field it matches
// the current schema (verdict-v4.json); a test keeps the two in step. A
// version-1 document decodes into it with Disclosure and CaseOrder unset.
//
// The judge supplies the outcome and the cases; the host controller adds
// what only it knows (run id, task, submission, images, timings, controller
// version, nonce) before the verdict is validated and signed.
type Verdict struct {
	// Schema is the $id of the schema the document follows: ID for every
	// verdict this build makes, IDv1 for older ones.
	Schema string `json:"schema"`
	// RunID identifies the grading run; it labels the run's containers.
	RunID string `json:"run_id"`
	Task  Task   `json:"task"`
	Tier  Tier   `json:"tier"`
	// Outcome is the result of the whole grade.
	Outcome Outcome `json:"outcome"`
	// ReasonCode is a machine-readable reason (see the Reason* constants).
	ReasonCode string `json:"reason_code,omitempty"`
	// Reason is a short human-readable explanation; empty for a plain PASS.
	Reason string `json:"reason"`
	// Cases holds one record per case or test, each id at most once. Use
	// SetCases to keep TestsHash in step.
	Cases []Case `json:"cases"`
	// CaseOrder, when set, is the order in which the candidate was
	// called: element k is the index in Cases of the k-th call, a
	// permutation of the case indices. The strict tier records it for
	// function tasks whose cases share one process.
	CaseOrder []int `json:"case_order,omitempty"`
	// Disclosure is the policy the reasons were written under. Required
	// in the strict tier; a compat-tier verdict without it makes no
	// promise about its reasons.
	Disclosure Disclosure `json:"disclosure,omitempty"`
	// TestsHash is TestsHash of the case ids.
	TestsHash  string     `json:"tests_hash"`
	Submission Submission `json:"submission"`
	Images     Images     `json:"images"`
	Timings    Timings    `json:"timings"`
	Controller Controller `json:"controller"`
	// Nonce is the host-issued value for this run (see NewNonce).
	Nonce string `json:"nonce"`
	// Compat is present exactly when Tier is TierCompat.
	Compat *Compat `json:"compat,omitempty"`
}

// Disclosure is a verdict disclosure policy: how much the reasons of a
// verdict may reveal. A verdict can reach the graded agent (as a reward
// signal, in a retry loop), so by default it must not become an oracle for
// the hidden cases. Under no policy does a reason quote an expected value.
type Disclosure string

// The disclosure policies.
const (
	// DisclosureDigest, the default: reasons name the check that decided
	// and where the candidate's output first differs, in positions of the
	// candidate's own output (byte, line, token, row and column numbers, a
	// JSON path of array indices and key ranks), and describe candidate
	// bytes only by their length and a short sha256 prefix (Summary). They
	// quote, name or measure no expected value (no keys, lengths, types or
	// counts) and quote no candidate text, which could echo a hidden
	// input. Positions are not silent: where the first difference lies
	// tells a candidate how much of its output (its keys, its array
	// lengths, its columns, the lines an unordered comparison accepted)
	// agreed, and a digest lets it confirm a guessed output, a few bytes of
	// knowledge per case and grade (TAXONOMY V5.7).
	DisclosureDigest Disclosure = "digest"
	// DisclosureDetailed is for human debugging: reasons may also quote
	// candidate text (escaped and truncated, see Excerpt) and state
	// expected lengths, types and counts. Never show such verdicts to the
	// graded agent.
	DisclosureDetailed Disclosure = "detailed"
)

// ParseDisclosure returns the Disclosure spelled s, or an error wrapping
// ErrUnknownValue.
func ParseDisclosure(s string) (Disclosure, error) {
	switch d := Disclosure(s); d {
	case DisclosureDigest, DisclosureDetailed:
		return d, nil
	}
	return "", fmt.Errorf("%w: disclosure %q (want digest or detailed)", ErrUnknownValue, s)
}

// Task identifies what was graded against.
type Task struct {
	ID string `json:"id"`
	// Digest is the sha256 (lowercase hex) of the task's canonical
	// definition: inputs, tests, limits.
	Digest string   `json:"digest"`
	Kind   TaskKind `json:"kind"`
	// URI optionally says where the task definition lives.
	URI string `json:"uri,omitempty"`
}

// TaskKind says how the candidate is exercised.
type TaskKind string

// The task kinds.
const (
	KindFunction   TaskKind = "function"   // a callable applied to JSON arguments
	KindCommand    TaskKind = "command"    // an executable run per case
	KindData       TaskKind = "data"       // input files in, output files out
	KindRepository TaskKind = "repository" // a repository diff graded by tests (compat)
)

// Case is the record of one case (strict tier) or one test (compat tier).
type Case struct {
	ID      string  `json:"id"`
	Outcome Outcome `json:"outcome"`
	// DecidedBy names the comparator or check that decided (see the
	// DecidedBy* constants).
	DecidedBy string `json:"decided_by"`
	// ReasonCode is the machine-readable reason of a case that did not
	// pass, from the same vocabulary as Verdict.ReasonCode (version 3;
	// empty for a PASS, and in verdicts of earlier versions).
	ReasonCode string `json:"reason_code,omitempty"`
	// Reason says why, e.g. the first difference. Candidate text must be
	// escaped and truncated first (see Excerpt).
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	// CPUMS is the CPU time the case used, where the backend measured it
	// (version 4).
	CPUMS *int64 `json:"cpu_ms,omitempty"`
	// Limit is the time limit a timeout met: LimitCPU or LimitWall
	// (version 4).
	Limit Limit `json:"limit,omitempty"`
	Exit  Exit  `json:"exit,omitempty"`
	// ExitCode is the process exit status when Exit is ExitExited. Because
	// zero is omitted, a nil pointer and 0 differ; use Code.
	ExitCode *int   `json:"exit_code,omitempty"`
	Suite    Suite  `json:"suite,omitempty"`
	Flags    []Flag `json:"flags,omitempty"`
}

// Limit names the time limit a timed-out case met.
type Limit string

// The time limits.
const (
	LimitCPU  Limit = "cpu"  // the CPU-time budget was spent
	LimitWall Limit = "wall" // the wall-clock backstop ran out first
)

// Millis returns a pointer to the milliseconds of d, for Case.CPUMS.
func Millis(d time.Duration) *int64 { ms := d.Milliseconds(); return &ms }

// Code returns a pointer to c, for Case.ExitCode.
func Code(c int) *int { return &c }

// Exit says how a candidate process ended.
type Exit string

// The exit reasons.
const (
	ExitExited      Exit = "exited"
	ExitSignaled    Exit = "signaled"
	ExitTimeout     Exit = "timeout"
	ExitOOM         Exit = "oom"
	ExitOutputLimit Exit = "output_limit"
	ExitNotRun      Exit = "not_run"
)

// Suite is the compat-tier test set a test belongs to.
type Suite string

// The compat suites.
const (
	SuiteHidden   Suite = "hidden"   // H: injected by the oracle
	SuiteExisting Suite = "existing" // S: the repository's own tests
)

// Flag marks something noteworthy about a compat-tier test.
type Flag string

// The test flags.
const (
	FlagFlaky          Flag = "flaky"           // two baseline runs disagreed
	FlagImportError    Flag = "import_error"    // failed for the wrong reason
	FlagMissingFixture Flag = "missing_fixture" // failed for the wrong reason
	FlagMissing        Flag = "missing"         // expected but absent from the report
	FlagSkipped        Flag = "skipped"
	FlagXfail          Flag = "xfail"
)

// Well-known values of Case.DecidedBy. Task checkers may use their own
// lower-case names.
const (
	DecidedByExact          = "exact"
	DecidedByLines          = "lines"
	DecidedByTokens         = "tokens"
	DecidedByNumbers        = "numbers"
	DecidedByJSON           = "json"
	DecidedByUnorderedLines = "unordered_lines"
	DecidedByCSV            = "csv"
	DecidedByChecker        = "checker"
	DecidedByJUnit          = "junit"
	DecidedByExitCode       = "exit_code"
	DecidedByLimit          = "limit"
	DecidedByFirewall       = "firewall"
)

// Well-known values of Verdict.ReasonCode.
const (
	ReasonWrongAnswer       = "wrong_answer"
	ReasonRuntimeError      = "runtime_error"
	ReasonTimeout           = "timeout"
	ReasonMemoryLimit       = "memory_limit"
	ReasonOutputLimit       = "output_limit"
	ReasonRejectedArtifact  = "rejected_artifact"
	ReasonDiffDoesNotApply  = "diff_does_not_apply"
	ReasonTestsMissing      = "tests_missing"
	ReasonBaselinePassed    = "baseline_passed"
	ReasonBaselineSuiteFail = "baseline_suite_failed"
	ReasonFlaky             = "flaky"
	ReasonWrongFailure      = "wrong_failure_reason"
	ReasonInfrastructure    = "infrastructure"
	// ReasonGraderOverloaded: a run reached its wall-clock backstop with
	// CPU time to spare while it waited for a CPU most of the time (see
	// sandbox.ErrOverloaded): the host decided, not the submission. The
	// grade is an ERROR that a batch run retries.
	ReasonGraderOverloaded = "grader_overloaded"
	ReasonJudgeCrashed     = "judge_crashed"
	ReasonInvalidVerdict   = "invalid_verdict"
	// ReasonCheckerFailed: the task's checker comparator failed (trapped,
	// exited non-zero, ran past a limit, or gave no usable answer), a
	// defect of the task: the grade is an ERROR.
	ReasonCheckerFailed = "checker_failed"
)

// Submission identifies the graded bytes.
type Submission struct {
	Kind SubmissionKind `json:"kind"`
	// SHA256 is the digest (lowercase hex) of the exact bytes graded: the
	// firewall's canonical archive, or the diff.
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// SubmissionKind says what the submission bytes are.
type SubmissionKind string

// The submission kinds.
const (
	SubmissionArchive SubmissionKind = "archive"
	SubmissionDiff    SubmissionKind = "diff"
)

// Images records the image ID ("sha256:<hex>", as the engine reports it)
// of every container the grade used, by role. Unused roles stay empty.
type Images struct {
	Agent     string `json:"agent,omitempty"`
	Candidate string `json:"candidate,omitempty"`
	Judge     string `json:"judge,omitempty"`
	Oracle    string `json:"oracle,omitempty"`
}

// Timings holds wall-clock milliseconds per phase. Only TotalMS is
// required; a zero phase is omitted.
type Timings struct {
	TotalMS     int64 `json:"total_ms"`
	SetupMS     int64 `json:"setup_ms,omitempty"`
	AgentMS     int64 `json:"agent_ms,omitempty"`
	FirewallMS  int64 `json:"firewall_ms,omitempty"`
	CandidateMS int64 `json:"candidate_ms,omitempty"`
	JudgeMS     int64 `json:"judge_ms,omitempty"`
	OracleMS    int64 `json:"oracle_ms,omitempty"`
	TeardownMS  int64 `json:"teardown_ms,omitempty"`
}

// Controller describes the host controller that produced the verdict.
type Controller struct {
	Version string `json:"version"`
	// Runtime is the container runtime, e.g. "docker/runc".
	Runtime string `json:"runtime,omitempty"`
}

// Compat holds what only the compat tier records.
type Compat struct {
	Mode CompatMode `json:"mode"`
	// BaselineOutcome is the outcome of the task's baseline run, if known.
	BaselineOutcome Outcome `json:"baseline_outcome,omitempty"`
	// Flipped is true when the baseline was FAIL and this verdict is PASS.
	Flipped bool `json:"flipped"`
	// AppliedDiffSHA256 is the digest of the filtered diff that was applied.
	AppliedDiffSHA256 string `json:"applied_diff_sha256,omitempty"`
	// DroppedHunks lists what the diff gate removed; never nil when
	// marshalled by Marshal.
	DroppedHunks []DroppedHunk `json:"dropped_hunks"`
}

// CompatMode is baseline (no diff) or final (the agent's diff applied).
type CompatMode string

// The compat modes.
const (
	ModeBaseline CompatMode = "baseline"
	ModeFinal    CompatMode = "final"
)

// DroppedHunk is a diff hunk the diff gate removed.
type DroppedHunk struct {
	Path string `json:"path"`
	// Rule names the gate rule that dropped it.
	Rule string `json:"rule"`
}

// New returns a verdict for the given task and tier with the schema id set,
// an empty case list, the tests hash of no tests and, for the strict tier,
// the default disclosure policy (DisclosureDigest) or, for the compat tier,
// a compat section in final mode with no dropped hunks. The caller fills in
// the rest, calls SetCases, and passes the verdict to Marshal or to the
// attest package, both of which validate it.
func New(task Task, tier Tier) *Verdict {
	v := &Verdict{Schema: ID, Task: task, Tier: tier}
	v.SetCases(nil)
	switch tier {
	case TierStrict:
		v.Disclosure = DisclosureDigest
	case TierCompat:
		v.Compat = &Compat{Mode: ModeFinal, DroppedHunks: []DroppedHunk{}}
	}
	return v
}

// SetCases stores a copy of cases and sets TestsHash from their ids.
func (v *Verdict) SetCases(cases []Case) {
	v.Cases = append(make([]Case, 0, len(cases)), cases...)
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = c.ID
	}
	v.TestsHash = TestsHash(ids)
}

// Counts returns how many cases had each outcome.
func (v *Verdict) Counts() map[Outcome]int {
	m := make(map[Outcome]int, 3)
	for _, c := range v.Cases {
		m[c.Outcome]++
	}
	return m
}

// TestsHash returns the lowercase-hex sha256 of the sorted identifiers, each
// followed by a newline byte: sha256("a\nb\n") for {"b", "a"}. The schema
// forbids control characters in case ids, so the encoding is unambiguous.
// The input slice is not modified.
func TestsHash(ids []string) string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	h := sha256.New()
	for _, id := range sorted {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// NewNonce returns a fresh host-issued nonce: 32 random bytes, base64url
// without padding (43 characters).
func NewNonce() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand, Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// nonceForm is the form the verdict schema gives a nonce.
var nonceForm = regexp.MustCompile(`^[A-Za-z0-9_-]{16,128}$`)

// ValidNonce reports whether s has the form the verdict schema requires of
// a nonce: 16 to 128 characters of A-Z, a-z, 0-9, '_' and '-'.
func ValidNonce(s string) bool { return nonceForm.MatchString(s) }

// summaryHexLen is how many hex digits of a sha256 Summary shows.
const summaryHexLen = 12

// Summary describes candidate bytes without quoting them, for a reason
// under DisclosureDigest: their length and the first 12 hex digits of
// their sha256, as in "42 bytes, sha256 0a1b2c3d4e5f". Whoever holds the
// bytes can match them against it. Like any digest it also confirms a
// guess at the bytes, which is why reasons summarise candidate bytes this
// way and never expected ones.
func Summary(b []byte) string {
	sum := sha256.Sum256(b)
	n := strconv.Itoa(len(b)) + " bytes"
	if len(b) == 1 {
		n = "1 byte"
	}
	return n + ", sha256 " + hex.EncodeToString(sum[:])[:summaryHexLen]
}

// Redact shortens a grader message that may go on to quote text a
// candidate chose (a file name in a firewall rejection) for a reason under
// DisclosureDigest: it keeps the longest leading part made only of ASCII
// letters, digits, spaces and / : . _ , ( ) = + - and, when it cut
// anything, marks the cut with " …". strictgrade's messages quote every
// name they take from an archive or a container (strconv.Quote), so what
// comes before the first quote is the grader's own words: the message
// firewall: symlink: entry "out/x" becomes firewall: symlink: entry …. It
// is no safer than that convention: a message that writes a chosen name
// unquoted keeps it.
func Redact(msg string) string {
	i := 0
	for i < len(msg) && redactKeeps(msg[i]) {
		i++
	}
	if i == len(msg) {
		return msg
	}
	kept := strings.TrimRight(msg[:i], " :,(=+-")
	if kept == "" {
		return "…"
	}
	return kept + " …"
}

func redactKeeps(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte(" /:._,()=+-", c) >= 0
}

// Excerpt quotes candidate text for a Reason: it escapes it as a Go string
// literal (control characters, invalid UTF-8, line separators and
// bidirectional overrides become escapes) and keeps at most max characters
// including the quotes, marking a cut with a trailing "…". The result always
// satisfies the schema's text rule. max below 4 is taken as 4.
func Excerpt(b []byte, max int) string {
	max = maxInt(max, 4)
	var out strings.Builder
	out.WriteByte('"')
	n := 1 // characters written so far
	for len(b) > 0 {
		_, size := utf8.DecodeRune(b)
		q := strconv.Quote(string(b[:size]))
		piece := q[1 : len(q)-1]
		w := utf8.RuneCountInString(piece)
		last := size == len(b)
		// The last piece needs room for the closing quote; any other piece
		// also for a possible cut marker `"…`.
		if (last && n+w+1 > max) || (!last && n+w+2 > max) {
			out.WriteString(`"…`)
			return out.String()
		}
		out.WriteString(piece)
		n += w
		b = b[size:]
	}
	out.WriteByte('"')
	return out.String()
}

// Clip cuts s to at most n bytes at a character boundary, so that a text
// the grader keeps whole is cut, never refused, when it runs long.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
