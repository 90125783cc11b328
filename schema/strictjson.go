package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the strict JSON reader.
const (
	// MaxSize is the largest verdict Validate accepts, in bytes.
	MaxSize = 4 << 20
	// MaxDepth is the deepest nesting of objects and arrays accepted.
	MaxDepth = 32
	// MaxProblems is how many problems a ValidationError keeps.
	MaxProblems = 256
)

// CheckJSON reports whether data is exactly one strict JSON value of at most
// limit bytes: valid UTF-8 without unpaired surrogate escapes, no object
// naming a key twice (at any depth), finite numbers only, nesting at most
// MaxDepth, nothing but white space after the value. It returns nil or a
// *ValidationError listing every problem found. The attest package uses it
// for signed payloads, where two parsers must never see two documents.
func CheckJSON(data []byte, limit int) error {
	_, probs := readStrict(data, readOptions{limit: limit})
	err := problemsError(probs)
	if ve, ok := err.(*ValidationError); ok {
		ve.what = "JSON document"
	}
	return err
}

type readOptions struct {
	limit int
	// integers refuses numbers that are not plain int64 literals.
	integers bool
}

// problemList collects problems up to MaxProblems.
type problemList struct {
	items   []Problem
	omitted int
}

func (l *problemList) add(p Problem) {
	if len(l.items) >= MaxProblems {
		l.omitted++
		return
	}
	l.items = append(l.items, p)
}

func problemsError(l problemList) error {
	if len(l.items) == 0 && l.omitted == 0 {
		return nil
	}
	sortProblems(l.items)
	return &ValidationError{Problems: l.items, Omitted: l.omitted}
}

// frame is an open object or array during readStrict.
type frame struct {
	ptr       string
	obj       map[string]any
	arr       []any
	isObj     bool
	expectKey bool
	key       string
}

func (f *frame) childPtr() string {
	if f.isObj {
		return f.ptr + "/" + escapeToken(f.key)
	}
	return f.ptr + "/" + strconv.Itoa(len(f.arr))
}

// readStrict parses data into a generic value (objects as map[string]any,
// numbers as json.Number) while collecting every problem JSON Schema cannot
// see. The value is nil when the input could not be parsed at all.
func readStrict(data []byte, opt readOptions) (any, problemList) {
	var probs problemList
	if len(data) > opt.limit {
		probs.add(Problem{Rule: "size", Err: ErrTooLarge,
			Message: fmt.Sprintf("input is %d bytes, more than the limit of %d", len(data), opt.limit)})
		return nil, probs
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var (
		stack []*frame
		root  any
		done  bool
		prev  int64
	)
	// place stores a finished value in its parent, or as the root.
	place := func(v any) {
		if len(stack) == 0 {
			root, done = v, true
			return
		}
		top := stack[len(stack)-1]
		if top.isObj {
			top.obj[top.key] = v
			top.expectKey = true
		} else {
			top.arr = append(top.arr, v)
		}
	}
	for !done {
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		// loc is the pointer of the value being read; it is built only
		// when needed, since problems are rare.
		loc := func() string {
			switch {
			case top == nil:
				return ""
			case top.expectKey:
				return top.ptr
			}
			return top.childPtr()
		}
		tok, err := dec.Token()
		if err != nil {
			probs.add(syntaxProblem(data, prev, loc(), err))
			return nil, probs
		}
		off := dec.InputOffset()
		raw := data[prev:off]
		prev = off

		if top != nil && top.isObj && top.expectKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				place(top.obj)
				continue
			}
			key, _ := tok.(string) // the decoder only yields strings here
			keyPtr := func() string { return top.ptr + "/" + escapeToken(key) }
			checkString(&probs, keyPtr, key, raw)
			if _, dup := top.obj[key]; dup {
				probs.add(Problem{Location: keyPtr(), Rule: "duplicate-key", Err: ErrDuplicateKey,
					Message: fmt.Sprintf("key %s appears more than once in its object", strconv.Quote(key))})
			}
			top.key = key
			top.expectKey = false
			top.obj[key] = nil // mark as seen, so a repeat is a duplicate
			continue
		}

		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= MaxDepth {
					probs.add(Problem{Location: loc(), Rule: "depth", Err: ErrTooDeep,
						Message: fmt.Sprintf("nested deeper than %d levels", MaxDepth)})
					return nil, probs
				}
				f := &frame{ptr: loc(), isObj: t == '{'}
				if f.isObj {
					f.obj = map[string]any{}
					f.expectKey = true
				} else {
					f.arr = []any{}
				}
				stack = append(stack, f)
			case ']':
				stack = stack[:len(stack)-1]
				place(top.arr)
			}
		case string:
			checkString(&probs, loc, t, raw)
			place(t)
		case json.Number:
			checkNumber(&probs, loc, t, opt.integers)
			place(t)
		default: // bool, nil
			place(t)
		}
	}
	if rest := bytes.TrimLeft(data[prev:], " \t\r\n"); len(rest) > 0 {
		probs.add(Problem{Rule: "trailing-data", Err: ErrTrailingData,
			Message: fmt.Sprintf("%d byte(s) of data follow the JSON value, from offset %d", len(rest), len(data)-len(rest))})
		return nil, probs
	}
	return root, probs
}

// syntaxProblem describes a decoder error at loc. A bare NaN or Infinity
// is reported as a non-finite number rather than as a syntax error.
func syntaxProblem(data []byte, prev int64, loc string, err error) Problem {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return Problem{Location: loc, Rule: "syntax", Err: ErrSyntax, Message: "unexpected end of input"}
	}
	start := bytes.TrimLeft(data[prev:], " \t\r\n,:")
	for _, lit := range []string{"NaN", "Infinity", "-Infinity", "+Infinity", "-NaN", "+NaN"} {
		if bytes.HasPrefix(start, []byte(lit)) {
			return Problem{Location: loc, Rule: "non-finite", Err: ErrNonFinite,
				Message: lit + " is not a JSON number"}
		}
	}
	msg := err.Error()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		msg = fmt.Sprintf("%s (offset %d)", se.Error(), se.Offset)
	}
	return Problem{Location: loc, Rule: "syntax", Err: ErrSyntax, Message: msg}
}

func checkNumber(probs *problemList, loc func() string, n json.Number, integers bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	if math.IsInf(f, 0) || math.IsNaN(f) || (err != nil && !errors.Is(err, strconv.ErrRange)) {
		probs.add(Problem{Location: loc(), Rule: "non-finite", Err: ErrNonFinite,
			Message: fmt.Sprintf("number %s is not finite in float64", truncate(string(n), 40))})
		return
	}
	if integers {
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			probs.add(Problem{Location: loc(), Rule: "integer", Err: ErrNotInteger,
				Message: fmt.Sprintf("number %s is not a plain 64-bit integer", truncate(string(n), 40))})
		}
	}
}

// checkString reports invalid UTF-8 in the raw literal of s, or an unpaired
// surrogate escape; the decoder turns both into U+FFFD silently.
func checkString(probs *problemList, loc func() string, s string, raw []byte) {
	if !strings.ContainsRune(s, utf8.RuneError) {
		return
	}
	switch {
	case !utf8.Valid(raw):
		probs.add(Problem{Location: loc(), Rule: "utf8", Err: ErrInvalidUTF8, Message: "string is not valid UTF-8"})
	case hasLoneSurrogate(raw):
		probs.add(Problem{Location: loc(), Rule: "utf8", Err: ErrInvalidUTF8, Message: "string has an unpaired surrogate escape"})
	}
}

// hasLoneSurrogate scans the first string literal in raw for a \uD800-\uDFFF
// escape that is not a high surrogate followed by a low one.
func hasLoneSurrogate(raw []byte) bool {
	i := bytes.IndexByte(raw, '"')
	if i < 0 {
		return false
	}
	s := raw[i+1:]
	hex4 := func(j int) (rune, bool) {
		if j+6 > len(s) || s[j] != '\\' || s[j+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(s[j+2:j+6]), 16, 32)
		return rune(v), err == nil
	}
	for j := 0; j < len(s); j++ {
		switch s[j] {
		case '"':
			return false
		case '\\':
			r, ok := hex4(j)
			if !ok {
				j++ // skip the escaped character
				continue
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return true
			case r >= 0xD800 && r <= 0xDBFF:
				low, ok := hex4(j + 6)
				if !ok || low < 0xDC00 || low > 0xDFFF {
					return true
				}
				j += 11
			default:
				j += 5
			}
		}
	}
	return false
}

// escapeToken escapes one JSON pointer reference token (RFC 6901).
func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapeToken(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
