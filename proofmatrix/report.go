package proofmatrix

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// Expectation is one recorded row of expected.json.
type Expectation struct {
	ID     string `json:"id"`
	Tier   Tier   `json:"tier"`
	Result Result `json:"result"`
	Layer  string `json:"layer"`
}

// Expected is the committed expectation of the whole matrix.
type Expected struct {
	Comment string        `json:"comment"`
	Entries []Expectation `json:"entries"`
	// Runtimes records, per backend and runtime other than the one the
	// entries were recorded on (DefaultRuntime), the rows whose deciding
	// layer differs there, each with the reason. A row may change the
	// layer within its class ("limits: timeout" to "limits:
	// memory_limit"), never the result; it changes the class only by
	// naming, in ClassFrom, the class it leaves.
	Runtimes map[string][]RuntimeExpectation `json:"runtimes,omitempty"`
}

// DefaultRuntime is the runtime Expected.Entries are recorded on.
const DefaultRuntime = "docker/runc"

// RuntimeExpectation is a row of Expected.Runtimes.
type RuntimeExpectation struct {
	Expectation
	Why string `json:"why"`
	// ClassFrom, when set, is the layer class of the entry this row
	// replaces, which the row leaves for another: a deliberate change,
	// stated where a reviewer reads it, and one that stops matching (and
	// is refused) as soon as the entry itself moves. Only a blocked
	// attack may change class, never a control.
	ClassFrom string `json:"class_from,omitempty"`
}

// LayerClass is the part of a deciding layer before its colon: "limits",
// "judge", "oracle", "fw-in" and so on.
func LayerClass(layer string) string {
	class, _, _ := strings.Cut(layer, ":")
	return class
}

// For returns the expectation of runtime: the entries with that runtime's
// rows in place. Each such row must name an entry and keep its result
// and layer class.
func (e *Expected) For(runtime string) (*Expected, error) {
	rows := e.Runtimes[runtime]
	if runtime == DefaultRuntime || len(rows) == 0 {
		if runtime == DefaultRuntime && len(rows) > 0 {
			return nil, fmt.Errorf("proofmatrix: %s is the runtime the entries are recorded on, and has its own rows", runtime)
		}
		return e, nil
	}
	out := &Expected{Comment: e.Comment, Entries: slices.Clone(e.Entries)}
	index := map[string]int{}
	for i, x := range out.Entries {
		index[string(x.Tier)+"/"+x.ID] = i
	}
	for _, r := range rows {
		i, ok := index[string(r.Tier)+"/"+r.ID]
		switch {
		case !ok:
			return nil, fmt.Errorf("proofmatrix: %s row %s [%s] names no entry", runtime, r.ID, r.Tier)
		case strings.TrimSpace(r.Why) == "":
			return nil, fmt.Errorf("proofmatrix: %s row %s [%s] gives no reason", runtime, r.ID, r.Tier)
		case r.Result != out.Entries[i].Result:
			return nil, fmt.Errorf("proofmatrix: %s row %s [%s] changes the result (%s by %q, recorded %s by %q)",
				runtime, r.ID, r.Tier, r.Result, r.Layer, out.Entries[i].Result, out.Entries[i].Layer)
		case r.ClassFrom == "" && LayerClass(r.Layer) != LayerClass(out.Entries[i].Layer):
			return nil, fmt.Errorf("proofmatrix: %s row %s [%s] changes the layer class (%q, recorded %q) without saying so in class_from",
				runtime, r.ID, r.Tier, r.Layer, out.Entries[i].Layer)
		case r.ClassFrom != "" && (r.ClassFrom != LayerClass(out.Entries[i].Layer) || LayerClass(r.Layer) == r.ClassFrom):
			return nil, fmt.Errorf("proofmatrix: %s row %s [%s] says it leaves class %q, but the entry is decided by %q and the row by %q",
				runtime, r.ID, r.Tier, r.ClassFrom, out.Entries[i].Layer, r.Layer)
		case r.ClassFrom != "" && (r.Result != Blocked || strings.HasPrefix(r.ID, "control-")):
			return nil, fmt.Errorf("proofmatrix: %s row %s [%s] changes the layer class of a %s run: only a blocked attack may", runtime, r.ID, r.Tier, r.Result)
		}
		out.Entries[i] = r.Expectation
	}
	return out, nil
}

// LoadExpected reads an expectation file.
func LoadExpected(path string) (*Expected, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var e Expected
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("proofmatrix: %s: %w", path, err)
	}
	return &e, nil
}

// Expectation turns a report into the expectation it would record. Rows of
// old that the report did not run are kept.
func (r *Report) Expectation(old *Expected) *Expected {
	out := &Expected{Comment: "The committed proof matrix: strictgrade matrix compares every run with it. Rewrite only with --update, deliberately."}
	ran := map[string]bool{}
	for _, e := range r.Entries {
		ran[string(e.Tier)+"/"+e.ID] = true
		out.Entries = append(out.Entries, Expectation{ID: e.ID, Tier: e.Tier, Result: e.Got.Result, Layer: e.Got.Layer})
	}
	exists := map[string]bool{}
	for _, p := range All() {
		for _, t := range []Tier{Strict, Compat} {
			if p.Applies(t) {
				exists[string(t)+"/"+p.ID] = true
			}
		}
	}
	if old != nil {
		out.Runtimes = old.Runtimes
		for _, x := range old.Entries {
			key := string(x.Tier) + "/" + x.ID
			if !ran[key] && exists[key] {
				out.Entries = append(out.Entries, x)
			}
		}
	}
	slices.SortFunc(out.Entries, func(a, b Expectation) int {
		if a.Tier != b.Tier {
			return strings.Compare(string(a.Tier), string(b.Tier))
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Write writes the expectation as indented JSON.
func (e *Expected) Write(path string) error {
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Regression is a difference from the expectation that fails the gate.
type Regression struct {
	ID     string `json:"id"`
	Tier   Tier   `json:"tier"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	Reason string `json:"reason"`
}

func (g Regression) String() string {
	return fmt.Sprintf("%s [%s]: %s (want %s, got %s)", g.ID, g.Tier, g.Reason, g.Want, g.Got)
}

// Compare returns every regression of r against exp: an attack that was
// blocked and now succeeds, a control or probe with another result, a
// stopping layer that moved, an error, or a probe without expectation.
func Compare(r *Report, exp *Expected) []Regression {
	want := map[string]Expectation{}
	for _, x := range exp.Entries {
		want[string(x.Tier)+"/"+x.ID] = x
	}
	var out []Regression
	for _, e := range r.Entries {
		got := fmt.Sprintf("%s by %q", e.Got.Result, e.Got.Layer)
		x, ok := want[string(e.Tier)+"/"+e.ID]
		switch {
		case !ok:
			out = append(out, Regression{e.ID, e.Tier, "an expectation", got, "no expectation recorded (run with --update after review)"})
		case e.Got.Result == Errored:
			out = append(out, Regression{e.ID, e.Tier, string(x.Result), got, "the grader could not grade: " + e.Error})
		case x.Result != e.Got.Result && e.Control:
			out = append(out, Regression{e.ID, e.Tier, string(x.Result), got, "control failed: the run is invalid"})
		case x.Result == Blocked && e.Got.Result == Succeeds:
			out = append(out, Regression{e.ID, e.Tier, string(x.Result), got, "attack that was blocked now succeeds"})
		case x.Result != e.Got.Result:
			out = append(out, Regression{e.ID, e.Tier, string(x.Result), got, "result changed"})
		case x.Layer != e.Got.Layer:
			out = append(out, Regression{e.ID, e.Tier, fmt.Sprintf("%s by %q", x.Result, x.Layer), got, "stopping layer moved"})
		}
	}
	return out
}

// ControlsOK reports whether every control got its designed result.
func (r *Report) ControlsOK() bool {
	for _, e := range r.Entries {
		if e.Control && e.Got.Result != e.Expect {
			return false
		}
	}
	return true
}

// WriteTable prints the matrix as a text table.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tTAXONOMY\tTIER\tRESULT\tLAYER\tSECONDS")
	for _, e := range r.sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\n", e.ID, e.Taxonomy, e.Tier, e.Got.Result, e.Got.Layer, float64(e.Millis)/1000)
	}
	return tw.Flush()
}

func (r *Report) sorted() []Entry {
	out := slices.Clone(r.Entries)
	slices.SortStableFunc(out, func(a, b Entry) int {
		if a.Control != b.Control {
			if a.Control {
				return -1
			}
			return 1
		}
		if c := compareIDs(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(string(a.Tier), string(b.Tier))
	})
	return out
}

// WriteJSON writes the report as JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown writes one row per probe with a column per tier.
func (r *Report) WriteMarkdown(w io.Writer) error {
	type row struct {
		e     Entry
		tiers map[Tier]Entry
	}
	var rows []*row
	index := map[string]*row{}
	for _, e := range r.sorted() {
		rw, ok := index[e.ID]
		if !ok {
			rw = &row{e: e, tiers: map[Tier]Entry{}}
			index[e.ID] = rw
			rows = append(rows, rw)
		}
		rw.tiers[e.Tier] = e
	}
	cell := func(rw *row, t Tier) string {
		e, ok := rw.tiers[t]
		if !ok {
			return "—"
		}
		mark := map[Result]string{Blocked: "blocked", Succeeds: "**succeeds**", Pass: "pass", Fail: "fail", Errored: "**error**"}[e.Got.Result]
		return fmt.Sprintf("%s (`%s`)", mark, e.Got.Layer)
	}
	fmt.Fprintln(w, "| probe | taxonomy | attack | strict tier | compat tier |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, rw := range rows {
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |\n", rw.e.ID, rw.e.Taxonomy, strings.ReplaceAll(rw.e.Title, "|", "\\|"), cell(rw, Strict), cell(rw, Compat))
	}
	return nil
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML: one suite per tier, a failure
// for every regression against exp (when exp is nil, for every attack that
// succeeded unexpectedly and every failed control).
func (r *Report) WriteJUnit(w io.Writer, exp *Expected) error {
	regs := map[string]Regression{}
	if exp != nil {
		for _, g := range Compare(r, exp) {
			regs[string(g.Tier)+"/"+g.ID] = g
		}
	}
	var doc junitSuites
	for _, t := range []Tier{Strict, Compat} {
		s := junitSuite{Name: "strictgrade proof matrix (" + string(t) + ")"}
		for _, e := range r.sorted() {
			if e.Tier != t {
				continue
			}
			c := junitCase{Name: e.ID + " " + e.Title, Classname: "proofmatrix." + string(t) + "." + e.Class,
				Time: fmt.Sprintf("%.3f", float64(e.Millis)/1000), SystemOut: fmt.Sprintf("%s by %s: %s", e.Got.Result, e.Got.Layer, e.Got.Reason)}
			if g, bad := regs[string(t)+"/"+e.ID]; bad {
				c.Failure = &junitFailure{Message: g.Reason, Text: g.String()}
			} else if exp == nil && (e.Got.Result == Errored || (e.Control && e.Got.Result != e.Expect) || (e.Expect == Blocked && e.Got.Result == Succeeds)) {
				c.Failure = &junitFailure{Message: "unexpected result", Text: fmt.Sprintf("want %s, got %s by %s", e.Expect, e.Got.Result, e.Got.Layer)}
			}
			if c.Failure != nil {
				s.Failures++
			}
			s.Tests++
			s.Cases = append(s.Cases, c)
		}
		if s.Tests > 0 {
			doc.Suites = append(doc.Suites, s)
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// LoadReport reads a report WriteJSON wrote.
func LoadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("proofmatrix: %s: %w", path, err)
	}
	if r.Runtime == "" {
		return nil, fmt.Errorf("proofmatrix: %s: the report names no runtime", path)
	}
	return &r, nil
}

// WriteRuntimesMarkdown writes one Markdown table of several reports, one
// row per probe and tier and one column per report's runtime, so that runs
// of the same matrix on different backends can be read side by side. A
// cell whose result or deciding layer differs from the first report's is
// marked "differs"; a probe a report did not run is "—".
func WriteRuntimesMarkdown(w io.Writer, reps []*Report) error {
	if len(reps) == 0 {
		return fmt.Errorf("proofmatrix: no reports to tabulate")
	}
	type key struct {
		id   string
		tier Tier
	}
	var order []Entry
	seen := map[key]bool{}
	got := make([]map[key]Entry, len(reps))
	for i, r := range reps {
		got[i] = map[key]Entry{}
		for _, e := range r.sorted() {
			k := key{e.ID, e.Tier}
			got[i][k] = e
			if !seen[k] {
				seen[k] = true
				order = append(order, e)
			}
		}
	}
	head, rule := "| probe | tier |", "|---|---|"
	for _, r := range reps {
		head += " " + r.Runtime + " |"
		rule += "---|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	for _, e := range order {
		k := key{e.ID, e.Tier}
		line := fmt.Sprintf("| `%s` | %s |", e.ID, e.Tier)
		first, firstOK := got[0][k]
		for i := range reps {
			g, ok := got[i][k]
			switch {
			case !ok:
				line += " — |"
			case i > 0 && (!firstOK || g.Got.Result != first.Got.Result || g.Got.Layer != first.Got.Layer):
				line += fmt.Sprintf(" **differs**: %s (`%s`) |", g.Got.Result, g.Got.Layer)
			default:
				line += fmt.Sprintf(" %s (`%s`) |", g.Got.Result, g.Got.Layer)
			}
		}
		fmt.Fprintln(w, line)
	}
	return nil
}
