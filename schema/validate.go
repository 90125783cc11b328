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

// ID is the $id of the current verdict schema, version 4
// (verdict-v4.json), and the "schema" value of every verdict this build
// makes.
const ID = "https://strictgrade.dev/schema/verdict/v4"

// IDv3 is the $id of version 3 (verdict-v3.json). Version 4 added a
// case's CPU time and the limit a timeout met; Validate still accepts
// version-3 verdicts.
const IDv3 = "https://strictgrade.dev/schema/verdict/v3"

// IDv2 is the $id of version 2 (verdict-v2.json). Version 3 added a
// case's own reason_code; Validate still accepts version-2 verdicts.
const IDv2 = "https://strictgrade.dev/schema/verdict/v2"

// IDv1 is the $id of version 1 (verdict-v1.json). Version 2 added the
// disclosure and case_order fields; Validate still accepts version-1
// verdicts, so that verdicts signed by earlier builds keep verifying.
const IDv1 = "https://strictgrade.dev/schema/verdict/v1"

var (
	//go:embed verdict-v1.json
	schemaV1JSON []byte
	//go:embed verdict-v2.json
	schemaV2JSON []byte
	//go:embed verdict-v3.json
	schemaV3JSON []byte
	//go:embed verdict-v4.json
	schemaV4JSON []byte
)

// version is one embedded verdict schema.
type version struct {
	id     string
	json   []byte
	digest string
	load   func() compiled
}

// versions lists every schema Validate knows, oldest first. A schema file
// is never edited once released: a change is a new version, added here.
var versions = []*version{
	newVersion(IDv1, schemaV1JSON),
	newVersion(IDv2, schemaV2JSON),
	newVersion(IDv3, schemaV3JSON),
	newVersion(ID, schemaV4JSON),
}

func newVersion(id string, data []byte) *version {
	sum := sha256.Sum256(data)
	v := &version{id: id, json: data, digest: hex.EncodeToString(sum[:])}
	v.load = sync.OnceValue(func() compiled { return compile(id, data) })
	return v
}

// lookupVersion returns the embedded schema with the given $id.
func lookupVersion(id string) *version {
	for _, v := range versions {
		if v.id == id {
			return v
		}
	}
	return nil
}

// current is the schema new verdicts follow.
var current = lookupVersion(ID)

// Preload compiles the current verdict schema now, so that the first
// Validate does not spend the time; a grade calls it while its sandboxes
// start. Safe from any goroutine, and once compiled it does nothing.
func Preload() { current.load() }

// JSON returns a copy of the current verdict schema (verdict-v4.json).
func JSON() []byte { return bytes.Clone(current.json) }

// Digest returns the lowercase-hex sha256 of the current schema's bytes; a
// signed statement records it next to ID.
func Digest() string { return current.digest }

// Versions returns the $id of every verdict schema Validate accepts,
// oldest first; the last is ID.
func Versions() []string {
	ids := make([]string, len(versions))
	for i, v := range versions {
		ids[i] = v.id
	}
	return ids
}

// SchemaJSON returns a copy of the embedded schema whose $id is id.
func SchemaJSON(id string) ([]byte, bool) {
	v := lookupVersion(id)
	if v == nil {
		return nil, false
	}
	return bytes.Clone(v.json), true
}

// SchemaDigest returns the lowercase-hex sha256 of the embedded schema
// whose $id is id: the digest a statement signed for a verdict of that
// version records. It reports false for a schema this build does not know.
func SchemaDigest(id string) (string, bool) {
	v := lookupVersion(id)
	if v == nil {
		return "", false
	}
	return v.digest, true
}

// compiled holds a compiled schema and its parsed form (used to explain
// additionalProperties and required errors property by property).
type compiled struct {
	sch *jsonschema.Schema
	doc any
}

func compile(id string, data []byte) compiled {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("schema: refusing to load %q: no remote references", s)
	}
	if err := c.AddResource(id, bytes.NewReader(data)); err != nil {
		panic("schema: embedded schema " + id + " does not load: " + err.Error())
	}
	sch, err := c.Compile(id)
	if err != nil {
		panic("schema: embedded schema " + id + " does not compile: " + err.Error())
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		panic("schema: embedded schema " + id + " is not JSON: " + err.Error())
	}
	return compiled{sch: sch, doc: doc}
}

// versionOf picks the schema a parsed document is validated with: the one
// its "schema" field names, or the current one when it names none this
// build knows (whose rules then say what is wrong).
func versionOf(val any) *version {
	if obj, ok := val.(map[string]any); ok {
		if id, ok := obj["schema"].(string); ok {
			if v := lookupVersion(id); v != nil {
				return v
			}
		}
	}
	return current
}

// Validate parses data as a verdict of the schema version its "schema"
// field names (ID, IDv2 or IDv1; anything else is checked against ID, and fails
// on that field). It refuses input over MaxSize, malformed JSON, trailing
// data, duplicate keys, invalid UTF-8, non-finite or non-integer numbers,
// every violation of that version's schema, and a verdict that contradicts
// itself (repeated case ids, a tests_hash that is not TestsHash of the
// case ids, a case_order that is not a permutation of the case indices).
// On failure the error is a *ValidationError listing every problem with
// its JSON pointer.
func Validate(data []byte) (*Verdict, error) {
	val, probs := readStrict(data, readOptions{limit: MaxSize, integers: true})
	if val == nil && len(probs.items) > 0 {
		return nil, problemsError(probs)
	}
	c := versionOf(val).load()
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
	for i, c := range v.Cases {
		if c.Outcome == OutcomePass && c.ReasonCode != "" {
			probs.add(Problem{Location: "/cases/" + strconv.Itoa(i) + "/reason_code", Rule: "case-reason-code", Err: ErrInconsistent,
				Message: "a case that passed has no reason code"})
		}
	}
	if want := TestsHash(ids); v.TestsHash != want {
		probs.add(Problem{Location: "/tests_hash", Rule: "tests-hash", Err: ErrInconsistent,
			Message: "is not the sha256 of the sorted case ids (want " + want + ")"})
	}
	if v.CaseOrder != nil {
		if len(v.CaseOrder) != len(v.Cases) {
			probs.add(Problem{Location: "/case_order", Rule: "case-order", Err: ErrInconsistent,
				Message: fmt.Sprintf("has %d entries for %d cases", len(v.CaseOrder), len(v.Cases))})
			return
		}
		seen := make([]bool, len(v.Cases))
		for k, i := range v.CaseOrder {
			if i < 0 || i >= len(v.Cases) || seen[i] {
				probs.add(Problem{Location: "/case_order/" + strconv.Itoa(k), Rule: "case-order", Err: ErrInconsistent,
					Message: fmt.Sprintf("%d is out of range or repeated", i)})
				continue
			}
			seen[i] = true
		}
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
