package proofmatrix

import (
	"fmt"
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

// TestReadmeRuntimesTable holds the README's table of runs side by side
// (between its runtimes markers) to the committed expectation: every
// column is a runtime, and every cell the result and layer Expected.For
// gives that runtime, so the table cannot claim what CI no longer gates.
func TestReadmeRuntimesTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- runtimes:begin -->")
	table, _, ok2 := strings.Cut(rest, "<!-- runtimes:end -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no runtimes table")
	}
	exp, err := LoadExpected("expected.json")
	if err != nil {
		t.Fatal(err)
	}
	cells := func(line string) []string {
		parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts
	}
	lines := strings.Split(strings.TrimSpace(table), "\n")
	head := cells(lines[0])
	if len(head) < 3 || head[0] != "probe" || head[1] != "tier" {
		t.Fatalf("table header %q", lines[0])
	}
	want := map[string]map[string]string{} // runtime → "id tier" → cell
	for _, rt := range head[2:] {
		e := exp
		if rt != DefaultRuntime {
			if e, err = exp.For(rt); err != nil {
				t.Fatalf("column %s: %v", rt, err)
			}
			if len(exp.Runtimes[rt]) == 0 {
				t.Errorf("column %s: the expectation has no rows for it", rt)
			}
		}
		want[rt] = map[string]string{}
		for _, en := range e.Entries {
			want[rt][en.ID+" "+string(en.Tier)] = fmt.Sprintf("%s (`%s`)", en.Result, en.Layer)
		}
	}
	seen := 0
	for _, line := range lines[2:] {
		c := cells(line)
		if len(c) != len(head) {
			t.Errorf("row %q: %d cells, want %d", line, len(c), len(head))
			continue
		}
		key := strings.Trim(c[0], "`") + " " + c[1]
		for i, rt := range head[2:] {
			got := strings.TrimPrefix(c[i+2], "**differs**: ")
			if w, ok := want[rt][key]; !ok || got != w {
				t.Errorf("%s on %s: the README says %q, the expectation %q", key, rt, got, w)
			}
		}
		seen++
	}
	if n := len(exp.Entries); seen != n {
		t.Errorf("the table has %d rows, the expectation %d entries", seen, n)
	}
}
