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

// parseJSONLimit is parseJSON with another size limit.
func parseJSONLimit(data []byte, limit int) (any, error) {
	if len(data) > limit {
		return nil, fmt.Errorf("%d bytes is more than the limit of %d", len(data), limit)
	}
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
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
			return nil, syntaxError(err, prev)
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
					return nil, fmt.Errorf("object key at offset %d: %v", start, err)
				}
				if _, dup := top.obj[key]; dup {
					at := start + int64(bytes.IndexByte(raw, '"'))
					return nil, fmt.Errorf("duplicate object key %s at offset %d", quoteString(key), at)
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
					return nil, fmt.Errorf("nested deeper than %d levels at offset %d", MaxJSONDepth, start)
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
					return nil, fmt.Errorf("string at offset %d: %v", start, err)
				}
				done = t
			case json.Number:
				if _, err := parseDecimal(string(t)); err != nil {
					return nil, fmt.Errorf("number at offset %d: %v", start, err)
				}
				done = t
			default: // bool or nil
				done = t
			}
		}
		if len(stack) == 0 {
			if rest := bytes.TrimLeft(data[prev:], " \t\r\n"); len(rest) > 0 {
				return nil, fmt.Errorf("data after the JSON value at offset %d", len(data)-len(rest))
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
func syntaxError(err error, prev int64) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("syntax error at offset %d", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("unexpected end of input")
	}
	return fmt.Errorf("syntax error after offset %d", prev)
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
