package compat

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

// Bounds on a JUnit report.
const (
	maxReportBytes    = 32 << 20
	maxReportCases    = 50000
	maxResultsPerCase = 64
	maxDepth          = 8
	keepText          = 4096 // bytes kept of each message and body
)

// junitKey is how pytest's JUnit report names a test: the node id with
// "/" turned into "." and ".py" dropped, split into classname and name.
type junitKey struct{ classname, name string }

// keyOf mirrors pytest's junitxml.mangle_test_address.
func keyOf(id string) junitKey {
	names := mangle(id)
	return junitKey{strings.Join(names[:len(names)-1], "."), names[len(names)-1]}
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

// report is a parsed JUnit XML report.
type report struct {
	cases []reportCase
}

type reportCase struct {
	key     junitKey
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

// parseReport reads a JUnit XML report strictly: bounded in size, depth
// and count; UTF-8 only; no DTD; only the elements pytest writes, each
// where pytest puts it. Anything else is an error, which the caller turns
// into FAIL: a report the oracle cannot read proves nothing.
func parseReport(data []byte) (*report, error) {
	if len(data) > maxReportBytes {
		return nil, fmt.Errorf("report larger than %d bytes", maxReportBytes)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var (
		rep     report
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
	rc := reportCase{key: junitKey{attr(attrs, "classname"), attr(attrs, "name")}}
	if rc.key.name == "" {
		return rc, errors.New("testcase without a name")
	}
	if s := attr(attrs, "time"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return rc, fmt.Errorf("testcase %s: bad time %q", rc.key.name, s)
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

// kind is what happened to one expected test.
type kind int

const (
	kindPass    kind = iota
	kindFail         // a failure or an error (setup, call, teardown or collection)
	kindXfail        // xfail, or a strict xpass
	kindSkipped      // skipped, also at collection
	kindMissing      // not in the report at all
)

func (k kind) String() string {
	return [...]string{"passed", "failed", "xfail", "skipped", "missing"}[k]
}

// outcome is the classification of one expected test in one run.
type outcome struct {
	kind    kind
	flags   []schema.Flag
	reason  string // raw text, escaped when it enters a verdict
	seconds float64
	// collected reports a module that failed to collect or was skipped at
	// collection: the test never ran because of something at import time.
	collected bool
	// blocked reports a test that never ran because pytest stopped at a
	// collection problem in another module.
	blocked bool
}

var (
	importErrorPattern = regexp.MustCompile(`^(?:E\s+)?(?:ImportError|ModuleNotFoundError)\b|^AttributeError: module '[^']*' has no attribute`)
	fixturePattern     = regexp.MustCompile(`fixture '[^']*' not found`)
)

// suiteResult is a report read against the expected ids of one suite.
type suiteResult struct {
	outcomes map[string]outcome
	// extra counts testcases for tests nobody asked for, duplicates
	// counts tests reported more than once.
	extra, duplicates int
	// collectProblems counts modules that failed to collect or were
	// skipped at collection.
	collectProblems int
}

// classify reads rep (nil when the run left no report) against ids.
// noReport explains a missing report.
func classify(rep *report, ids []string, noReport string) suiteResult {
	sr := suiteResult{outcomes: make(map[string]outcome, len(ids))}
	if rep == nil {
		for _, id := range ids {
			sr.outcomes[id] = outcome{kind: kindMissing, flags: []schema.Flag{schema.FlagMissing}, reason: noReport}
		}
		return sr
	}
	want := make(map[junitKey]string, len(ids))
	for _, id := range ids {
		want[keyOf(id)] = id
	}
	seen := map[string]int{}
	// Collection reports have an empty classname and the dotted module
	// (or package) path as name.
	collect := map[string]reportCase{}
	for _, rc := range rep.cases {
		if rc.key.classname == "" {
			if _, ok := collect[rc.key.name]; !ok {
				sr.collectProblems++
			}
			collect[rc.key.name] = rc
			continue
		}
		id, ok := want[rc.key]
		if !ok {
			sr.extra++
			continue
		}
		seen[id]++
		if seen[id] > 1 {
			continue
		}
		sr.outcomes[id] = caseOutcome(rc)
	}
	matched := map[string]bool{}
	for _, id := range ids {
		if n := seen[id]; n > 1 {
			sr.duplicates++
			sr.outcomes[id] = outcome{kind: kindFail, reason: fmt.Sprintf("reported %d times", n)}
			continue
		} else if n == 1 {
			continue
		}
		if mod, rc, ok := collectFor(collect, moduleOf(id)); ok {
			matched[mod] = true
			sr.outcomes[id] = collectOutcome(rc)
			continue
		}
		o := outcome{kind: kindMissing, flags: []schema.Flag{schema.FlagMissing}, reason: "not in the report"}
		if len(collect) > 0 {
			o.blocked = true
			o.reason = "not run: pytest stopped at a collection problem in another module"
		}
		sr.outcomes[id] = o
	}
	for mod := range collect {
		if !matched[mod] {
			sr.extra++
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
func caseOutcome(rc reportCase) outcome {
	o := outcome{kind: kindPass, seconds: rc.seconds}
	for _, r := range rc.results {
		k, flags, reason := judgeResult(r)
		if k.rank() > o.kind.rank() {
			o.kind, o.reason = k, reason
		}
		o.flags = addFlags(o.flags, flags...)
	}
	return o
}

// rank orders kinds from best to worst.
func (k kind) rank() int {
	return [...]int{kindPass: 0, kindSkipped: 1, kindXfail: 2, kindFail: 3, kindMissing: 4}[k]
}

func judgeResult(r result) (kind, []schema.Flag, string) {
	msg := firstLine(r.message)
	switch {
	case r.kind == "skipped" && r.typ == "pytest.xfail":
		return kindXfail, []schema.Flag{schema.FlagXfail}, "xfail: " + msg
	case r.kind == "failure" && strings.HasPrefix(r.message, "[XPASS(strict)]"):
		return kindXfail, []schema.Flag{schema.FlagXfail}, "xpass: " + msg
	case r.kind == "skipped" && strings.HasPrefix(r.message, "xfail-marked test passes unexpectedly"):
		return kindXfail, []schema.Flag{schema.FlagXfail}, "xpass: " + msg
	case r.kind == "skipped":
		return kindSkipped, []schema.Flag{schema.FlagSkipped}, "skipped: " + msg
	}
	var flags []schema.Flag
	if fixturePattern.MatchString(r.message) {
		flags = append(flags, schema.FlagMissingFixture)
		msg = fixturePattern.FindString(r.message)
	}
	if importErrorPattern.MatchString(r.message) {
		flags = append(flags, schema.FlagImportError)
	}
	return kindFail, flags, r.kind + ": " + msg
}

// collectOutcome classifies a test whose module failed to collect (an
// error: import or collection error) or was skipped at collection.
func collectOutcome(rc reportCase) outcome {
	o := outcome{kind: kindFail, flags: []schema.Flag{schema.FlagMissing}, collected: true}
	for _, r := range rc.results {
		if r.kind == "skipped" {
			return outcome{kind: kindSkipped, flags: []schema.Flag{schema.FlagMissing, schema.FlagSkipped}, collected: true,
				reason: "module skipped at collection: " + lastLine(r.text)}
		}
	}
	o.flags = addFlags(o.flags, schema.FlagImportError)
	detail := ""
	if len(rc.results) > 0 {
		detail = lastErrorLine(rc.results[0].text)
	}
	o.reason = "module failed to collect: " + detail
	return o
}

func addFlags(have []schema.Flag, more ...schema.Flag) []schema.Flag {
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
