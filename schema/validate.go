package schema

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// ID is the $id of the version-1 verdict schema and the required value of
// a verdict's "schema" field.
const ID = "https://strictgrade.dev/schema/verdict/v1"

//go:embed verdict-v1.json
var schemaJSON []byte

var schemaDigest = func() string {
	sum := sha256.Sum256(schemaJSON)
	return hex.EncodeToString(sum[:])
}()

// JSON returns a copy of the embedded verdict schema (verdict-v1.json).
func JSON() []byte { return bytes.Clone(schemaJSON) }

// Digest returns the lowercase-hex sha256 of the embedded schema bytes; a
// signed statement records it next to ID.
func Digest() string { return schemaDigest }

// compiled holds the compiled schema and its parsed form (used to explain
// additionalProperties and required errors property by property).
type compiled struct {
	sch *jsonschema.Schema
	doc any
}

var loadSchema = sync.OnceValue(func() compiled {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("schema: refusing to load %q: no remote references", s)
	}
	if err := c.AddResource(ID, bytes.NewReader(schemaJSON)); err != nil {
		panic("schema: embedded schema does not load: " + err.Error())
	}
	sch, err := c.Compile(ID)
	if err != nil {
		panic("schema: embedded schema does not compile: " + err.Error())
	}
	var doc any
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		panic("schema: embedded schema is not JSON: " + err.Error())
	}
	return compiled{sch: sch, doc: doc}
})

// Validate parses data as a version-1 verdict. It refuses input over
// MaxSize, malformed JSON, trailing data, duplicate keys, invalid UTF-8,
// non-finite or non-integer numbers, every violation of the schema, and a
// verdict that contradicts itself (repeated case ids, a tests_hash that is
// not TestsHash of the case ids). On failure the error is a
// *ValidationError listing every problem with its JSON pointer.
func Validate(data []byte) (*Verdict, error) {
	val, probs := readStrict(data, readOptions{limit: MaxSize, integers: true})
	if val == nil && len(probs.items) > 0 {
		return nil, problemsError(probs)
	}
	c := loadSchema()
	if err := c.sch.Validate(val); err != nil {
		ve, ok := err.(*jsonschema.ValidationError)
		if !ok {
			probs.add(Problem{Rule: "/", Err: ErrSchema, Message: err.Error()})
		} else {
			c.explain(ve, val, &probs)
		}
	}
	if len(probs.items) > 0 || probs.omitted > 0 {
		return nil, problemsError(probs)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var v Verdict
	if err := dec.Decode(&v); err != nil {
		// The schema accepted what the Go types cannot hold: a bug that a
		// test guards against, reported rather than hidden.
		probs.add(Problem{Rule: "/", Err: ErrSchema, Message: "schema and Go types disagree: " + err.Error()})
		return nil, problemsError(probs)
	}
	v.check(&probs)
	if err := problemsError(probs); err != nil {
		return nil, err
	}
	return &v, nil
}

// check adds the problems JSON Schema cannot express.
func (v *Verdict) check(probs *problemList) {
	seen := make(map[string]int, len(v.Cases))
	ids := make([]string, len(v.Cases))
	for i, c := range v.Cases {
		ids[i] = c.ID
		if j, dup := seen[c.ID]; dup {
			probs.add(Problem{Location: "/cases/" + strconv.Itoa(i) + "/id", Rule: "unique-case-id", Err: ErrInconsistent,
				Message: fmt.Sprintf("case id already used by /cases/%d", j)})
			continue
		}
		seen[c.ID] = i
	}
	if want := TestsHash(ids); v.TestsHash != want {
		probs.add(Problem{Location: "/tests_hash", Rule: "tests-hash", Err: ErrInconsistent,
			Message: "is not the sha256 of the sorted case ids (want " + want + ")"})
	}
}

// Marshal validates v and returns its JSON encoding. Nil Cases and
// Compat.DroppedHunks are written as empty arrays; HTML characters are not
// escaped. v is not modified.
func Marshal(v *Verdict) ([]byte, error) {
	c := *v
	if c.Cases == nil {
		c.Cases = []Case{}
	}
	if c.Compat != nil && c.Compat.DroppedHunks == nil {
		cc := *c.Compat
		cc.DroppedHunks = []DroppedHunk{}
		c.Compat = &cc
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		return nil, fmt.Errorf("schema: marshal verdict: %w", err)
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if _, err := Validate(data); err != nil {
		return nil, err
	}
	return data, nil
}

// explain turns the leaves of a jsonschema error tree into problems.
func (c compiled) explain(ve *jsonschema.ValidationError, instance any, probs *problemList) {
	if len(ve.Causes) > 0 {
		for _, cause := range ve.Causes {
			c.explain(cause, instance, probs)
		}
		return
	}
	loc := normalizePointer(ve.InstanceLocation)
	rule := ve.AbsoluteKeywordLocation
	if i := strings.IndexByte(rule, '#'); i >= 0 {
		rule = rule[i+1:]
	}
	rule = normalizePointer(rule)
	why := ""
	if d := c.allOfDescription(rule); d != "" {
		why = " (" + d + ")"
	}
	segs := strings.Split(rule, "/")
	last := segs[len(segs)-1]
	obj, _ := lookup(instance, loc).(map[string]any)
	switch {
	case last == "additionalProperties" && obj != nil:
		props, _ := lookup(c.doc, strings.TrimSuffix(rule, "/additionalProperties")+"/properties").(map[string]any)
		var extra []string
		for k := range obj {
			if _, ok := props[k]; !ok {
				extra = append(extra, k)
			}
		}
		slices.Sort(extra)
		for _, k := range extra {
			probs.add(Problem{Location: loc + "/" + escapeToken(k), Rule: rule, Err: ErrSchema,
				Message: fmt.Sprintf("unknown property %s", strconv.Quote(k)) + why})
		}
		if len(extra) > 0 {
			return
		}
	case last == "not" && obj != nil:
		// {"not": {"required": [p]}} forbids property p; point at it.
		forbidden, _ := lookup(c.doc, rule+"/required").([]any)
		if len(forbidden) == 1 {
			if k, ok := forbidden[0].(string); ok {
				if _, present := obj[k]; present {
					probs.add(Problem{Location: loc + "/" + escapeToken(k), Rule: rule, Err: ErrSchema,
						Message: fmt.Sprintf("property %s is not allowed here", strconv.Quote(k)) + why})
					return
				}
			}
		}
	case last == "required" && obj != nil:
		req, _ := lookup(c.doc, rule).([]any)
		n := 0
		for _, r := range req {
			k, _ := r.(string)
			if _, ok := obj[k]; !ok {
				n++
				probs.add(Problem{Location: loc + "/" + escapeToken(k), Rule: rule, Err: ErrSchema,
					Message: fmt.Sprintf("required property %s is missing", strconv.Quote(k)) + why})
			}
		}
		if n > 0 {
			return
		}
	}
	probs.add(Problem{Location: loc, Rule: rule, Err: ErrSchema, Message: ve.Message + why})
}

// allOfDescription returns the description of the top-level allOf entry a
// rule belongs to, which says in words what the conditional demands.
func (c compiled) allOfDescription(rule string) string {
	if !strings.HasPrefix(rule, "/allOf/") {
		return ""
	}
	parts := strings.SplitN(rule, "/", 4)
	if len(parts) < 3 {
		return ""
	}
	m, _ := lookup(c.doc, "/allOf/"+parts[2]).(map[string]any)
	d, _ := m["description"].(string)
	return d
}

// normalizePointer turns a jsonschema/v5 location, whose tokens are also
// URL-path-escaped, into a plain RFC 6901 pointer.
func normalizePointer(p string) string {
	if p == "" || p == "/" {
		return ""
	}
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range toks {
		if u, err := url.PathUnescape(t); err == nil {
			t = u
		}
		toks[i] = escapeToken(unescapeToken(t))
	}
	return "/" + strings.Join(toks, "/")
}

// lookup resolves an RFC 6901 pointer in a generic JSON value.
func lookup(v any, ptr string) any {
	if ptr == "" {
		return v
	}
	for _, t := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		t = unescapeToken(t)
		switch x := v.(type) {
		case map[string]any:
			v = x[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := strings.Compare(a.Location, b.Location); c != 0 {
			return c
		}
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
}
