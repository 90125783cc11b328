package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the strict JSON reader.
const (
	// MaxJSONSize is the largest JSON document the json comparator reads.
	MaxJSONSize = 8 << 20
	// MaxJSONDepth is the deepest nesting of arrays and objects it accepts.
	MaxJSONDepth = 256
)

// parseJSON reads exactly one JSON value strictly: valid UTF-8 without
// unpaired surrogate escapes, no object naming a key twice, numbers within
// range, nesting at most MaxJSONDepth, nothing but white space after the
// value, at most MaxJSONSize bytes (see parseJSONLimit). Objects become map[string]any, arrays
// []any (never nil), numbers json.Number. The error says what and where,
// by byte offset, without quoting the input.
func parseJSON(data []byte) (any, error) { return parseJSONLimit(data, MaxJSONSize) }

// jsonError is a document parseJSON refuses. Its message may quote an
// object key of the document; what and off never do.
type jsonError struct {
	// what says what is wrong, in a fixed vocabulary.
	what string
	// off is the byte offset of the problem, or -1.
	off int64
	msg string
}

func (e *jsonError) Error() string { return e.msg }

func jsonErrorf(what string, off int64, format string, args ...any) error {
	return &jsonError{what: what, off: off, msg: fmt.Sprintf(format, args...)}
}

// parseJSONLimit is parseJSON with another size limit. Its errors are
// *jsonError.
func parseJSONLimit(data []byte, limit int) (any, error) {
	if len(data) > limit {
		return nil, jsonErrorf("too large", -1, "%d bytes is more than the limit of %d", len(data), limit)
	}
	if !utf8.Valid(data) {
		return nil, jsonErrorf("not valid UTF-8", int64(firstInvalidUTF8(data)), "not valid UTF-8")
	}
	type frame struct {
		obj map[string]any
		arr []any
		key string
		// wantKey: inside an object, the next token is a key or '}'.
		wantKey bool
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var (
		stack []*frame
		prev  int64
	)
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, syntaxError(err, prev, len(data))
		}
		off := dec.InputOffset()
		raw, start := data[prev:off], prev
		prev = off

		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		// done is the value completed by this token: a scalar, or the
		// container it closes.
		var done any
		if top != nil && top.obj != nil && top.wantKey {
			if d, ok := tok.(json.Delim); !ok || d != '}' {
				key, _ := tok.(string) // the decoder yields only strings here
				if err := checkString(key, raw); err != nil {
					return nil, jsonErrorf("unpaired surrogate escape", start, "object key at offset %d: %v", start, err)
				}
				if _, dup := top.obj[key]; dup {
					at := start + int64(bytes.IndexByte(raw, '"'))
					return nil, jsonErrorf("duplicate object key", at, "duplicate object key %s at offset %d", quoteString(key), at)
				}
				top.obj[key] = nil
				top.key, top.wantKey = key, false
				continue
			}
			stack = stack[:len(stack)-1]
			done = top.obj
		} else {
			switch t := tok.(type) {
			case json.Delim:
				if t == ']' {
					stack = stack[:len(stack)-1]
					done = top.arr
					break
				}
				// '{' or '[': '}' only ever comes when a key is due.
				if len(stack) >= MaxJSONDepth {
					return nil, jsonErrorf("nested too deep", start, "nested deeper than %d levels at offset %d", MaxJSONDepth, start)
				}
				f := &frame{}
				if t == '{' {
					f.obj, f.wantKey = map[string]any{}, true
				} else {
					f.arr = []any{}
				}
				stack = append(stack, f)
				continue
			case string:
				if err := checkString(t, raw); err != nil {
					return nil, jsonErrorf("unpaired surrogate escape", start, "string at offset %d: %v", start, err)
				}
				done = t
			case json.Number:
				if _, err := parseDecimal(string(t)); err != nil {
					what := "malformed number"
					if errors.Is(err, errRange) {
						what = "number out of range"
					}
					return nil, jsonErrorf(what, start, "number at offset %d: %v", start, err)
				}
				done = t
			default: // bool or nil
				done = t
			}
		}
		if len(stack) == 0 {
			if rest := bytes.TrimLeft(data[prev:], " \t\r\n"); len(rest) > 0 {
				off := len(data) - len(rest)
				return nil, jsonErrorf("data after the JSON value", int64(off), "data after the JSON value at offset %d", off)
			}
			return done, nil
		}
		parent := stack[len(stack)-1]
		if parent.obj != nil {
			parent.obj[parent.key] = done
			parent.wantKey = true
		} else {
			parent.arr = append(parent.arr, done)
		}
	}
}

// syntaxError describes a decoder error without quoting the input.
func syntaxError(err error, prev int64, size int) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return jsonErrorf("syntax error", se.Offset, "syntax error at offset %d", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return jsonErrorf("unexpected end of input", int64(size), "unexpected end of input")
	}
	return jsonErrorf("syntax error", prev, "syntax error after offset %d", prev)
}

// firstInvalidUTF8 returns the offset of the first byte of b that does not
// start a valid UTF-8 sequence, or len(b).
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// jsonSyntax describes candidate bytes parseJSON refused: the position and
// kind of the problem for the digest rendering, the parser's message (which
// may quote a key) for the detailed one.
func jsonSyntax(err error) *finding {
	f := &finding{what: "not valid JSON", detail: "not valid JSON: " + err.Error()}
	var je *jsonError
	if errors.As(err, &je) {
		f.what += " (" + je.what + ")"
		if je.off >= 0 {
			f.at = "byte " + strconv.FormatInt(je.off, 10)
		}
	}
	return f
}

// checkString refuses a string literal with an unpaired surrogate escape,
// which the decoder would silently turn into U+FFFD.
func checkString(s string, raw []byte) error {
	if !strings.ContainsRune(s, utf8.RuneError) {
		return nil
	}
	i := bytes.IndexByte(raw, '"')
	if i < 0 {
		return nil
	}
	lit := raw[i+1:]
	hex4 := func(j int) (rune, bool) {
		if j+6 > len(lit) || lit[j] != '\\' || lit[j+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(lit[j+2:j+6]), 16, 32)
		return rune(v), err == nil
	}
	for j := 0; j < len(lit); j++ {
		switch lit[j] {
		case '"':
			return nil
		case '\\':
			r, ok := hex4(j)
			switch {
			case !ok:
				j++ // a one-character escape
			case r >= 0xdc00 && r <= 0xdfff:
				return errors.New("unpaired surrogate escape")
			case r >= 0xd800 && r <= 0xdbff:
				low, ok := hex4(j + 6)
				if !ok || low < 0xdc00 || low > 0xdfff {
					return errors.New("unpaired surrogate escape")
				}
				j += 11
			default:
				j += 5
			}
		}
	}
	return nil
}

// jsonType names the JSON type of a parsed value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// describe names a candidate value briefly for a reason.
func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(t)
	case json.Number:
		return "number " + quoteString(string(t))
	case string:
		return "string " + quoteString(t)
	case []any:
		return "an array of " + plural(len(t), "element")
	case map[string]any:
		return "an object with " + plural(len(t), "key")
	}
	return jsonType(v)
}
