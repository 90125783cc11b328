// Package junit reads the JUnit XML reports pytest writes and classifies
// each expected test of a compat-tier run from them.
//
// Parse reads a report strictly: bounded in size, depth and count, UTF-8
// only, no DTD, only the elements pytest writes, each where pytest puts it.
// Classify then reads it against the node ids a suite expects: every id
// must appear exactly once, and a failure, an error, a skip, an xfail or
// strict xpass, a collection error or skip of its module, or absence each
// give the test its Kind and its flags (import_error, missing_fixture,
// skipped, xfail, missing). Testcases nobody asked for and tests reported
// twice are counted, for the caller to fail the grade on. KeyOf gives the
// name pytest's report uses for a node id, so that a task can refuse ids
// a report could not tell apart.
//
// The package is pure: it reads the bytes it is given and knows nothing of
// containers, sandboxes or engines. Package compat runs pytest and decides
// the verdict from the Results.
package junit

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/strictgrade/strictgrade/schema"
)

// MaxReportBytes is the size of the largest report Parse reads.
const MaxReportBytes = 32 << 20

// Bounds on a JUnit report.
const (
	maxReportCases    = 50000
	maxResultsPerCase = 64
	maxDepth          = 8
	keepText          = 4096 // bytes kept of each message and body
)

// Key is how pytest's JUnit report names a test: the node id with "/"
// turned into "." and ".py" dropped, split into classname and name. Two
// node ids with the same Key cannot be told apart in a report.
type Key struct{ Classname, Name string }

// KeyOf returns the Key of a pytest node id; it mirrors pytest's
// junitxml.mangle_test_address.
func KeyOf(id string) Key {
	names := mangle(id)
	return Key{strings.Join(names[:len(names)-1], "."), names[len(names)-1]}
}

func mangle(id string) []string {
	p, params, hasParams := strings.Cut(id, "[")
	names := strings.Split(p, "::")
	names[0] = strings.TrimSuffix(strings.ReplaceAll(names[0], "/", "."), ".py")
	if hasParams {
		names[len(names)-1] += "[" + params
	}
	return names
}

// moduleOf returns the dotted module path of a node id, as pytest names a
// module's collection report.
func moduleOf(id string) string { return mangle(id)[0] }

// Report is a parsed JUnit XML report. Only Classify reads it.
type Report struct {
	cases []reportCase
}

type reportCase struct {
	key     Key
	seconds float64
	results []result
}

// result is a failure, error or skipped child of a testcase.
type result struct {
	kind    string // failure, error or skipped
	typ     string // the type attribute
	message string // the message attribute, cut to keepText bytes
	text    string // the body, cut to keepText bytes
}

// The elements a pytest report may hold.
var allowedParents = map[string][]string{
	"testsuites": {""},
	"testsuite":  {"", "testsuites"},
	"testcase":   {"testsuite"},
	"properties": {"testsuite", "testcase"},
	"property":   {"properties"},
	"failure":    {"testcase"},
	"error":      {"testcase"},
	"skipped":    {"testcase"},
	"system-out": {"testsuite", "testcase"},
	"system-err": {"testsuite", "testcase"},
}

// Parse reads a JUnit XML report strictly: at most MaxReportBytes, bounded
// in depth and count; UTF-8 only; no DTD; only the elements pytest writes,
// each where pytest puts it. Anything else is an error, which the caller
// turns into FAIL: a report the oracle cannot read proves nothing.
func Parse(data []byte) (*Report, error) {
	if len(data) > MaxReportBytes {
		return nil, fmt.Errorf("report larger than %d bytes", MaxReportBytes)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var (
		rep     Report
		stack   []string
		cur     *reportCase
		res     *result
		text    strings.Builder
		sawRoot bool
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("report is not well-formed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			parent := ""
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			if t.Name.Space != "" || !slices.Contains(allowedParents[name], parent) {
				return nil, fmt.Errorf("unexpected element <%s> in <%s>", name, parent)
			}
			if parent == "" {
				if sawRoot {
					return nil, errors.New("more than one root element")
				}
				sawRoot = true
			}
			if len(stack) == maxDepth {
				return nil, errors.New("report nested too deeply")
			}
			stack = append(stack, name)
			switch name {
			case "testcase":
				if len(rep.cases) == maxReportCases {
					return nil, fmt.Errorf("more than %d testcases", maxReportCases)
				}
				rc, err := newCase(t.Attr)
				if err != nil {
					return nil, err
				}
				rep.cases = append(rep.cases, rc)
				cur = &rep.cases[len(rep.cases)-1]
			case "failure", "error", "skipped":
				if len(cur.results) == maxResultsPerCase {
					return nil, errors.New("too many results for one testcase")
				}
				cur.results = append(cur.results, result{kind: name, typ: attr(t.Attr, "type"), message: cut(attr(t.Attr, "message"))})
				res = &cur.results[len(cur.results)-1]
				text.Reset()
			}
		case xml.EndElement:
			name := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			switch name {
			case "failure", "error", "skipped":
				res.text = text.String()
				res = nil
			case "testcase":
				cur = nil
			}
		case xml.CharData:
			if res != nil && text.Len() < keepText {
				text.WriteString(cut(string(t)[:min(len(t), keepText-text.Len())]))
			}
		case xml.ProcInst:
			if t.Target != "xml" || sawRoot {
				return nil, errors.New("unexpected processing instruction")
			}
		case xml.Directive:
			return nil, errors.New("report has a DTD or other directive")
		}
	}
	if !sawRoot {
		return nil, errors.New("report is empty")
	}
	return &rep, nil
}

func newCase(attrs []xml.Attr) (reportCase, error) {
	rc := reportCase{key: Key{attr(attrs, "classname"), attr(attrs, "name")}}
	if rc.key.Name == "" {
		return rc, errors.New("testcase without a name")
	}
	if s := attr(attrs, "time"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return rc, fmt.Errorf("testcase %s: bad time %q", rc.key.Name, s)
		}
		rc.seconds = f
	}
	return rc, nil
}

func attr(attrs []xml.Attr, name string) string {
	for _, a := range attrs {
		if a.Name.Space == "" && a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// cut keeps at most keepText bytes of s, on a rune boundary.
func cut(s string) string {
	if len(s) <= keepText {
		return s
	}
	s = s[:keepText]
	for len(s) > 0 && !isRuneStart(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	if len(s) > 0 {
		s = s[:len(s)-1]
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xc0 != 0x80 }

// Kind is what happened to one expected test.
type Kind int

// The kinds of Outcome.
const (
	KindPass    Kind = iota // passed
	KindFail                // a failure or an error (setup, call, teardown or collection)
	KindXfail               // xfail, or a strict xpass
	KindSkipped             // skipped, also at collection
	KindMissing             // not in the report at all
)

// String returns the kind as a verdict's reasons and a grade's log name it:
// passed, failed, xfail, skipped or missing.
func (k Kind) String() string {
	return [...]string{"passed", "failed", "xfail", "skipped", "missing"}[k]
}

// Outcome is the classification of one expected test in one run.
type Outcome struct {
	Kind  Kind
	Flags []schema.Flag
	// Reason says why a test did not pass, in raw text from the report:
	// whoever puts it in a verdict must escape it.
	Reason string
	// Seconds is the testcase's time as the report gives it.
	Seconds float64
	// Collected reports a module that failed to collect or was skipped at
	// collection: the test never ran because of something at import time.
	Collected bool
	// Blocked reports a test that never ran because pytest stopped at a
	// collection problem in another module.
	Blocked bool
}

var (
	importErrorPattern = regexp.MustCompile(`^(?:E\s+)?(?:ImportError|ModuleNotFoundError)\b|^AttributeError: module '[^']*' has no attribute`)
	fixturePattern     = regexp.MustCompile(`fixture '[^']*' not found`)
)

// Result is a report read against the expected ids of one suite.
type Result struct {
	// Outcomes holds one Outcome per expected id.
	Outcomes map[string]Outcome
	// Extra counts testcases for tests nobody asked for, Duplicates
	// counts tests reported more than once.
	Extra, Duplicates int
	// CollectProblems counts modules that failed to collect or were
	// skipped at collection.
	CollectProblems int
}

// Classify reads rep (nil when the run left no report) against the
// expected node ids. noReport explains a missing report: it is the reason
// of every outcome then. Each expected id gets an Outcome: the worst of
// its testcase's results (a failure or error, then xfail or strict xpass,
// then skipped), with the flags of all of them; the outcome of its
// module's collection error or skip when it has no testcase; missing when
// it has neither. An id reported more than once fails.
func Classify(rep *Report, ids []string, noReport string) Result {
	sr := Result{Outcomes: make(map[string]Outcome, len(ids))}
	if rep == nil {
		for _, id := range ids {
			sr.Outcomes[id] = Outcome{Kind: KindMissing, Flags: []schema.Flag{schema.FlagMissing}, Reason: noReport}
		}
		return sr
	}
	want := make(map[Key]string, len(ids))
	for _, id := range ids {
		want[KeyOf(id)] = id
	}
	seen := map[string]int{}
	// Collection reports have an empty classname and the dotted module
	// (or package) path as name.
	collect := map[string]reportCase{}
	for _, rc := range rep.cases {
		if rc.key.Classname == "" {
			if _, ok := collect[rc.key.Name]; !ok {
				sr.CollectProblems++
			}
			collect[rc.key.Name] = rc
			continue
		}
		id, ok := want[rc.key]
		if !ok {
			sr.Extra++
			continue
		}
		seen[id]++
		if seen[id] > 1 {
			continue
		}
		sr.Outcomes[id] = caseOutcome(rc)
	}
	matched := map[string]bool{}
	for _, id := range ids {
		if n := seen[id]; n > 1 {
			sr.Duplicates++
			sr.Outcomes[id] = Outcome{Kind: KindFail, Reason: fmt.Sprintf("reported %d times", n)}
			continue
		} else if n == 1 {
			continue
		}
		if mod, rc, ok := collectFor(collect, moduleOf(id)); ok {
			matched[mod] = true
			sr.Outcomes[id] = collectOutcome(rc)
			continue
		}
		o := Outcome{Kind: KindMissing, Flags: []schema.Flag{schema.FlagMissing}, Reason: "not in the report"}
		if len(collect) > 0 {
			o.Blocked = true
			o.Reason = "not run: pytest stopped at a collection problem in another module"
		}
		sr.Outcomes[id] = o
	}
	for mod := range collect {
		if !matched[mod] {
			sr.Extra++
		}
	}
	return sr
}

// collectFor finds the collection report for module or one of its
// packages.
func collectFor(collect map[string]reportCase, module string) (string, reportCase, bool) {
	for m := module; m != ""; {
		if rc, ok := collect[m]; ok {
			return m, rc, true
		}
		i := strings.LastIndexByte(m, '.')
		if i < 0 {
			break
		}
		m = m[:i]
	}
	return "", reportCase{}, false
}

// caseOutcome classifies a testcase that names an expected test: the
// worst of its results decides, and the flags of all of them are kept.
func caseOutcome(rc reportCase) Outcome {
	o := Outcome{Kind: KindPass, Seconds: rc.seconds}
	for _, r := range rc.results {
		k, flags, reason := judgeResult(r)
		if k.rank() > o.Kind.rank() {
			o.Kind, o.Reason = k, reason
		}
		o.Flags = AddFlags(o.Flags, flags...)
	}
	return o
}

// rank orders kinds from best to worst.
func (k Kind) rank() int {
	return [...]int{KindPass: 0, KindSkipped: 1, KindXfail: 2, KindFail: 3, KindMissing: 4}[k]
}

func judgeResult(r result) (Kind, []schema.Flag, string) {
	msg := firstLine(r.message)
	switch {
	case r.kind == "skipped" && r.typ == "pytest.xfail":
		return KindXfail, []schema.Flag{schema.FlagXfail}, "xfail: " + msg
	case r.kind == "failure" && strings.HasPrefix(r.message, "[XPASS(strict)]"):
		return KindXfail, []schema.Flag{schema.FlagXfail}, "xpass: " + msg
	case r.kind == "skipped" && strings.HasPrefix(r.message, "xfail-marked test passes unexpectedly"):
		return KindXfail, []schema.Flag{schema.FlagXfail}, "xpass: " + msg
	case r.kind == "skipped":
		return KindSkipped, []schema.Flag{schema.FlagSkipped}, "skipped: " + msg
	}
	var flags []schema.Flag
	if fixturePattern.MatchString(r.message) {
		flags = append(flags, schema.FlagMissingFixture)
		msg = fixturePattern.FindString(r.message)
	}
	if importErrorPattern.MatchString(r.message) {
		flags = append(flags, schema.FlagImportError)
	}
	return KindFail, flags, r.kind + ": " + msg
}

// collectOutcome classifies a test whose module failed to collect (an
// error: import or collection error) or was skipped at collection.
func collectOutcome(rc reportCase) Outcome {
	o := Outcome{Kind: KindFail, Flags: []schema.Flag{schema.FlagMissing}, Collected: true}
	for _, r := range rc.results {
		if r.kind == "skipped" {
			return Outcome{Kind: KindSkipped, Flags: []schema.Flag{schema.FlagMissing, schema.FlagSkipped}, Collected: true,
				Reason: "module skipped at collection: " + lastLine(r.text)}
		}
	}
	o.Flags = AddFlags(o.Flags, schema.FlagImportError)
	detail := ""
	if len(rc.results) > 0 {
		detail = lastErrorLine(rc.results[0].text)
	}
	o.Reason = "module failed to collect: " + detail
	return o
}

// AddFlags returns have, an Outcome's flags, with each flag of more it
// does not hold yet appended: a flag is listed once, in the order first
// seen.
func AddFlags(have []schema.Flag, more ...schema.Flag) []schema.Flag {
	for _, f := range more {
		if !slices.Contains(have, f) {
			have = append(have, f)
		}
	}
	return have
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// lastErrorLine returns the last "E   ..." line of a pytest traceback, or
// its last line.
func lastErrorLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "E ") {
			return strings.TrimSpace(l[1:])
		}
	}
	return lastLine(s)
}
