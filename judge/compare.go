package judge

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/schema"
)

// Comparator kinds. Each is also the Case.DecidedBy value of a case the
// comparator decided.
const (
	KindExact          = schema.DecidedByExact
	KindLines          = schema.DecidedByLines
	KindTokens         = schema.DecidedByTokens
	KindNumbers        = schema.DecidedByNumbers
	KindJSON           = schema.DecidedByJSON
	KindUnorderedLines = schema.DecidedByUnorderedLines
	KindCSV            = schema.DecidedByCSV
	// KindChecker runs a WebAssembly module of the task's (see
	// CheckerInput); only Judge can run it.
	KindChecker = schema.DecidedByChecker
)

// kinds lists the comparator kinds Compare runs, in the order error
// messages name them; allKinds adds checker, which only Judge runs.
var (
	kinds    = []string{KindExact, KindLines, KindTokens, KindNumbers, KindJSON, KindUnorderedLines, KindCSV}
	allKinds = append(slices.Clip(kinds), KindChecker)
)

// Comparator says how a candidate output is compared with the expected one.
// The zero value is not valid: Kind is required. Options that do not apply
// to Kind are refused by Validate rather than ignored, so that a task never
// believes it set a tolerance that has no effect.
type Comparator struct {
	// Kind is one of exact, lines, tokens, numbers, json, unordered_lines,
	// csv, checker.
	Kind string `json:"kind"`
	// AbsTol and RelTol make numbers equal when |a-b| <= AbsTol or
	// |a-b| <= RelTol*max(|a|,|b|), computed in float64 (numbers, json,
	// csv). Without either, numbers must denote the same decimal value:
	// 1, 1.0 and 1e0 are equal, 0.1 and 0.10000000000000001 are not.
	// Both must be finite and non-negative, and RelTol below 1.
	AbsTol float64 `json:"abs_tol,omitempty"`
	RelTol float64 `json:"rel_tol,omitempty"`
	// AllowNaN makes NaN equal NaN (numbers, csv). Otherwise a NaN equals
	// nothing, not even NaN.
	AllowNaN bool `json:"allow_nan,omitempty"`
	// UnorderedArrays compares JSON arrays as multisets (json).
	UnorderedArrays bool `json:"unordered_arrays,omitempty"`
	// IgnoreCase compares text after Unicode simple case folding (lines,
	// tokens, unordered_lines, and the text cells of csv).
	IgnoreCase bool `json:"ignore_case,omitempty"`
	// CSVHeader says the first row is a header, compared exactly (csv).
	CSVHeader bool `json:"csv_header,omitempty"`

	// Module is the checker's WebAssembly module, a path relative to the
	// task's hidden directory (checker, required).
	Module string `json:"module,omitempty"`
	// MemoryPages is the checker's memory limit in 64 KiB pages, 1 to
	// MaxCheckerMemoryPages; 0 means DefaultCheckerMemoryPages (checker).
	MemoryPages uint32 `json:"memory_pages,omitempty"`
	// Fuel is the budget of one checker run in fuel units (about one
	// WebAssembly instruction each; see instrument), 1 to MaxCheckerFuel;
	// 0 means DefaultCheckerFuel (checker). A run that uses it up fails
	// its case: the same output does so on every machine at any load.
	Fuel int64 `json:"fuel,omitempty"`
	// TimeoutMS is the wall-clock backstop of one checker run in
	// milliseconds, 1 to MaxCheckerTimeoutMS; 0 means
	// DefaultCheckerTimeoutMS (checker). Fuel decides; a run still
	// going at its backstop is the grader's failure, an ERROR.
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// OutputBytes caps what one checker run writes to its standard
	// output, 1 to MaxCheckerOutputBytes; 0 means
	// DefaultCheckerOutputBytes (checker).
	OutputBytes int `json:"output_bytes,omitempty"`
}

// Validate reports whether c is usable, as an error wrapping ErrComparator.
func (c Comparator) Validate() error {
	known := false
	for _, k := range allKinds {
		known = known || c.Kind == k
	}
	if !known {
		return fmt.Errorf("%w: kind %q is not one of %s", ErrComparator, c.Kind, strings.Join(allKinds, ", "))
	}
	numeric := c.Kind == KindNumbers || c.Kind == KindJSON || c.Kind == KindCSV
	for _, t := range []struct {
		name string
		v    float64
	}{{"abs_tol", c.AbsTol}, {"rel_tol", c.RelTol}} {
		switch {
		case math.IsNaN(t.v) || math.IsInf(t.v, 0) || t.v < 0:
			return fmt.Errorf("%w: %s must be a finite number >= 0", ErrComparator, t.name)
		case t.v != 0 && !numeric:
			return fmt.Errorf("%w: %s does not apply to kind %s", ErrComparator, t.name, c.Kind)
		}
	}
	if c.RelTol >= 1 {
		return fmt.Errorf("%w: rel_tol must be below 1 (rel_tol 1 makes 0 equal to every number)", ErrComparator)
	}
	flags := []struct {
		name  string
		set   bool
		kinds []string
	}{
		{"allow_nan", c.AllowNaN, []string{KindNumbers, KindCSV}},
		{"unordered_arrays", c.UnorderedArrays, []string{KindJSON}},
		{"ignore_case", c.IgnoreCase, []string{KindLines, KindTokens, KindUnorderedLines, KindCSV}},
		{"csv_header", c.CSVHeader, []string{KindCSV}},
		{"module", c.Module != "", []string{KindChecker}},
	}
	if c.Kind == KindChecker {
		if err := CheckRelPath(c.Module); err != nil {
			return fmt.Errorf("%w: module: %v", ErrComparator, err)
		}
	}
	for _, n := range []struct {
		name     string
		v, limit int64
	}{
		{"memory_pages", int64(c.MemoryPages), MaxCheckerMemoryPages},
		{"fuel", c.Fuel, MaxCheckerFuel},
		{"timeout_ms", int64(c.TimeoutMS), MaxCheckerTimeoutMS},
		{"output_bytes", int64(c.OutputBytes), MaxCheckerOutputBytes},
	} {
		switch {
		case n.v != 0 && c.Kind != KindChecker:
			return fmt.Errorf("%w: %s does not apply to kind %s", ErrComparator, n.name, c.Kind)
		case n.v < 0 || n.v > n.limit:
			return fmt.Errorf("%w: %s must be 1 to %d (0 or absent for the default)", ErrComparator, n.name, n.limit)
		}
	}
	for _, f := range flags {
		ok := !f.set
		for _, k := range f.kinds {
			ok = ok || c.Kind == k
		}
		if !ok {
			return fmt.Errorf("%w: %s does not apply to kind %s", ErrComparator, f.name, c.Kind)
		}
	}
	return nil
}

// tolerance returns the numeric tolerance of c.
func (c Comparator) tolerance() tolerance {
	return tolerance{abs: c.AbsTol, rel: c.RelTol, allowNaN: c.AllowNaN}
}

// Result is the outcome of one comparison.
type Result struct {
	// Equal reports whether the candidate output matches.
	Equal bool `json:"equal"`
	// DecidedBy is the comparator kind (a schema.DecidedBy* value).
	DecidedBy string `json:"decided_by"`
	// Reason describes the first difference, under the disclosure policy
	// the comparison was made for; empty when Equal. It never quotes an
	// expected value, and always satisfies the verdict schema's rules for
	// a case reason.
	Reason string `json:"reason,omitempty"`
}

// Compare compares a candidate output (got) with the expected one (want)
// and explains a difference under the default disclosure policy
// (schema.DisclosureDigest): where the output first differs, in positions
// of got, and got's length and sha256 prefix. It is deterministic, never
// panics, and bounds its work by the sizes of its inputs. An invalid
// comparator or an unusable expected value makes the result unequal, with
// a reason saying so; the judge checks both before it compares, so in a
// verdict an unequal result always means the candidate.
func Compare(c Comparator, got, want []byte) Result {
	return CompareFor(schema.DisclosureDigest, c, got, want)
}

// CompareFor is Compare with the reason written under policy d:
// schema.DisclosureDetailed also quotes got (escaped, truncated) and
// states expected lengths, types and counts, for a human debugging a task.
func CompareFor(d schema.Disclosure, c Comparator, got, want []byte) Result {
	if err := c.Validate(); err != nil {
		return Result{DecidedBy: "comparator", Reason: clampText(err.Error(), maxCaseReasonBytes)}
	}
	f, err := compare(c, got, want)
	switch {
	case err != nil:
		return Result{DecidedBy: c.Kind, Reason: clampText(err.Error(), maxCaseReasonBytes)}
	case f == nil:
		return Result{Equal: true, DecidedBy: c.Kind}
	}
	return Result{DecidedBy: c.Kind, Reason: clampText(mainOutput.reason(effective(d), f, got), maxCaseReasonBytes)}
}

// compare compares with a valid comparator and returns the first
// difference, or nil when the outputs are equal. The error, wrapping
// ErrExpected, means want cannot be compared against at all.
func compare(c Comparator, got, want []byte) (*finding, error) {
	switch c.Kind {
	case KindExact:
		return compareExact(got, want), nil
	case KindLines:
		return compareLines(got, want, c.IgnoreCase), nil
	case KindTokens:
		return compareTokens(got, want, c.IgnoreCase), nil
	case KindUnorderedLines:
		return compareUnorderedLines(got, want, c.IgnoreCase), nil
	case KindNumbers:
		return compareNumbers(got, want, c.tolerance())
	case KindJSON:
		return compareJSONBytes(c, got, want)
	case KindCSV:
		return compareCSV(got, want, c)
	case KindChecker:
		return nil, fmt.Errorf("%w: the checker comparator runs only inside Judge, with the task's module", ErrComparator)
	}
	return nil, fmt.Errorf("%w: kind %q", ErrComparator, c.Kind)
}

// excerptLen is how much candidate text a detailed reason quotes.
const excerptLen = 64

// quote escapes and truncates candidate text for a detailed reason.
func quote(b []byte) string { return schema.Excerpt(b, excerptLen) }

func quoteString(s string) string { return schema.Excerpt([]byte(s), excerptLen) }

// plural formats a count with a noun: "1 line", "2 lines".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// compareExact compares bytes.
func compareExact(got, want []byte) *finding {
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	where := fmt.Sprintf("byte %d (line %d)", i, bytes.Count(got[:i], []byte{'\n'})+1)
	switch {
	case i == len(got):
		return differsAt(where, fmt.Sprintf("output ends early: %s, want %s", plural(len(got), "byte"), plural(len(want), "byte")))
	case i == len(want):
		return differsAt(where, fmt.Sprintf("%s: unexpected extra output %s", where, quote(got[i:])))
	}
	return differsAt(where, fmt.Sprintf("%s: got %s", where, quote(got[i:])))
}

// asciiSpace reports whether c is ASCII white space.
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// trailingSpace is what lines drops at the end of each line.
const trailingSpace = " \t\r\v\f"

// lineReader yields the lines of a text for the line comparators: CRLF
// counts as LF, trailing white space on each line and trailing empty lines
// are dropped. It never copies the input.
type lineReader struct {
	rest []byte
	done bool
}

func newLineReader(b []byte) *lineReader {
	end := len(b)
	for end > 0 && (asciiSpace(b[end-1])) {
		end--
	}
	return &lineReader{rest: b[:end], done: end == 0}
}

// next returns the next line; ok is false at the end.
func (r *lineReader) next() (line []byte, ok bool) {
	if r.done {
		return nil, false
	}
	i := bytes.IndexByte(r.rest, '\n')
	if i < 0 {
		line, r.rest, r.done = r.rest, nil, true
	} else {
		line, r.rest = r.rest[:i], r.rest[i+1:]
	}
	return bytes.TrimRight(line, trailingSpace), true
}

// count returns how many lines remain, consuming them.
func (r *lineReader) count() int {
	n := 0
	for _, ok := r.next(); ok; _, ok = r.next() {
		n++
	}
	return n
}

// foldCase maps every letter of b through Unicode simple case mapping
// (upper, then lower), keeping invalid UTF-8 bytes as they are.
func foldCase(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = append(out, b[0])
		} else {
			out = utf8.AppendRune(out, unicode.ToLower(unicode.ToUpper(r)))
		}
		b = b[size:]
	}
	return out
}

func textEqual(a, b []byte, ignoreCase bool) bool {
	if bytes.Equal(a, b) {
		return true
	}
	return ignoreCase && bytes.Equal(foldCase(a), foldCase(b))
}

// compareLines compares line by line.
func compareLines(got, want []byte, ignoreCase bool) *finding {
	g, w := newLineReader(got), newLineReader(want)
	for n := 1; ; n++ {
		gl, gok := g.next()
		wl, wok := w.next()
		where := "line " + strconv.Itoa(n)
		switch {
		case !gok && !wok:
			return nil
		case !gok:
			return differsAt(where, fmt.Sprintf("output ends early: got %s, want %s", plural(n-1, "line"), plural(n+w.count(), "line")))
		case !wok:
			return differsAt(where, fmt.Sprintf("%s: unexpected extra line %s", where, quote(gl)))
		case !textEqual(gl, wl, ignoreCase):
			return differsAt(where, fmt.Sprintf("%s: got %s", where, quote(gl)))
		}
	}
}

// tokenReader yields the tokens of a text separated by ASCII white space.
type tokenReader struct{ rest []byte }

func (r *tokenReader) next() (tok []byte, ok bool) {
	i := 0
	for i < len(r.rest) && asciiSpace(r.rest[i]) {
		i++
	}
	if i == len(r.rest) {
		r.rest = nil
		return nil, false
	}
	j := i
	for j < len(r.rest) && !asciiSpace(r.rest[j]) {
		j++
	}
	tok, r.rest = r.rest[i:j], r.rest[j:]
	return tok, true
}

func (r *tokenReader) count() int {
	n := 0
	for _, ok := r.next(); ok; _, ok = r.next() {
		n++
	}
	return n
}

// compareTokens compares white-space-separated tokens.
func compareTokens(got, want []byte, ignoreCase bool) *finding {
	g, w := &tokenReader{got}, &tokenReader{want}
	for n := 1; ; n++ {
		gt, gok := g.next()
		wt, wok := w.next()
		where := "token " + strconv.Itoa(n)
		switch {
		case !gok && !wok:
			return nil
		case !gok:
			return differsAt(where, fmt.Sprintf("output ends early: got %s, want %s", plural(n-1, "token"), plural(n+w.count(), "token")))
		case !wok:
			return differsAt(where, fmt.Sprintf("%s: unexpected extra token %s", where, quote(gt)))
		case !textEqual(gt, wt, ignoreCase):
			return differsAt(where, fmt.Sprintf("%s: got %s", where, quote(gt)))
		}
	}
}

// compareUnorderedLines compares the multisets of lines (normalised as for
// lines). It reports the first candidate line, in output order, that the
// expected lines cannot account for, or else the end of the output.
func compareUnorderedLines(got, want []byte, ignoreCase bool) *finding {
	key := func(b []byte) string {
		if ignoreCase {
			return string(foldCase(b))
		}
		return string(b)
	}
	counts := map[string]int{}
	nWant := 0
	w := newLineReader(want)
	for l, ok := w.next(); ok; l, ok = w.next() {
		counts[key(l)]++
		nWant++
	}
	g := newLineReader(got)
	nGot := 0
	for l, ok := g.next(); ok; l, ok = g.next() {
		nGot++
		k := key(l)
		if counts[k] == 0 {
			return differsAt("line "+strconv.Itoa(nGot), fmt.Sprintf("line %d: %s is not expected (or appears more often than expected)", nGot, quote(l)))
		}
		counts[k]--
	}
	if nGot != nWant {
		return differsAt("line "+strconv.Itoa(nGot+1), fmt.Sprintf("output ends early: got %s, want %s", plural(nGot, "line"), plural(nWant, "line")))
	}
	return nil
}

// checkExpected reports, as an error wrapping ErrExpected, an expected
// value its comparator cannot use. The judge checks every expected value
// before it looks at the candidate's output, so that a broken task is
// always an error and never depends on what the candidate did.
func checkExpected(c Comparator, want []byte) error {
	switch c.Kind {
	case KindNumbers:
		return checkNumbers(want, c.tolerance())
	case KindJSON:
		if _, err := parseJSON(want); err != nil {
			return fmt.Errorf("%w: json: %v", ErrExpected, err)
		}
	case KindCSV:
		_, err := readExpectedCSV(want, c)
		return err
	}
	return nil
}
