package judge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/schema"
)

// decidedBys lists every Case.DecidedBy the judge writes.
var decidedBys = append([]string{DecidedByOutput, DecidedByException, schema.DecidedByExitCode, schema.DecidedByLimit, schema.DecidedByFirewall}, kinds...)

// encoded returns the length of v as schema.Marshal encodes it.
func encoded(t *testing.T, v any) int {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Len() - 1 // the encoder's newline
}

// worstSkeleton is the largest skeleton the schema lets a controller
// write, every string at its longest and in its widest characters.
func worstSkeleton(kind schema.TaskKind, n int) schema.Verdict {
	wide := strings.Repeat("😀", 128) // 4 bytes each, never escaped
	img := "sha256:" + strings.Repeat("f", 64)
	v := schema.New(schema.Task{
		ID:     "t" + strings.Repeat("@", 255),
		Digest: strings.Repeat("a", 64),
		Kind:   kind,
		URI:    "https://example.invalid/" + strings.Repeat("a", 2048-len("https://example.invalid/")),
	}, schema.TierStrict)
	v.RunID = "r" + strings.Repeat("_", 127)
	v.Disclosure = schema.DisclosureDetailed
	v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: strings.Repeat("b", 64), Size: 1 << 40}
	v.Images = schema.Images{Agent: img, Candidate: img, Judge: img, Oracle: img}
	const ms = maxMillis
	v.Timings = schema.Timings{TotalMS: ms, SetupMS: ms, AgentMS: ms, FirewallMS: ms, CandidateMS: ms, JudgeMS: ms, OracleMS: ms, TeardownMS: ms}
	v.Controller = schema.Controller{Version: wide, Runtime: "d" + strings.Repeat("/", 63)}
	v.Nonce = strings.Repeat("N", 128)
	order := make([]int, n)
	for i := range order {
		order[i] = n - 1 - i
	}
	v.CaseOrder = order
	return *v
}

// TestVerdictBudget checks the arithmetic of budget.go against the
// encoder: each term bounds what it claims to.
func TestVerdictBudget(t *testing.T) {
	for _, by := range decidedBys {
		rec := schema.Case{
			ID: strings.Repeat("x", maxIDLen), Outcome: schema.OutcomeFail, DecidedBy: by, Reason: "r",
			DurationMS: maxMillis, Exit: schema.ExitExited, ExitCode: schema.Code(255),
		}
		// The record, its comma, less the one reason byte.
		if n := encoded(t, rec) + 1 - 1; n > caseRecordBytes {
			t.Errorf("a case record decided by %s takes %d bytes besides its reason, more than caseRecordBytes (%d)", by, n, caseRecordBytes)
		}
	}
	if n := len(strconv.Itoa(MaxCases-1)) + 1; n > caseOrderBytes {
		t.Errorf("a case_order entry takes %d bytes, more than caseOrderBytes (%d)", n, caseOrderBytes)
	}
	v := worstSkeleton(schema.KindFunction, 0)
	v.CaseOrder = nil
	v.Outcome, v.ReasonCode = schema.OutcomeFail, strings.Repeat("z", 64)
	v.Reason = clampText(strings.Repeat(`"`, 2000), maxVerdictReasonBytes)
	if n := encoded(t, v); n > skeletonBytes {
		t.Errorf("the largest skeleton with the longest reason takes %d bytes, more than skeletonBytes (%d)", n, skeletonBytes)
	}
	if verdictBudget > schema.MaxSize-schema.MaxSize/5 {
		t.Errorf("verdictBudget %d leaves less than a fifth of schema.MaxSize", verdictBudget)
	}
}

// TestLargestTaskVerdict judges the largest task LoadCases accepts, with
// the longest ids, the largest skeleton and every case failing with a
// reason at its longest, and checks that the verdict validates within the
// budget under both policies.
func TestLargestTaskVerdict(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"cases":[`)
	for i := range MaxCases {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"%s","args":[[%d]],"expected":{"total":%d}}`, caseID(i), i, i)
	}
	b.WriteString(`]}`)
	cases, err := LoadCases([]byte(b.String()), schema.KindFunction)
	if err != nil {
		t.Fatalf("the largest legal task does not load: %v", err)
	}
	if _, err := LoadCases([]byte(strings.Replace(b.String(), `{"cases":[`, `{"cases":[{"id":"one-more","args":[],"expected":0},`, 1)), schema.KindFunction); err == nil {
		t.Fatal("LoadCases accepts more than MaxCases cases")
	}
	// Exception texts and values made to quote badly: quotes and
	// backslashes encode as two bytes, emoji as four, controls as escapes.
	nasty := strings.Repeat("\"\\😀\x1b\u202e", 200)
	records := []string{
		`{"ok":false,"error":` + jsonString(strings.Repeat("😀", 300)) + `}`,
		`{"ok":false,"error":` + jsonString(nasty) + `}`,
		`{"ok":true,"value":{"total":` + jsonString(nasty) + `}}`,
		`{"ok":true,"value":{` + jsonString(nasty) + `:1}}`,
		`{"ok":true,"value":` + strings.Repeat(`{"k":`, 200) + "1" + strings.Repeat("}", 200) + `}`,
		`{"ok":true,"value":1,` + jsonString(nasty) + `:1}`,
	}
	outs := make([]Output, MaxCases)
	for i := range outs {
		r := &RunResult{Exit: schema.ExitExited, ExitCode: 0, DurationMS: maxMillis}
		outs[i] = Output{Result: r, Files: map[string]*Blob{ValueFile: {Data: []byte(records[i%len(records)])}}}
	}
	for _, d := range []schema.Disclosure{schema.DisclosureDigest, schema.DisclosureDetailed} {
		t.Run(string(d), func(t *testing.T) {
			skel := worstSkeleton(schema.KindFunction, MaxCases)
			skel.Disclosure = d
			v, err := Judge(&Input{Meta: Meta{Verdict: skel, Kind: schema.KindFunction}, Cases: cases, Outputs: outs})
			if err != nil {
				t.Fatal(err)
			}
			longest := 0
			for _, c := range v.Cases {
				if c.Outcome != schema.OutcomeFail {
					t.Fatalf("case %s passed", c.ID)
				}
				longest = max(longest, encodedLen(c.Reason))
			}
			data, err := schema.Marshal(v)
			if err != nil {
				t.Fatalf("the largest verdict does not validate: %v", err)
			}
			t.Logf("%d cases, longest reason %d bytes: %d bytes (budget %d, limit %d)", len(v.Cases), longest, len(data), verdictBudget, schema.MaxSize)
			if len(data) > verdictBudget {
				t.Errorf("verdict of %d bytes exceeds the budget of %d", len(data), verdictBudget)
			}
			if d == schema.DisclosureDetailed && longest < maxCaseReasonBytes-8 {
				t.Errorf("the longest reason took %d bytes: the test does not reach the bound %d", longest, maxCaseReasonBytes)
			}
		})
	}
}

// caseID returns a distinct case id of the longest length.
func caseID(i int) string {
	s := strconv.Itoa(i)
	return strings.Repeat("c", maxIDLen-len(s)) + s
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
