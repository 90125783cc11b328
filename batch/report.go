package batch

import (
	"bytes"
	"cmp"
	"crypto"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/schema"
)

// The report files Run writes into a run directory (WriteReport).
const (
	ReportMarkdown = "results.md"
	ReportHTML     = "report.html"
)

// Report is what a run directory holds, read back and checked: every item
// of results.jsonl with its signed verdict where that verifies, and the
// run's summary. Its Markdown and HTML forms are self-contained: the HTML
// page loads nothing, runs no script (its Content-Security-Policy forbids
// any) and draws its charts as inline SVG. Every string that came from an
// item or a verdict (ids, messages, test names: what a candidate or an
// items file controls) is escaped; invalid UTF-8 is shown as U+FFFD.
type Report struct {
	// Summary is OUT/summary.json; nil when the run wrote none.
	Summary *Summary
	// KeyHint names the public key the verdicts were checked with.
	KeyHint string
	Items   []ReportItem
}

// ReportItem is one item of a report.
type ReportItem struct {
	Record Record
	// Verdict is the item's signed verdict when it verified; nil for an
	// ERROR without a verdict and for an item that did not verify.
	Verdict *schema.Verdict
	// VerifyError says why the item did not verify; empty when it did or
	// has no verdict to verify.
	VerifyError string
}

// LoadReport reads the run directory dir and verifies each item with pub
// (see VerifyRun); a nil pub is the run's own OUT/key.pub, which shows the
// files agree with each other, not who signed them.
func LoadReport(dir string, pub crypto.PublicKey) (*Report, error) {
	if pub == nil {
		var err error
		if pub, err = attest.LoadPublicKeyFile(filepath.Join(dir, KeyFile)); err != nil {
			return nil, fmt.Errorf("batch: report: %w", err)
		}
	}
	hint, err := attest.KeyHint(pub)
	if err != nil {
		return nil, fmt.Errorf("batch: report: %w", err)
	}
	checks, err := VerifyRun(dir, pub)
	if err != nil {
		return nil, fmt.Errorf("batch: report: %w", err)
	}
	r := &Report{KeyHint: hint}
	switch data, err := os.ReadFile(filepath.Join(dir, SummaryFile)); {
	case err == nil:
		var s Summary
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("batch: report: %s: %w", SummaryFile, err)
		}
		r.Summary = &s
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("batch: report: %w", err)
	}
	for _, c := range checks {
		it := ReportItem{Record: c.Record, Verdict: c.Verdict}
		if c.Err != nil && !errors.Is(c.Err, ErrNoVerdict) {
			it.VerifyError = c.Err.Error()
		}
		r.Items = append(r.Items, it)
	}
	return r, nil
}

// WriteReport writes dir's ReportMarkdown and ReportHTML, each atomically,
// from LoadReport(dir, pub).
func WriteReport(dir string, pub crypto.PublicKey) error {
	r, err := LoadReport(dir, pub)
	if err != nil {
		return err
	}
	var md, page bytes.Buffer
	if err := r.Markdown(&md); err != nil {
		return err
	}
	if err := r.HTML(&page); err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(dir, ReportMarkdown), md.Bytes()); err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, ReportHTML), page.Bytes())
}

// view is a report digested for both forms. Its strings are valid UTF-8.
type view struct {
	Title    string
	KeyHint  string
	Summary  *Summary
	Items    int
	Last     string
	Outcomes []outcomeCount
	// OutcomesH is the outcome chart's height.
	OutcomesH int
	Reasons   []reasonCount
	Tasks     []taskStats
	Errors    []itemView
	Rows      []itemView
	Latency   latency
	Compat    []compatTask
	Unverif   int
	Invalid   []itemView
}

type outcomeCount struct {
	Outcome string
	Count   int
	// Bar geometry for the outcome chart.
	Y, W  int
	Class string
}

type reasonCount struct {
	Outcome, Reason string
	Count           int
}

type taskStats struct {
	Task, Tier                     string
	Items, Pass, Fail, Error, Quar int
	// Rate is PASS / (PASS + FAIL) in percent, "n/a" when neither.
	Rate  string
	RateW int // width of the rate bar, out of 100
}

type itemView struct {
	Item, Task, Tier, Outcome, Reason, ReasonCode, Error, Cases, Latency, Verified string
}

type latency struct {
	N                         int
	Min, P50, P90, Max, Mean  string
	Bars                      []histBar
	Ticks                     []histTick
	YMax                      int
	Width, Height, PlotBottom int
}

type histBar struct {
	X, Y, W, H float64
	Count      int
	Range      string
}

type histTick struct {
	X     float64
	Label string
}

type compatTask struct {
	Task  string
	Tests []testStats
	Items []compatItem
}

type testStats struct {
	ID, Suite, Flags  string
	Pass, Fail, Other int
}

type compatItem struct {
	Item, Outcome, Baseline, Flipped, Dropped string
	Tests                                     []testRow
}

type testRow struct {
	ID, Suite, Outcome, DecidedBy, Flags, Duration, Reason string
}

var outcomeOrder = []schema.Outcome{schema.OutcomePass, schema.OutcomeFail, schema.OutcomeError, schema.OutcomeQuarantined}

func outcomeRank(o schema.Outcome) int {
	if i := slices.Index(outcomeOrder, o); i >= 0 {
		return i
	}
	return len(outcomeOrder)
}

// clean makes s printable on one line: valid UTF-8, control and
// bidirectional-control characters as spaces, at most n runes.
func clean(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}

func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s" }

// latencyMS is an item's grade time: the signed total, else (an error
// without a verdict) the wall time this process measured.
func latencyMS(r Record) int64 {
	if r.Timings.TotalMS > 0 {
		return r.Timings.TotalMS
	}
	return r.WallMS
}

func (r *Report) view() view {
	v := view{Title: "strictgrade run report", KeyHint: clean(r.KeyHint, 100), Summary: r.Summary, Items: len(r.Items)}
	outcomes := map[schema.Outcome]int{}
	reasons := map[[2]string]int{}
	tasks := map[string]*taskStats{}
	compat := map[string]*compatTask{}
	compatTests := map[string]map[string]*testStats{}
	var last time.Time
	var lat []int64
	for _, it := range r.Items {
		rec := it.Record
		outcomes[rec.Outcome]++
		reasons[[2]string{string(rec.Outcome), rec.ReasonCode}]++
		key := rec.Task
		ts := tasks[key]
		if ts == nil {
			ts = &taskStats{Task: clean(rec.Task, 200), Tier: clean(string(rec.Tier), 20)}
			tasks[key] = ts
		}
		ts.Items++
		switch rec.Outcome {
		case schema.OutcomePass:
			ts.Pass++
		case schema.OutcomeFail:
			ts.Fail++
		case schema.OutcomeError:
			ts.Error++
		default:
			ts.Quar++
		}
		if rec.Finished.After(last) {
			last = rec.Finished
		}
		ms := latencyMS(rec)
		if ms > 0 {
			lat = append(lat, ms)
		}
		iv := itemView{Item: clean(rec.Item, 300), Task: clean(rec.Task, 200), Tier: clean(string(rec.Tier), 20),
			Outcome: clean(string(rec.Outcome), 20), ReasonCode: clean(rec.ReasonCode, 100), Error: clean(rec.Error, 2000),
			Latency: "-", Verified: "yes"}
		if ms > 0 {
			iv.Latency = seconds(ms)
		}
		switch {
		case it.VerifyError != "":
			iv.Verified = "NO: " + clean(it.VerifyError, 300)
			v.Unverif++
		case it.Verdict == nil:
			iv.Verified = "no signed verdict"
		}
		if vd := it.Verdict; vd != nil {
			iv.Reason = clean(vd.Reason, 500)
			pass := 0
			for _, c := range vd.Cases {
				if c.Outcome == schema.OutcomePass {
					pass++
				}
			}
			iv.Cases = fmt.Sprintf("%d/%d", pass, len(vd.Cases))
			if vd.Tier == schema.TierCompat {
				ct := compat[key]
				if ct == nil {
					ct = &compatTask{Task: clean(rec.Task, 200)}
					compat[key], compatTests[key] = ct, map[string]*testStats{}
				}
				ci := compatItem{Item: iv.Item, Outcome: iv.Outcome, Flipped: "no", Dropped: "none"}
				if vd.Compat != nil {
					ci.Baseline = clean(string(vd.Compat.BaselineOutcome), 20)
					if vd.Compat.Flipped {
						ci.Flipped = "yes"
					}
					if n := len(vd.Compat.DroppedHunks); n > 0 {
						var paths []string
						for _, h := range vd.Compat.DroppedHunks {
							paths = append(paths, clean(h.Path, 200)+" ("+clean(h.Rule, 50)+")")
						}
						ci.Dropped = strings.Join(paths, ", ")
					}
				}
				for _, c := range vd.Cases {
					var flags []string
					for _, f := range c.Flags {
						flags = append(flags, clean(string(f), 40))
					}
					row := testRow{ID: clean(c.ID, 300), Suite: clean(string(c.Suite), 20), Outcome: clean(string(c.Outcome), 20),
						DecidedBy: clean(c.DecidedBy, 40), Flags: strings.Join(flags, ", "), Reason: clean(c.Reason, 300), Duration: "-"}
					if c.DurationMS > 0 {
						row.Duration = strconv.FormatInt(c.DurationMS, 10) + " ms"
					}
					ci.Tests = append(ci.Tests, row)
					st := compatTests[key][c.ID]
					if st == nil {
						st = &testStats{ID: row.ID, Suite: row.Suite}
						compatTests[key][c.ID] = st
					}
					switch c.Outcome {
					case schema.OutcomePass:
						st.Pass++
					case schema.OutcomeFail:
						st.Fail++
					default:
						st.Other++
					}
					for _, f := range flags {
						if !slices.Contains(strings.Split(st.Flags, ", "), f) {
							st.Flags = strings.TrimPrefix(st.Flags+", "+f, ", ")
						}
					}
				}
				ct.Items = append(ct.Items, ci)
			}
		}
		if it.VerifyError != "" {
			v.Invalid = append(v.Invalid, iv)
		}
		if rec.Outcome == schema.OutcomeError {
			v.Errors = append(v.Errors, iv)
		}
		v.Rows = append(v.Rows, iv)
	}
	if !last.IsZero() {
		v.Last = last.UTC().Format(time.RFC3339)
	}

	const barMax = 400
	maxCount := 0
	for _, n := range outcomes {
		maxCount = max(maxCount, n)
	}
	var order []schema.Outcome
	for o := range outcomes {
		order = append(order, o)
	}
	slices.SortFunc(order, func(a, b schema.Outcome) int {
		return cmp.Or(cmp.Compare(outcomeRank(a), outcomeRank(b)), strings.Compare(string(a), string(b)))
	})
	for i, o := range order {
		oc := outcomeCount{Outcome: clean(string(o), 20), Count: outcomes[o], Y: 8 + 28*i, Class: "other"}
		if maxCount > 0 {
			oc.W = max(1, outcomes[o]*barMax/maxCount)
		}
		if outcomeRank(o) < len(outcomeOrder) {
			oc.Class = strings.ToLower(string(o))
		}
		v.Outcomes = append(v.Outcomes, oc)
	}
	v.OutcomesH = 16 + 28*len(v.Outcomes)
	for k, n := range reasons {
		rc := reasonCount{Outcome: clean(k[0], 20), Reason: clean(k[1], 100), Count: n}
		if rc.Reason == "" {
			rc.Reason = "(none)"
		}
		v.Reasons = append(v.Reasons, rc)
	}
	slices.SortFunc(v.Reasons, func(a, b reasonCount) int {
		return cmp.Or(cmp.Compare(outcomeRank(schema.Outcome(a.Outcome)), outcomeRank(schema.Outcome(b.Outcome))),
			cmp.Compare(b.Count, a.Count), strings.Compare(a.Reason, b.Reason))
	})
	for _, ts := range tasks {
		ts.Rate = "n/a"
		if d := ts.Pass + ts.Fail; d > 0 {
			ts.Rate = strconv.FormatFloat(100*float64(ts.Pass)/float64(d), 'f', 1, 64) + "%"
			ts.RateW = int(math.Round(100 * float64(ts.Pass) / float64(d)))
		}
		v.Tasks = append(v.Tasks, *ts)
	}
	slices.SortFunc(v.Tasks, func(a, b taskStats) int { return strings.Compare(a.Task, b.Task) })
	for key, ct := range compat {
		for _, st := range compatTests[key] {
			ct.Tests = append(ct.Tests, *st)
		}
		slices.SortFunc(ct.Tests, func(a, b testStats) int {
			return cmp.Or(strings.Compare(a.Suite, b.Suite), strings.Compare(a.ID, b.ID))
		})
		v.Compat = append(v.Compat, *ct)
	}
	slices.SortFunc(v.Compat, func(a, b compatTask) int { return strings.Compare(a.Task, b.Task) })
	v.Latency = histogram(lat)
	return v
}

// histogram summarises latencies (milliseconds) and lays out their
// histogram: at most 12 bins of a round width, starting at zero.
func histogram(ms []int64) latency {
	l := latency{N: len(ms), Width: 640, Height: 240, PlotBottom: 200}
	if len(ms) == 0 {
		return l
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	var total int64
	for _, x := range s {
		total += x
	}
	rank := func(p float64) int64 { return s[max(0, int(math.Ceil(p*float64(len(s))))-1)] }
	l.Min, l.P50, l.P90, l.Max = seconds(s[0]), seconds(rank(0.5)), seconds(rank(0.9)), seconds(s[len(s)-1])
	l.Mean = seconds(total / int64(len(s)))
	width := niceWidth(float64(s[len(s)-1]+1) / 12)
	bins := int(s[len(s)-1]/width) + 1
	counts := make([]int, bins)
	for _, x := range s {
		counts[x/width]++
	}
	for _, c := range counts {
		l.YMax = max(l.YMax, c)
	}
	const left, right, top = 48.0, 16.0, 12.0
	plotW := float64(l.Width) - left - right
	plotH := float64(l.PlotBottom) - top
	bw := plotW / float64(bins)
	for i, c := range counts {
		h := plotH * float64(c) / float64(l.YMax)
		l.Bars = append(l.Bars, histBar{X: left + bw*float64(i) + 1, Y: float64(l.PlotBottom) - h, W: max(bw-2, 1), H: h, Count: c,
			Range: seconds(int64(i)*width) + " – " + seconds(int64(i+1)*width)})
	}
	step := max(1, bins/6)
	for i := 0; i <= bins; i += step {
		l.Ticks = append(l.Ticks, histTick{X: left + bw*float64(i), Label: strconv.FormatFloat(float64(int64(i)*width)/1000, 'f', -1, 64)})
	}
	return l
}

// niceWidth rounds w (ms) up to 1, 2 or 5 times a power of ten, at least
// 1 ms.
func niceWidth(w float64) int64 {
	if w <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(w)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= w {
			return int64(m * p)
		}
	}
	return int64(10 * p)
}

// HTML writes the report as one self-contained HTML page.
func (r *Report) HTML(w io.Writer) error {
	return reportTemplate.Execute(w, r.view())
}

//go:embed report.html.tmpl
var reportHTML string

var reportTemplate = template.Must(template.New("report").Parse(reportHTML))

// Markdown writes the report as Markdown tables. Text from items and
// verdicts is escaped so that it renders literally: no HTML, links or
// table breaks.
func (r *Report) Markdown(w io.Writer) error {
	v := r.view()
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	row := func(cells ...string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + mdEscape(c) + " |")
		}
		b.WriteString("\n")
	}
	head := func(cells ...string) {
		row(cells...)
		b.WriteString("|" + strings.Repeat("---|", len(cells)) + "\n")
	}
	p("# %s\n\n", v.Title)
	p("%d items", v.Items)
	if s := v.Summary; s != nil {
		p(" (%d graded by the last run, %d kept from before, %d not graded; %.1f s, %.1f grades/min)", s.Graded, s.Resumed, s.Pending, s.WallSeconds, s.GradesPerMinute)
		if s.Stopped != "" {
			p("; the last run stopped: %s", mdEscape(s.Stopped))
		}
	}
	p(". Verdicts checked with the key %s", mdEscape(v.KeyHint))
	if v.Last != "" {
		p("; last verdict %s", v.Last)
	}
	p(".\n\n")
	if v.Unverif > 0 {
		p("**%d of the items do not verify**: they are counted as their records say, listed apart, and their verdicts are not used.\n\n", v.Unverif)
	}
	p("## Outcomes\n\nERROR is the grader's failure, never the submission's; pass rates leave it out.\n\n")
	head("outcome", "items")
	for _, o := range v.Outcomes {
		row(o.Outcome, strconv.Itoa(o.Count))
	}
	p("\n## Reason codes\n\n")
	head("outcome", "reason code", "items")
	for _, rc := range v.Reasons {
		row(rc.Outcome, rc.Reason, strconv.Itoa(rc.Count))
	}
	p("\n## Tasks\n\n")
	head("task", "tier", "items", "PASS", "FAIL", "ERROR", "other", "pass rate (PASS / (PASS+FAIL))")
	for _, t := range v.Tasks {
		row(t.Task, t.Tier, strconv.Itoa(t.Items), strconv.Itoa(t.Pass), strconv.Itoa(t.Fail), strconv.Itoa(t.Error), strconv.Itoa(t.Quar), t.Rate)
	}
	p("\n## Grader errors\n\n")
	if len(v.Errors) == 0 {
		p("None.\n")
	} else {
		head("item", "task", "reason code", "error", "signed")
		for _, e := range v.Errors {
			row(e.Item, e.Task, e.ReasonCode, cmp.Or(e.Error, e.Reason), e.Verified)
		}
	}
	if len(v.Invalid) > 0 {
		p("\n## Items that do not verify\n\n")
		head("item", "task", "outcome", "why")
		for _, e := range v.Invalid {
			row(e.Item, e.Task, e.Outcome, e.Verified)
		}
	}
	p("\n## Latency\n\n")
	if l := v.Latency; l.N == 0 {
		p("No timings.\n")
	} else {
		head("items", "min", "p50", "p90", "max", "mean")
		row(strconv.Itoa(l.N), l.Min, l.P50, l.P90, l.Max, l.Mean)
		p("\n")
		head("grade time", "items")
		for _, bar := range l.Bars {
			row(bar.Range, strconv.Itoa(bar.Count))
		}
	}
	for _, ct := range v.Compat {
		p("\n## Tests of compat task %s\n\n", mdEscape(ct.Task))
		head("test", "suite", "PASS", "FAIL", "other", "flags")
		for _, t := range ct.Tests {
			row(t.ID, t.Suite, strconv.Itoa(t.Pass), strconv.Itoa(t.Fail), strconv.Itoa(t.Other), t.Flags)
		}
		for _, ci := range ct.Items {
			p("\n### %s: %s\n\nbaseline %s, flipped %s, dropped hunks: %s\n\n", mdEscape(ci.Item), mdEscape(ci.Outcome),
				mdEscape(cmp.Or(ci.Baseline, "unknown")), ci.Flipped, mdEscape(ci.Dropped))
			head("test", "suite", "outcome", "decided by", "flags", "duration", "reason")
			for _, t := range ci.Tests {
				row(t.ID, t.Suite, t.Outcome, t.DecidedBy, t.Flags, t.Duration, t.Reason)
			}
		}
	}
	p("\n## Items\n\n")
	head("item", "task", "outcome", "reason code", "cases passed", "grade time", "verified", "reason or error")
	for _, it := range v.Rows {
		row(it.Item, it.Task, it.Outcome, it.ReasonCode, it.Cases, it.Latency, it.Verified, cmp.Or(it.Error, it.Reason))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape makes s one literal Markdown table cell: HTML's special
// characters as entities, Markdown's punctuation backslash-escaped.
func mdEscape(s string) string {
	s = clean(s, 1<<20)
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		case '\\', '`', '*', '_', '[', ']', '!', '|', '~':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
