package schema

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. A *ValidationError matches ErrInvalid and the sentinel of
// each problem it holds, so errors.Is(err, ErrDuplicateKey) asks "was one of
// the problems a duplicate key?".
var (
	// ErrInvalid: the document is not a valid verdict.
	ErrInvalid = errors.New("schema: invalid verdict")
	// ErrTooLarge: the input exceeds MaxSize.
	ErrTooLarge = errors.New("schema: input too large")
	// ErrSyntax: the input is not JSON.
	ErrSyntax = errors.New("schema: malformed JSON")
	// ErrTrailingData: bytes other than white space follow the document.
	ErrTrailingData = errors.New("schema: trailing data after JSON value")
	// ErrDuplicateKey: an object names the same key twice.
	ErrDuplicateKey = errors.New("schema: duplicate object key")
	// ErrNonFinite: a number is NaN, an infinity, or overflows float64.
	ErrNonFinite = errors.New("schema: non-finite number")
	// ErrNotInteger: a number in a verdict is written with a fraction or
	// exponent, or does not fit in int64.
	ErrNotInteger = errors.New("schema: number is not a plain integer")
	// ErrInvalidUTF8: a string holds invalid UTF-8 or an unpaired
	// surrogate escape.
	ErrInvalidUTF8 = errors.New("schema: invalid UTF-8")
	// ErrTooDeep: objects and arrays are nested deeper than MaxDepth.
	ErrTooDeep = errors.New("schema: nesting too deep")
	// ErrSchema: a rule of the JSON Schema is violated.
	ErrSchema = errors.New("schema: schema rule violated")
	// ErrInconsistent: the document is schema-valid but contradicts itself
	// (a repeated case id, a tests_hash that is not the hash of the cases,
	// a case_order that is not a permutation of the case indices).
	ErrInconsistent = errors.New("schema: inconsistent verdict")
	// ErrUnknownValue: ParseOutcome or ParseTier got an unknown spelling.
	ErrUnknownValue = errors.New("schema: unknown value")
)

// Problem is one reason a document was refused.
type Problem struct {
	// Location is the JSON pointer (RFC 6901) of the offending value; ""
	// is the whole document. For a missing required property it is where
	// the property should be; for an unknown one, the property itself.
	Location string `json:"location"`
	// Rule names what was broken: the schema keyword's location in the
	// schema the document was checked against (e.g.
	// "/$defs/case/properties/outcome/enum"), or one of "size", "syntax",
	// "trailing-data", "duplicate-key", "non-finite", "integer", "utf8",
	// "depth", "unique-case-id", "tests-hash", "case-order".
	Rule string `json:"rule"`
	// Message explains the problem in a few words.
	Message string `json:"message"`
	// Err is the sentinel for the problem's class.
	Err error `json:"-"`
}

func (p Problem) String() string {
	loc := p.Location
	if loc == "" {
		loc = "(document)"
	}
	return loc + ": " + p.Message
}

// ValidationError lists every problem found in a document, sorted by
// location. At most MaxProblems are kept; Omitted counts the rest.
type ValidationError struct {
	Problems []Problem
	Omitted  int
	// what names the document in messages; "" means a verdict.
	what string
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	n := len(e.Problems) + e.Omitted
	what := e.what
	if what == "" {
		what = "verdict"
	}
	fmt.Fprintf(&b, "schema: invalid %s: %d problem", what, n)
	if n != 1 {
		b.WriteString("s")
	}
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "; and %d more", e.Omitted)
	}
	return b.String()
}

// Unwrap returns ErrInvalid followed by the distinct sentinels of the
// problems.
func (e *ValidationError) Unwrap() []error {
	errs := []error{ErrInvalid}
	for _, p := range e.Problems {
		if p.Err != nil && !containsErr(errs, p.Err) {
			errs = append(errs, p.Err)
		}
	}
	return errs
}

func containsErr(errs []error, target error) bool {
	for _, e := range errs {
		if e == target {
			return true
		}
	}
	return false
}
