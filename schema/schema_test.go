package schema_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/invalid")

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

func TestValidateValid(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			v, err := schema.Validate(readFile(t, f))
			require.NoError(t, err)

			// Round trip: what Marshal writes validates and decodes to the
			// same verdict.
			out, err := schema.Marshal(v)
			require.NoError(t, err)
			again, err := schema.Validate(out)
			require.NoError(t, err)
			if diff := cmp.Diff(v, again); diff != "" {
				t.Errorf("round trip changed the verdict (-first +second):\n%s", diff)
			}
		})
	}
}

// generated holds invalid inputs too large to keep in testdata.
var generated = map[string]func(t testing.TB) []byte{
	"oversize": func(t testing.TB) []byte {
		base := readFile(t, "testdata/valid/strict-pass.json")
		return append(base, bytes.Repeat([]byte(" "), schema.MaxSize)...)
	},
	"too-many-cases": func(t testing.TB) []byte {
		var v map[string]any
		require.NoError(t, json.Unmarshal(readFile(t, "testdata/valid/strict-fail.json"), &v))
		cases := make([]any, 10001)
		ids := make([]string, len(cases))
		for i := range cases {
			ids[i] = fmt.Sprintf("c%05d", i)
			cases[i] = map[string]any{"id": ids[i], "outcome": "FAIL", "decided_by": "exact"}
		}
		v["cases"] = cases
		v["tests_hash"] = schema.TestsHash(ids)
		data, err := json.Marshal(v)
		require.NoError(t, err)
		return data
	},
	"many-duplicates": func(t testing.TB) []byte {
		var b strings.Builder
		b.WriteString("{")
		for i := range 400 {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k":1`)
		}
		b.WriteString("}")
		return []byte(b.String())
	},
}

// render writes a ValidationError as golden text: one problem a line,
// location, rule, sentinel and message separated by tabs.
func render(err error) string {
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Sprintf("not a *ValidationError: %v\n", err)
	}
	var b strings.Builder
	for _, p := range ve.Problems {
		loc := p.Location
		if loc == "" {
			loc = `""`
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", loc, p.Rule, p.Err, p.Message)
	}
	if ve.Omitted > 0 {
		fmt.Fprintf(&b, "... %d more\n", ve.Omitted)
	}
	return b.String()
}

func TestValidateInvalidGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.json")
	require.NoError(t, err)
	inputs := map[string]func(t testing.TB) []byte{}
	for _, f := range files {
		inputs[strings.TrimSuffix(filepath.Base(f), ".json")] = func(t testing.TB) []byte { return readFile(t, f) }
	}
	for name, gen := range generated {
		inputs[name] = gen
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range inputs {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			v, err := schema.Validate(inputs[name](t))
			require.Error(t, err)
			assert.Nil(t, v)
			assert.ErrorIs(t, err, schema.ErrInvalid)
			got := render(err)
			golden := filepath.Join("testdata", "invalid", name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want := string(readFile(t, golden))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("problems differ from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// TestInvalidSentinels pins the error class of representative inputs, so a
// golden update cannot silently change them.
func TestInvalidSentinels(t *testing.T) {
	tests := []struct {
		file string
		want error
		loc  string
	}{
		{"duplicate-key", schema.ErrDuplicateKey, "/outcome"},
		{"duplicate-key-nested", schema.ErrDuplicateKey, "/cases/1/decided_by"},
		{"unknown-field", schema.ErrSchema, "/score"},
		{"unknown-field-nested", schema.ErrSchema, "/images/builder"},
		{"wrong-outcome", schema.ErrSchema, "/outcome"},
		{"trailing-data", schema.ErrTrailingData, ""},
		{"nan", schema.ErrNonFinite, "/cases/0/duration_ms"},
		{"infinity", schema.ErrNonFinite, "/timings/total_ms"},
		{"number-overflow", schema.ErrNonFinite, "/timings/total_ms"},
		{"number-not-integer", schema.ErrNotInteger, "/timings/total_ms"},
		{"invalid-utf8", schema.ErrInvalidUTF8, "/reason"},
		{"lone-surrogate", schema.ErrInvalidUTF8, "/reason"},
		{"syntax-truncated", schema.ErrSyntax, ""},
		{"too-deep", schema.ErrTooDeep, ""},
		{"duplicate-case-id", schema.ErrInconsistent, "/cases/2/id"},
		{"tests-hash-mismatch", schema.ErrInconsistent, "/tests_hash"},
		{"pass-with-failed-case", schema.ErrSchema, "/cases/1/outcome"},
		{"oversize", schema.ErrTooLarge, ""},
		{"case-order-repeated", schema.ErrInconsistent, "/case_order/1"},
		{"case-order-short", schema.ErrInconsistent, "/case_order"},
		{"strict-without-disclosure", schema.ErrSchema, "/disclosure"},
		{"disclosure-unknown", schema.ErrSchema, "/disclosure"},
		{"v1-with-v2-fields", schema.ErrSchema, "/disclosure"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var data []byte
			if gen, ok := generated[tt.file]; ok {
				data = gen(t)
			} else {
				data = readFile(t, filepath.Join("testdata", "invalid", tt.file+".json"))
			}
			_, err := schema.Validate(data)
			require.ErrorIs(t, err, tt.want)
			var ve *schema.ValidationError
			require.ErrorAs(t, err, &ve)
			var locs []string
			for _, p := range ve.Problems {
				if p.Err == tt.want {
					locs = append(locs, p.Location)
				}
			}
			if tt.loc != "" {
				assert.Contains(t, locs, tt.loc)
			}
		})
	}
}

func TestValidationErrorListsEveryProblem(t *testing.T) {
	data := readFile(t, "testdata/invalid/duplicate-key.json")
	data = bytes.Replace(data, []byte(`"tier": "strict"`), []byte(`"tier": "loose", "extra": true`), 1)
	_, err := schema.Validate(data)
	var ve *schema.ValidationError
	require.ErrorAs(t, err, &ve)
	var got []string
	for _, p := range ve.Problems {
		got = append(got, p.Location)
	}
	want := []string{"/extra", "/outcome", "/tier"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("locations (-want +got):\n%s", diff)
	}
	for _, sentinel := range []error{schema.ErrInvalid, schema.ErrDuplicateKey, schema.ErrSchema} {
		assert.ErrorIs(t, err, sentinel)
	}
	assert.NotErrorIs(t, err, schema.ErrTrailingData)
	assert.Contains(t, err.Error(), "3 problems")
}

// schemaDoc returns the embedded schema, parsed.
func schemaDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(schema.JSON(), &doc))
	return doc
}

// TestTypesMatchSchema checks, for every object of the schema, that its
// properties are exactly the JSON names of the matching Go struct, and that
// a property is required exactly when the Go field has no omitempty.
func TestTypesMatchSchema(t *testing.T) {
	doc := schemaDoc(t)
	defs := doc["$defs"].(map[string]any)
	objects := map[string]struct {
		node map[string]any
		typ  reflect.Type
	}{
		"verdict":      {doc, reflect.TypeFor[schema.Verdict]()},
		"task":         {defs["task"].(map[string]any), reflect.TypeFor[schema.Task]()},
		"case":         {defs["case"].(map[string]any), reflect.TypeFor[schema.Case]()},
		"submission":   {defs["submission"].(map[string]any), reflect.TypeFor[schema.Submission]()},
		"images":       {defs["images"].(map[string]any), reflect.TypeFor[schema.Images]()},
		"timings":      {defs["timings"].(map[string]any), reflect.TypeFor[schema.Timings]()},
		"controller":   {defs["controller"].(map[string]any), reflect.TypeFor[schema.Controller]()},
		"compat":       {defs["compat"].(map[string]any), reflect.TypeFor[schema.Compat]()},
		"dropped_hunk": {defs["dropped_hunk"].(map[string]any), reflect.TypeFor[schema.DroppedHunk]()},
	}
	// Every object definition of the schema must be listed above.
	for name, d := range defs {
		if m, ok := d.(map[string]any); ok && m["type"] == "object" {
			_, listed := objects[name]
			assert.True(t, listed, "schema object $defs/%s has no Go type in this test", name)
		}
	}
	for name, o := range objects {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, false, o.node["additionalProperties"], "additionalProperties must be false")
			props := o.node["properties"].(map[string]any)
			required := map[string]bool{}
			if rs, ok := o.node["required"].([]any); ok {
				for _, r := range rs {
					required[r.(string)] = true
				}
			}
			schemaFields := map[string]bool{}
			for p := range props {
				schemaFields[p] = required[p]
			}
			goFields := map[string]bool{}
			for f := range o.typ.Fields() {
				tag := f.Tag.Get("json")
				name, opts, _ := strings.Cut(tag, ",")
				require.NotEmpty(t, name, "field %s has no json name", f.Name)
				goFields[name] = !strings.Contains(opts, "omitempty")
			}
			if diff := cmp.Diff(schemaFields, goFields); diff != "" {
				t.Errorf("property → required differs (-schema +Go):\n%s", diff)
			}
		})
	}
}

// full returns a verdict with every field of every type set.
func full() *schema.Verdict {
	v := schema.New(schema.Task{
		ID: "swe/fix-json-escape-042", Digest: strings.Repeat("ab", 32),
		Kind: schema.KindRepository, URI: "https://example.invalid/tasks/42",
	}, schema.TierCompat)
	v.RunID = "run-1"
	v.Outcome = schema.OutcomePass
	v.ReasonCode = "all_passed"
	v.Reason = "every test passed"
	v.SetCases([]schema.Case{{
		ID: "tests/test_a.py::test_b", Outcome: schema.OutcomePass, DecidedBy: schema.DecidedByJUnit,
		Reason: "ok", DurationMS: 12, CPUMS: schema.Millis(7 * time.Millisecond), Limit: schema.LimitCPU,
		Exit: schema.ExitExited, ExitCode: schema.Code(0),
		Suite: schema.SuiteHidden, Flags: []schema.Flag{schema.FlagFlaky},
	}})
	v.Submission = schema.Submission{Kind: schema.SubmissionDiff, SHA256: strings.Repeat("cd", 32), Size: 100}
	img := "sha256:" + strings.Repeat("ef", 32)
	v.Images = schema.Images{Agent: img, Candidate: img, Judge: img, Oracle: img}
	v.Timings = schema.Timings{TotalMS: 8, SetupMS: 1, AgentMS: 1, FirewallMS: 1, CandidateMS: 1, JudgeMS: 1, OracleMS: 1, TeardownMS: 1}
	v.Controller = schema.Controller{Version: "0.1.0", Runtime: "docker/runc"}
	v.Nonce = "abcdefghijklmnopqrstuvwxyz"
	v.CaseOrder = []int{0}
	v.Disclosure = schema.DisclosureDetailed
	v.Compat = &schema.Compat{
		Mode: schema.ModeFinal, BaselineOutcome: schema.OutcomeFail, Flipped: true,
		AppliedDiffSHA256: strings.Repeat("01", 32),
		DroppedHunks:      []schema.DroppedHunk{{Path: "conftest.py", Rule: "denylist:conftest.py"}},
	}
	return v
}

// TestFullyPopulatedVerdict marshals a verdict with every Go field set and
// checks that it validates and that every schema property was written.
func TestFullyPopulatedVerdict(t *testing.T) {
	data, err := schema.Marshal(full())
	require.NoError(t, err)
	var inst any
	require.NoError(t, json.Unmarshal(data, &inst))

	doc := schemaDoc(t)
	defs := doc["$defs"].(map[string]any)
	// Where each object definition occurs in the fully populated instance.
	where := map[string]any{
		"":             inst,
		"task":         dig(inst, "task"),
		"case":         dig(inst, "cases", 0),
		"submission":   dig(inst, "submission"),
		"images":       dig(inst, "images"),
		"timings":      dig(inst, "timings"),
		"controller":   dig(inst, "controller"),
		"compat":       dig(inst, "compat"),
		"dropped_hunk": dig(inst, "compat", "dropped_hunks", 0),
	}
	// A case's reason_code belongs to a case that did not pass, which a
	// PASS verdict cannot hold: it comes from the same verdict failed.
	failed := full()
	failed.Outcome, failed.ReasonCode, failed.Compat.Flipped = schema.OutcomeFail, schema.ReasonWrongAnswer, false
	failed.Cases[0].Outcome, failed.Cases[0].ReasonCode = schema.OutcomeFail, schema.ReasonWrongAnswer
	failedData, err := schema.Marshal(failed)
	require.NoError(t, err)
	var failedInst any
	require.NoError(t, json.Unmarshal(failedData, &failedInst))
	failedCase := dig(failedInst, "cases", 0).(map[string]any)
	for def, obj := range where {
		node := doc
		if def != "" {
			node = defs[def].(map[string]any)
		}
		m, ok := obj.(map[string]any)
		require.True(t, ok, "no object for %q", def)
		if def == "case" {
			m = maps.Clone(m)
			maps.Copy(m, failedCase)
		}
		for p := range node["properties"].(map[string]any) {
			assert.Contains(t, m, p, "fully populated verdict lacks %s/%s", def, p)
		}
	}
}

func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

func TestMarshalRefusesInvalid(t *testing.T) {
	v := full()
	v.Outcome = "MAYBE"
	_, err := schema.Marshal(v)
	require.ErrorIs(t, err, schema.ErrSchema)

	// Marshal does not modify its argument.
	v = schema.New(schema.Task{ID: "t", Digest: strings.Repeat("0", 64), Kind: schema.KindData}, schema.TierStrict)
	v.Cases = nil
	before := *v
	_, _ = schema.Marshal(v)
	if diff := cmp.Diff(before, *v); diff != "" {
		t.Errorf("Marshal modified its argument:\n%s", diff)
	}
}

func TestTestsHash(t *testing.T) {
	tests := []struct {
		name string
		ids  []string
		want string
	}{
		{"none", nil, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		// sha256("a\nb\n")
		{"sorted", []string{"a", "b"}, "911169ddaaf146aff539f58c26c489af3b892dff0fe283c1c264c65ae5aa59a2"},
		{"unsorted", []string{"b", "a"}, "911169ddaaf146aff539f58c26c489af3b892dff0fe283c1c264c65ae5aa59a2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.ids)
			assert.Equal(t, tt.want, schema.TestsHash(in))
			assert.Equal(t, tt.ids, in, "input modified")
		})
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"PASS", "FAIL", "ERROR", "QUARANTINED"} {
		o, err := schema.ParseOutcome(s)
		require.NoError(t, err)
		assert.Equal(t, schema.Outcome(s), o)
	}
	for _, s := range []string{"", "pass", "PASSED", "SKIP"} {
		_, err := schema.ParseOutcome(s)
		assert.ErrorIs(t, err, schema.ErrUnknownValue, s)
	}
	for _, s := range []string{"strict", "compat"} {
		tier, err := schema.ParseTier(s)
		require.NoError(t, err)
		assert.Equal(t, schema.Tier(s), tier)
	}
	for _, s := range []string{"", "Strict", "lenient"} {
		_, err := schema.ParseTier(s)
		assert.ErrorIs(t, err, schema.ErrUnknownValue, s)
	}
}

func TestNewNonce(t *testing.T) {
	a, b := schema.NewNonce(), schema.NewNonce()
	assert.NotEqual(t, a, b)
	assert.Len(t, a, 43)
	v := full()
	v.Nonce = a
	_, err := schema.Marshal(v)
	assert.NoError(t, err)
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "hello", 20, `"hello"`},
		{"escapes controls", "a\nb\x1b[0m", 40, `"a\nb\x1b[0m"`},
		{"escapes bidi override", "x\u202ey", 40, `"x\u202ey"`},
		{"escapes line separator", "x\u2028y", 40, `"x\u2028y"`},
		{"escapes invalid utf8", "caf\xff", 40, `"caf\xff"`},
		{"keeps printable unicode", "café ✓", 40, `"café ✓"`},
		{"quotes", `say "hi"`, 40, `"say \"hi\""`},
		{"exact fit", "abc", 5, `"abc"`},
		{"cut", "abcd", 5, `"ab"…`},
		{"cut before an escape", "ab\ncd", 6, `"ab"…`},
		{"tiny max", "abcdef", 1, `"a"…`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schema.Excerpt([]byte(tt.in), tt.max)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len([]rune(got)), max(tt.max, 4))
		})
	}
}

func TestExcerptAlwaysSchemaSafe(t *testing.T) {
	v := full()
	nasty := []byte("\x00\x01\u202e\u2066\u2028\u0085\x7f\xff\xfe plain text")
	v.Cases[0].Reason = schema.Excerpt(bytes.Repeat(nasty, 100), 512)
	v.Reason = schema.Excerpt(nasty, 1024)
	_, err := schema.Marshal(v)
	assert.NoError(t, err)
}

func TestCheckJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"object", `{"a":[1,2,{"b":null}]}`, nil},
		{"scalar", `"x"`, nil},
		{"float ok", `{"a":1.5e3}`, nil},
		{"duplicate deep", `{"a":[{"b":1,"b":2}]}`, schema.ErrDuplicateKey},
		{"trailing", `{} {}`, schema.ErrTrailingData},
		{"nan", `[NaN]`, schema.ErrNonFinite},
		{"overflow", `[1e309]`, schema.ErrNonFinite},
		{"bad utf8", "[\"\xc3\x28\"]", schema.ErrInvalidUTF8},
		{"bad utf8 in key", "{\"\xff\":1}", schema.ErrInvalidUTF8},
		{"surrogate pair ok", `["\ud83d\ude00"]`, nil},
		{"escaped fffd ok", `["\ufffd"]`, nil},
		{"lone low surrogate", `["\ude00"]`, schema.ErrInvalidUTF8},
		{"syntax", `{"a":}`, schema.ErrSyntax},
		{"too large", strings.Repeat(" ", 101), schema.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := schema.CheckJSON([]byte(tt.in), 100)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

func TestSchemaIdentity(t *testing.T) {
	doc := schemaDoc(t)
	assert.Equal(t, schema.ID, doc["$id"])
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])
	assert.Regexp(t, `^[0-9a-f]{64}$`, schema.Digest())
	// JSON returns a copy.
	b := schema.JSON()
	b[0] = 'X'
	assert.Equal(t, byte('{'), schema.JSON()[0])
}

// releasedDigests pins the bytes of every released schema: a statement
// signed for a verdict records the sha256 of its schema, so editing a
// released file would strand every verdict signed under it. Change the
// schema by adding a version instead.
var releasedDigests = map[string]string{
	schema.IDv1: "4c391bf09c441d50d01d3f451a568e23eac3400b1b1f0859a7edec0e5bd3fd6f",
	schema.IDv2: "c90f6802ccd0ead9926c54cedde9a320f9af1e06db60334401eaabc14d39d361",
	schema.IDv3: "991f05a030d9d2283b1253a7c31eff100dbdc4ecb1aee2c121727ed791edf278",
	schema.ID:   "91d194c6ce187f281b61c618d87259c7be503e5259c3d0c6c2789af5f955eb7c",
}

func TestSchemaVersions(t *testing.T) {
	ids := schema.Versions()
	require.Equal(t, []string{schema.IDv1, schema.IDv2, schema.IDv3, schema.ID}, ids)
	for id, want := range releasedDigests {
		got, ok := schema.SchemaDigest(id)
		require.True(t, ok, id)
		assert.Equal(t, want, got, "%s was edited after its release; add a new version instead", id)
	}
	for _, id := range ids {
		data, ok := schema.SchemaJSON(id)
		require.True(t, ok, id)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(data, &doc))
		assert.Equal(t, id, doc["$id"])
		assert.Equal(t, id, dig(doc, "properties", "schema", "const"), "the schema field of %s must name it", id)
		sum, _ := schema.SchemaDigest(id)
		assert.Equal(t, sha256Hex(data), sum)
	}
	cur, _ := schema.SchemaDigest(schema.ID)
	assert.Equal(t, schema.Digest(), cur)
	_, ok := schema.SchemaDigest("https://strictgrade.dev/schema/verdict/v0")
	assert.False(t, ok)
	_, ok = schema.SchemaJSON("")
	assert.False(t, ok)
}

// TestVersion1StillValid checks that every property of version 1 is still
// a property of the current schema with the same Go field, so a version-1
// document decodes into a Verdict, and that only the properties version 2
// added are new.
func TestVersion1StillValid(t *testing.T) {
	props := func(id string) map[string]any {
		data, ok := schema.SchemaJSON(id)
		require.True(t, ok)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(data, &doc))
		return doc["properties"].(map[string]any)
	}
	v1, v2 := props(schema.IDv1), props(schema.ID)
	var added []string
	for p := range v2 {
		if _, ok := v1[p]; !ok {
			added = append(added, p)
		}
	}
	for p := range v1 {
		assert.Contains(t, v2, p, "version 2 dropped %s", p)
	}
	slices.Sort(added)
	assert.Equal(t, []string{"case_order", "disclosure"}, added)

	// A version-1 verdict validates, round-trips as version 1, and does
	// not pass for version 2.
	data := readFile(t, "testdata/valid/strict-fail.json")
	v, err := schema.Validate(data)
	require.NoError(t, err)
	assert.Equal(t, schema.IDv1, v.Schema)
	assert.Empty(t, v.Disclosure)
	out, err := schema.Marshal(v)
	require.NoError(t, err)
	assert.NotContains(t, string(out), "disclosure")
	v.Schema = schema.ID
	_, err = schema.Marshal(v)
	require.ErrorIs(t, err, schema.ErrSchema, "a strict version-2 verdict must name its disclosure policy")
}

func TestDisclosure(t *testing.T) {
	for _, s := range []string{"digest", "detailed"} {
		d, err := schema.ParseDisclosure(s)
		require.NoError(t, err)
		assert.Equal(t, schema.Disclosure(s), d)
	}
	for _, s := range []string{"", "Digest", "full", "none"} {
		_, err := schema.ParseDisclosure(s)
		assert.ErrorIs(t, err, schema.ErrUnknownValue, s)
	}
	strict := schema.New(schema.Task{ID: "t", Digest: strings.Repeat("0", 64), Kind: schema.KindData}, schema.TierStrict)
	assert.Equal(t, schema.DisclosureDigest, strict.Disclosure, "the strict tier defaults to digest")
	compat := schema.New(schema.Task{ID: "t", Digest: strings.Repeat("0", 64), Kind: schema.KindRepository}, schema.TierCompat)
	assert.Empty(t, compat.Disclosure)
}

func TestSummary(t *testing.T) {
	assert.Equal(t, "0 bytes, sha256 e3b0c44298fc", schema.Summary(nil))
	assert.Equal(t, "1 byte, sha256 ca978112ca1b", schema.Summary([]byte("a")))
	secret := []byte("a hidden input the candidate echoed")
	s := schema.Summary(secret)
	assert.Regexp(t, `^35 bytes, sha256 [0-9a-f]{12}$`, s)
	assert.NotContains(t, s, "hidden")
}

func FuzzValidate(f *testing.F) {
	for _, dir := range []string{"testdata/valid", "testdata/invalid"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := schema.Validate(data)
		if err != nil {
			var ve *schema.ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		out, err := schema.Marshal(v)
		if err != nil {
			t.Fatalf("valid verdict does not re-marshal: %v", err)
		}
		again, err := schema.Validate(out)
		if err != nil {
			t.Fatalf("re-marshalled verdict invalid: %v", err)
		}
		if diff := cmp.Diff(v, again); diff != "" {
			t.Fatalf("round trip changed the verdict:\n%s", diff)
		}
	})
}

// FuzzCheckJSON holds the strict reader to encoding/json: it may refuse
// more (duplicates, bad UTF-8, huge numbers), never less.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1,2]`, `{"a":{"a":1}}`, `"\ud800"`, `1e999`, `{"a":1}x`, `[[[]]]`, `{"a":1,"a":2}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := schema.CheckJSON(data, 1<<20)
		if err == nil && !json.Valid(data) {
			t.Fatalf("CheckJSON accepted what encoding/json refuses: %q", data)
		}
		if err != nil && !errors.Is(err, schema.ErrInvalid) {
			t.Fatalf("error outside the vocabulary: %v", err)
		}
	})
}
