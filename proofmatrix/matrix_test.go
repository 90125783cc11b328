package proofmatrix

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// TestRegistryMatchesExpectation keeps the design (each probe's expected
// result and layer) and the committed matrix in step.
func TestRegistryMatchesExpectation(t *testing.T) {
	exp, err := DefaultExpected()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Expectation{}
	for _, x := range exp.Entries {
		rows[string(x.Tier)+"/"+x.ID] = x
	}
	seen := map[string]bool{}
	for _, p := range All() {
		for _, tier := range []Tier{Strict, Compat} {
			c := p.caseFor(tier)
			if c == nil {
				continue
			}
			key := string(tier) + "/" + p.ID
			seen[key] = true
			x, ok := rows[key]
			if !ok {
				t.Errorf("%s: no row in expected.json", key)
				continue
			}
			if x.Result != c.Expect || x.Layer != c.Layer {
				t.Errorf("%s: designed %s by %q, recorded %s by %q", key, c.Expect, c.Layer, x.Result, x.Layer)
			}
			if c.Expect == Succeeds && tier == Strict && p.Class != "V7" && p.Class != "V13" {
				t.Errorf("%s: the strict tier must block class %s", key, p.Class)
			}
		}
		if p.Control && (p.Strict == nil) {
			t.Errorf("control %s lacks a strict form", p.ID)
		}
	}
	for key := range rows {
		if !seen[key] {
			t.Errorf("expected.json row %s has no probe", key)
		}
	}
}

func TestCompare(t *testing.T) {
	exp := &Expected{Entries: []Expectation{
		{ID: "a", Tier: Strict, Result: Blocked, Layer: "fw-in: symlink"},
		{ID: "b", Tier: Strict, Result: Blocked, Layer: "judge: wrong_answer"},
		{ID: "c", Tier: Strict, Result: Pass, Layer: "none"},
		{ID: "d", Tier: Compat, Result: Succeeds, Layer: "none"},
		{ID: "e", Tier: Strict, Result: Blocked, Layer: "judge: wrong_answer"},
	}}
	rep := &Report{Entries: []Entry{
		{ID: "a", Tier: Strict, Got: Observation{Result: Succeeds, Layer: "none"}},
		{ID: "b", Tier: Strict, Got: Observation{Result: Blocked, Layer: "limits: timeout"}},
		{ID: "c", Tier: Strict, Control: true, Expect: Pass, Got: Observation{Result: Fail, Layer: "judge: wrong_answer"}},
		{ID: "d", Tier: Compat, Got: Observation{Result: Succeeds, Layer: "none"}},
		{ID: "e", Tier: Strict, Got: Observation{Result: Errored, Layer: "error"}},
		{ID: "f", Tier: Strict, Got: Observation{Result: Blocked, Layer: "x"}},
	}}
	regs := Compare(rep, exp)
	want := map[string]string{
		"a": "attack that was blocked now succeeds",
		"b": "stopping layer moved",
		"c": "control failed",
		"e": "could not grade",
		"f": "no expectation",
	}
	if len(regs) != len(want) {
		t.Fatalf("regressions %v", regs)
	}
	for _, g := range regs {
		if !strings.Contains(g.Reason, want[g.ID]) {
			t.Errorf("%s: %q, want %q", g.ID, g.Reason, want[g.ID])
		}
	}
	if rep.ControlsOK() {
		t.Error("a failed control went unnoticed")
	}
}

func TestReports(t *testing.T) {
	rep := &Report{Entries: []Entry{
		{ID: "control-honest", Title: "honest", Tier: Strict, Control: true, Expect: Pass, Got: Observation{Result: Pass, Layer: "none"}},
		{ID: "V2.1-x", Taxonomy: "V2.1", Class: "V2", Title: "always | equal", Tier: Strict, Expect: Blocked, Got: Observation{Result: Blocked, Layer: "judge: runtime_error"}},
		{ID: "V2.1-x", Taxonomy: "V2.1", Class: "V2", Title: "always | equal", Tier: Compat, Expect: Succeeds, Got: Observation{Result: Succeeds, Layer: "none"}},
	}}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| `V2.1-x` | V2.1 | always \\| equal | blocked (`judge: runtime_error`) | **succeeds** (`none`) |") {
		t.Fatalf("markdown:\n%s", md.String())
	}
	var junit bytes.Buffer
	if err := rep.WriteJUnit(&junit, nil); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(junit.Bytes(), &doc); err != nil {
		t.Fatalf("junit is not XML: %v", err)
	}
	if len(doc.Suites) != 2 || doc.Suites[0].Failures != 0 || doc.Suites[1].Failures != 0 {
		t.Fatalf("junit suites %+v", doc.Suites)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil || !strings.HasPrefix(table.String(), "PROBE") {
		t.Fatalf("table: %v\n%s", err, table.String())
	}
}
