package judge

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// tolerance is the numeric part of a Comparator.
type tolerance struct {
	abs, rel float64
	allowNaN bool
}

// exact reports whether numbers must denote the same decimal value.
func (t tolerance) exact() bool { return t.abs == 0 && t.rel == 0 }

// maxExponent bounds the decimal exponent of a number literal. Beyond it a
// literal is out of range: far outside float64, and too large to compare
// exactly without big arithmetic.
const maxExponent = 1_000_000_000_000_000

var (
	errNotNumber = errors.New("not a number")
	errRange     = errors.New("exponent out of range")
)

// decimal is a finite number in canonical form: its value is digits×10^exp
// with no leading or trailing zeros in digits. Zero (of either sign) has
// empty digits and exp 0, so two decimals are equal as Go values exactly
// when they denote the same number.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

func (d decimal) String() string {
	sign := "+"
	if d.neg {
		sign = "-"
	}
	return sign + d.digits + "e" + strconv.FormatInt(d.exp, 10)
}

// parseDecimal parses [+-]? (D+ (.D*)? | .D+) ([eE][+-]?D+)? where D is an
// ASCII digit. JSON numbers are a subset of this grammar.
func parseDecimal(s string) (decimal, error) {
	var d decimal
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[intStart:i]
	fracPart := ""
	if i < len(s) && s[i] == '.' {
		i++
		fracStart := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		fracPart = s[fracStart:i]
	}
	if intPart == "" && fracPart == "" {
		return decimal{}, errNotNumber
	}
	var e int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		expStart := i
		for i < len(s) && isDigit(s[i]) {
			if e <= maxExponent {
				e = e*10 + int64(s[i]-'0')
			}
			i++
		}
		if i == expStart {
			return decimal{}, errNotNumber
		}
		if eneg {
			e = -e
		}
	}
	if i != len(s) {
		return decimal{}, errNotNumber
	}
	if e > maxExponent || e < -maxExponent {
		return decimal{}, errRange
	}
	digits := strings.TrimLeft(intPart+fracPart, "0")
	trimmed := strings.TrimRight(digits, "0")
	if trimmed == "" {
		return decimal{}, nil // zero; its sign does not matter
	}
	d.digits = trimmed
	d.exp = e - int64(len(fracPart)) + int64(len(digits)-len(trimmed))
	return d, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numClass separates finite numbers from the special values.
type numClass uint8

const (
	finite numClass = iota
	posInf
	negInf
	notANumber
)

// number is a parsed numeric token.
type number struct {
	class numClass
	dec   decimal // finite only
	text  string  // the literal, for float64 conversion
}

// parseNumber parses a numeric token: a decimal literal, or (ignoring
// case, with an optional sign) nan, inf or infinity. Hexadecimal floats,
// digit separators and the like are not numbers here.
func parseNumber(s string) (number, error) {
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	if len(body) <= len("infinity") {
		switch strings.ToLower(body) {
		case "nan":
			return number{class: notANumber, text: s}, nil
		case "inf", "infinity":
			if s[0] == '-' {
				return number{class: negInf, text: s}, nil
			}
			return number{class: posInf, text: s}, nil
		}
	}
	d, err := parseDecimal(s)
	if err != nil {
		return number{}, err
	}
	return number{class: finite, dec: d, text: s}, nil
}

// float returns the float64 nearest to a finite number; ok is false when it
// is outside the float64 range.
func (n number) float() (f float64, ok bool) {
	f, err := strconv.ParseFloat(n.text, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// equal compares two numbers under t. It is symmetric.
func (t tolerance) equal(a, b number) bool {
	if a.class == notANumber || b.class == notANumber {
		return t.allowNaN && a.class == b.class
	}
	if a.class != finite || b.class != finite {
		return a.class == b.class
	}
	if a.dec == b.dec {
		return true
	}
	if t.exact() {
		return false
	}
	fa, okA := a.float()
	fb, okB := b.float()
	if !okA || !okB {
		return false // beyond float64: only an exact match counts
	}
	return t.within(fa, fb)
}

// within applies the tolerance to two finite floats.
func (t tolerance) within(a, b float64) bool {
	if a == b {
		return true
	}
	d := math.Abs(a - b) // +Inf when the difference overflows: never within
	return d <= t.abs || d <= t.rel*math.Max(math.Abs(a), math.Abs(b))
}

// mismatch describes a candidate number that did not match.
func (t tolerance) mismatch(got number) string {
	switch {
	case got.class == notANumber && !t.allowNaN:
		return fmt.Sprintf("got %s, and NaN equals nothing (allow_nan is not set)", quoteString(got.text))
	case got.class == finite && !t.exact():
		return fmt.Sprintf("got %s, not within the tolerance", quoteString(got.text))
	}
	return "got " + quoteString(got.text)
}

// checkNumbers checks that every expected token is a usable number.
func checkNumbers(want []byte, t tolerance) error {
	r := &tokenReader{want}
	for n := 1; ; n++ {
		tok, ok := r.next()
		if !ok {
			return nil
		}
		if err := checkExpectedNumber(string(tok), t); err != nil {
			return fmt.Errorf("%w: numbers: token %d: %v", ErrExpected, n, err)
		}
	}
}

// checkExpectedNumber checks one expected numeric literal.
func checkExpectedNumber(s string, t tolerance) error {
	num, err := parseNumber(s)
	if err != nil {
		return err
	}
	if num.class == notANumber && !t.allowNaN {
		return errors.New("NaN can never match unless allow_nan is set")
	}
	return nil
}

// compareNumbers compares white-space-separated numbers.
func compareNumbers(got, want []byte, t tolerance) (*finding, error) {
	if err := checkNumbers(want, t); err != nil {
		return nil, err
	}
	g, w := &tokenReader{got}, &tokenReader{want}
	for n := 1; ; n++ {
		gt, gok := g.next()
		wt, wok := w.next()
		where := "token " + strconv.Itoa(n)
		switch {
		case !gok && !wok:
			return nil, nil
		case !gok:
			return differsAt(where, fmt.Sprintf("output ends early: got %s, want %s", plural(n-1, "number"), plural(n+w.count(), "number"))), nil
		case !wok:
			return differsAt(where, fmt.Sprintf("%s: unexpected extra token %s", where, quote(gt))), nil
		}
		wn, _ := parseNumber(string(wt)) // checked above
		gn, err := parseNumber(string(gt))
		switch {
		case errors.Is(err, errRange):
			return differsAt(where, fmt.Sprintf("%s: %s is out of range (%v)", where, quote(gt), err)), nil
		case err != nil:
			return differsAt(where, fmt.Sprintf("%s: %s is not a number", where, quote(gt))), nil
		}
		if !t.equal(gn, wn) {
			return differsAt(where, where+": "+t.mismatch(gn)), nil
		}
	}
}
