package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/schema"
)

// TestPrintVerdictCaseCodes: grade's table shows each case's own reason
// code, a dash for a case without one.
func TestPrintVerdictCaseCodes(t *testing.T) {
	v := schema.New(schema.Task{ID: "t", Kind: schema.KindFunction}, schema.TierStrict)
	v.Outcome, v.ReasonCode, v.Reason = schema.OutcomeFail, schema.ReasonWrongAnswer, "1 of 2 cases failed"
	v.Cases = []schema.Case{
		{ID: "ok", Outcome: schema.OutcomePass, DecidedBy: "checker", Exit: schema.ExitExited},
		{ID: "bad", Outcome: schema.OutcomeFail, DecidedBy: "checker", ReasonCode: schema.ReasonWrongAnswer, Exit: schema.ExitExited, Reason: "the checker rejected the output"},
	}
	var b bytes.Buffer
	printVerdict(&b, v)
	lines := strings.Split(b.String(), "\n")
	for i, want := range []string{
		"CASE  OUTCOME  DECIDED BY  CODE          EXIT    MS  REASON",
		"ok    PASS     checker     -             exited  0",
		"bad   FAIL     checker     wrong_answer  exited  0   the checker rejected the output",
	} {
		if got := strings.TrimRight(lines[i+1], " "); got != want {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, got, want)
		}
	}
}
