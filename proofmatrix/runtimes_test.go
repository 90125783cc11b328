package proofmatrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteRuntimesMarkdown(t *testing.T) {
	entry := func(id string, tier Tier, res Result, layer string) Entry {
		return Entry{ID: id, Tier: tier, Got: Observation{Result: res, Layer: layer}}
	}
	runc := &Report{Runtime: "docker/runc", Entries: []Entry{
		entry("V9.1-fork-bomb", Strict, Blocked, "limits: timeout"),
		entry("V9.2-memory-bomb", Strict, Blocked, "limits: memory_limit"),
		entry("V8.3-hardlink", Strict, Blocked, "fw-in: hardlink"),
	}}
	runsc := &Report{Runtime: "docker/runsc", Entries: []Entry{
		entry("V9.1-fork-bomb", Strict, Blocked, "limits: timeout"),
		entry("V9.2-memory-bomb", Strict, Blocked, "limits: timeout"),
	}}
	dir := t.TempDir()
	var reps []*Report
	for i, r := range []*Report{runc, runsc} {
		p := filepath.Join(dir, []string{"a.json", "b.json"}[i])
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.WriteJSON(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		back, err := LoadReport(p)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, back)
	}
	var b strings.Builder
	if err := WriteRuntimesMarkdown(&b, reps); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| probe | tier | docker/runc | docker/runsc |",
		"| `V9.1-fork-bomb` | strict | blocked (`limits: timeout`) | blocked (`limits: timeout`) |",
		"| `V9.2-memory-bomb` | strict | blocked (`limits: memory_limit`) | **differs**: blocked (`limits: timeout`) |",
		"| `V8.3-hardlink` | strict | blocked (`fw-in: hardlink`) | — |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if err := WriteRuntimesMarkdown(&b, nil); err == nil {
		t.Error("no reports: no error")
	}
	nameless := filepath.Join(dir, "c.json")
	if err := os.WriteFile(nameless, []byte(`{"entries":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadReport(nameless); err == nil {
		t.Error("a report without a runtime loaded")
	}
}

// TestRuntimeRows: every runtime's rows in the committed expectation name
// an entry, give a reason and keep the result and layer class.
func TestRuntimeRows(t *testing.T) {
	exp, err := DefaultExpected()
	if err != nil {
		t.Fatal(err)
	}
	if len(exp.Runtimes) == 0 {
		t.Fatal("no runtime rows: the gVisor differences are recorded there")
	}
	for rt := range exp.Runtimes {
		if _, err := exp.For(rt); err != nil {
			t.Errorf("%s: %v", rt, err)
		}
	}
	same, err := exp.For(DefaultRuntime)
	if err != nil || same != exp {
		t.Errorf("the default runtime's expectation: %v", err)
	}
}

func TestForRefuses(t *testing.T) {
	base := Expectation{ID: "V9.1-fork-bomb", Tier: Strict, Result: Blocked, Layer: "limits: timeout"}
	for name, row := range map[string]RuntimeExpectation{
		"unknown entry":            {Expectation{ID: "nope", Tier: Strict, Result: Blocked, Layer: "limits: timeout"}, "x", ""},
		"no reason":                {Expectation{ID: base.ID, Tier: Strict, Result: Blocked, Layer: "limits: memory_limit"}, " ", ""},
		"other class":              {Expectation{ID: base.ID, Tier: Strict, Result: Blocked, Layer: "judge: wrong_answer"}, "x", ""},
		"other result":             {Expectation{ID: base.ID, Tier: Strict, Result: Succeeds, Layer: "limits: timeout"}, "x", ""},
		"wrong class_from":         {Expectation{ID: base.ID, Tier: Strict, Result: Blocked, Layer: "judge: missing_output"}, "x", "judge"},
		"class_from, same class":   {Expectation{ID: base.ID, Tier: Strict, Result: Blocked, Layer: "limits: memory_limit"}, "x", "limits"},
		"class_from, other result": {Expectation{ID: base.ID, Tier: Strict, Result: Succeeds, Layer: "judge: wrong_answer"}, "x", "limits"},
	} {
		e := &Expected{Entries: []Expectation{base}, Runtimes: map[string][]RuntimeExpectation{"docker/runsc": {row}}}
		if _, err := e.For("docker/runsc"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := &Expected{Entries: []Expectation{base}, Runtimes: map[string][]RuntimeExpectation{"docker/runsc": {{Expectation{ID: base.ID, Tier: Strict, Result: Blocked, Layer: "limits: memory_limit"}, "why", ""}}}}
	got, err := ok.For("docker/runsc")
	if err != nil || got.Entries[0].Layer != "limits: memory_limit" || ok.Entries[0].Layer != "limits: timeout" {
		t.Errorf("override: %v %+v (base %+v)", err, got, ok.Entries[0])
	}
	if _, err := (&Expected{Runtimes: map[string][]RuntimeExpectation{DefaultRuntime: {{base, "x", ""}}}}).For(DefaultRuntime); err == nil {
		t.Error("rows for the default runtime accepted")
	}
	// A class change said in class_from is taken; a control's is not.
	moved := &Expected{Entries: []Expectation{base}, Runtimes: map[string][]RuntimeExpectation{"kubernetes/runc": {{Expectation{ID: base.ID, Tier: Strict, Result: Blocked, Layer: "judge: missing_output"}, "why", "limits"}}}}
	if got, err := moved.For("kubernetes/runc"); err != nil || got.Entries[0].Layer != "judge: missing_output" {
		t.Errorf("class change with class_from: %v %+v", err, got)
	}
	ctl := Expectation{ID: "control-wrong", Tier: Strict, Result: Fail, Layer: "judge: wrong_answer"}
	if _, err := (&Expected{Entries: []Expectation{ctl}, Runtimes: map[string][]RuntimeExpectation{"kubernetes/runc": {{Expectation{ID: ctl.ID, Tier: Strict, Result: Fail, Layer: "limits: timeout"}, "why", "judge"}}}}).For("kubernetes/runc"); err == nil {
		t.Error("a control's class change accepted")
	}
}
