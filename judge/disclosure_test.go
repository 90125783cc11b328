package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/schema"
)

// Hidden data a verdict must not reveal under the default policy. Each is
// long and distinctive enough that any 8-byte piece of it in a verdict is
// a leak.
const (
	hiddenInput   = "HIDDEN-INPUT-q7Zp3xW9"
	expectedValue = "EXPECTED-VALUE-m4Kt8vR2"
	expectedKey   = "kQ_Lr5n_w8Zy"
	expectedNum   = "314159265358979"
	hiddenOutName = "SECRET-OUT-Yw6cB1.txt"
)

// secrets is everything hidden: inputs, expected values and keys, and the
// names of expected files (which only hidden/cases.json holds).
var secrets = []string{hiddenInput, expectedValue, expectedKey, expectedNum, hiddenOutName}

// expectedSecrets is what a verdict never reveals under any policy unless
// the candidate printed it itself.
var expectedSecrets = []string{expectedValue, expectedKey, expectedNum}

// leaks returns the secrets of which some 8-byte piece occurs in data.
func leaks(data []byte, secrets []string) []string {
	var found []string
	for _, s := range secrets {
		for i := 0; i+8 <= len(s); i++ {
			if bytes.Contains(data, []byte(s[i:i+8])) {
				found = append(found, fmt.Sprintf("%s (piece %q)", s, s[i:i+8]))
				break
			}
		}
	}
	return found
}

// expectedFor returns an expected output for a comparator kind, made of
// expected data.
func expectedFor(kind string) string {
	switch kind {
	case KindNumbers:
		return expectedNum + " 2.5\n"
	case KindJSON:
		return `{"` + expectedKey + `":"` + expectedValue + `","n":` + expectedNum + `}`
	case KindCSV:
		return "name,value\n" + expectedValue + "," + expectedNum + "\n"
	}
	return expectedValue + "\nsecond line\n"
}

// leakOutput is one thing a candidate does with a case: what it writes and
// how it ends.
type leakOutput struct {
	name string
	// content is the output graded (stdout, the expected file, the shim's
	// record); nil for none.
	content *string
	result  *RunResult
	// echoesExpected marks an output that prints expected data itself:
	// detailed reasons may then quote it.
	echoesExpected bool
}

func str(s string) *string { return &s }

// rejected is the controller's note for an output the firewall refused,
// which quotes the name the candidate gave the file.
var rejected = &RunResult{Exit: schema.ExitExited, Error: `output rejected: engine: collect failed: /output: firewall: symlink: entry "output/` + hiddenInput + `": link to "/judge/` + hiddenInput + `"`}

// textOutputs are the outputs every comparator of command and data tasks
// is fed.
func textOutputs(kind string) []leakOutput {
	want := expectedFor(kind)
	garbled := "\x00" + hiddenInput + "\n"
	switch kind {
	case KindJSON:
		garbled = `{"` + hiddenInput + `":1,"` + hiddenInput + `":2}`
	case KindCSV:
		garbled = `"` + hiddenInput + `"x,1` + "\n"
	}
	return []leakOutput{
		{name: "echo", content: str(hiddenInput + " " + hiddenInput + "\n")},
		{name: "echo-expected", content: str(hiddenInput + " " + expectedValue + " " + expectedNum + "\n"), echoesExpected: true},
		{name: "late", content: str(want + hiddenInput + "\n"), echoesExpected: true},
		{name: "prefix", content: str(want[:len(want)/2]), echoesExpected: true},
		{name: "garbled", content: str(garbled)},
		{name: "rejected", result: rejected},
		{name: "status", content: str(hiddenInput), result: exited(3)},
		{name: "missing", result: exited(0)},
	}
}

// commandFixture is a command task whose cases read the hidden input on
// stdin and in argv.
func commandFixture(kind string, outs []leakOutput) fixture {
	var cases []string
	for _, o := range outs {
		cases = append(cases, fmt.Sprintf(`{"id":%q,"argv":[%q],"stdin":%q,"expected_stdout":%s}`,
			o.name, hiddenInput, hiddenInput+"\n", jsonString(expectedFor(kind))))
	}
	f := fixture{kind: schema.KindCommand, cases: `{"compare":{"kind":"` + kind + `"},"cases":[` + strings.Join(cases, ",") + `]}`}
	for _, o := range outs {
		r := o.result
		if r == nil {
			r = exited(0)
		}
		f.outs = append(f.outs, out{result: r, stdout: o.content})
	}
	return f
}

// dataFixture is a data task whose input file is the hidden input and
// whose expected file has a hidden name.
func dataLeakFixture(kind string, outs []leakOutput) fixture {
	f := fixture{kind: schema.KindData, hidden: map[string]string{"in/1.txt": hiddenInput, "out/1": expectedFor(kind)}}
	var cases []string
	for _, o := range outs {
		cases = append(cases, fmt.Sprintf(`{"id":%q,"input_files":{"in.txt":"in/1.txt"},"expected_files":{%q:"out/1"}}`, o.name, hiddenOutName))
		r := o.result
		if r == nil {
			r = exited(0)
		}
		files := map[string]string{hiddenInput + ".log": hiddenInput}
		if o.content != nil {
			files[hiddenOutName] = *o.content
		}
		f.outs = append(f.outs, out{result: r, files: files})
	}
	f.cases = `{"compare":{"kind":"` + kind + `"},"cases":[` + strings.Join(cases, ",") + `]}`
	return f
}

// functionFixture is a function task whose argument is the hidden input
// and whose expected value is an object with a hidden key.
func functionFixture(c Comparator, outs []leakOutput) fixture {
	cmp, _ := json.Marshal(c)
	expected := `{"` + expectedKey + `":"` + expectedValue + `","n":` + expectedNum + `,"list":["` + expectedValue + `",1]}`
	var cases []string
	for _, o := range outs {
		cases = append(cases, fmt.Sprintf(`{"id":%q,"args":[%q],"expected":%s}`, o.name, hiddenInput, expected))
	}
	f := fixture{kind: schema.KindFunction, cases: `{"compare":` + string(cmp) + `,"cases":[` + strings.Join(cases, ",") + `]}`}
	for _, o := range outs {
		r := o.result
		if r == nil {
			r = exited(0)
		}
		var files map[string]string
		if o.content != nil {
			files = map[string]string{ValueFile: *o.content}
		}
		f.outs = append(f.outs, out{result: r, files: files})
	}
	return f
}

// functionOutputs are the records a function candidate is made to return.
func functionOutputs() []leakOutput {
	rec := func(v string) *string { return str(`{"ok":true,"value":` + v + `}`) }
	in := jsonString(hiddenInput)
	return []leakOutput{
		{name: "echo-as-value", content: rec(in)},
		{name: "echo-as-key", content: rec(`{` + in + `:1,"n":` + expectedNum + `,"list":[]}`), echoesExpected: true},
		{name: "other-keys", content: rec(`{` + in + `:1,"n":2,"list":[]}`)},
		{name: "same-keys", content: rec(`{"` + expectedKey + `":` + in + `,"n":1,"list":[` + in + `,1]}`), echoesExpected: true},
		{name: "same-keys-wrong-list", content: rec(`{"` + expectedKey + `":"` + expectedValue + `","n":` + expectedNum + `,"list":[` + in + `,1]}`), echoesExpected: true},
		{name: "exception", content: str(`{"ok":false,"error":` + jsonString("ValueError: bad input "+hiddenInput) + `}`)},
		{name: "extra-field", content: str(`{"ok":true,"value":1,` + in + `:true}`)},
		{name: "not-json", content: str(`{"ok":true,"value":` + in)},
		{name: "duplicate-key", content: str(`{"ok":true,"value":{` + in + `:1,` + in + `:2}}`)},
		{name: "crash", content: str(`{"ok":true,"value":` + in + `}`), result: exited(1)},
		{name: "rejected", result: rejected},
		{name: "no-record", result: exited(0)},
	}
}

// TestDisclosure judges candidates that echo the hidden input and the
// expected values through every channel a reason draws on, for every
// comparator and task kind, and checks that under the default policy no
// 8-byte piece of any hidden input, expected value, expected key or
// expected file name reaches the verdict, while the detailed policy still
// shows a human the first difference (and never an expected value the
// candidate did not print itself).
func TestDisclosure(t *testing.T) {
	type suite struct {
		name string
		fix  fixture
		outs []leakOutput
	}
	var suites []suite
	for _, k := range kinds {
		outs := textOutputs(k)
		suites = append(suites,
			suite{"command/" + k, commandFixture(k, outs), outs},
			suite{"data/" + k, dataLeakFixture(k, outs), outs})
	}
	for _, c := range []Comparator{
		{Kind: KindJSON},
		{Kind: KindJSON, UnorderedArrays: true},
		{Kind: KindJSON, UnorderedArrays: true, AbsTol: 0.5},
		{Kind: KindJSON, RelTol: 1e-9},
	} {
		outs := functionOutputs()
		name := fmt.Sprintf("function/json unordered=%v tol=%v", c.UnorderedArrays, c.AbsTol+c.RelTol)
		suites = append(suites, suite{name, functionFixture(c, outs), outs})
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			// The default: the skeleton names no policy.
			v, err := judgeDir(t, s.fix.write(t))
			if err != nil {
				t.Fatal(err)
			}
			if v.Disclosure != schema.DisclosureDigest {
				t.Errorf("disclosure %q, want digest", v.Disclosure)
			}
			data := mustValidate(t, v)
			if found := leaks(data, secrets); len(found) > 0 {
				t.Errorf("the verdict reveals %v:\n%s", found, data)
			}
			for _, c := range v.Cases {
				if c.Outcome != schema.OutcomeFail {
					t.Errorf("case %s: %s", c.ID, c.Outcome)
				}
			}

			fix := s.fix
			fix.disclosure = schema.DisclosureDetailed
			dv, err := judgeDir(t, fix.write(t))
			if err != nil {
				t.Fatal(err)
			}
			all := mustValidate(t, dv)
			// The detector works: detailed reasons quote what the
			// candidate wrote, hidden input included.
			if len(leaks(all, []string{hiddenInput})) == 0 {
				t.Errorf("the detailed verdict shows none of the candidate's text:\n%s", all)
			}
			for i, c := range dv.Cases {
				if c.Outcome != v.Cases[i].Outcome || c.DecidedBy != v.Cases[i].DecidedBy {
					t.Errorf("case %s: the policy changed the decision", c.ID)
				}
				if !s.outs[i].echoesExpected {
					if found := leaks([]byte(c.Reason), expectedSecrets); len(found) > 0 {
						t.Errorf("case %s: the detailed reason %q quotes expected data %v", c.ID, c.Reason, found)
					}
				}
			}
		})
	}
}

// TestDisclosureShowsWhere: the default policy still says where the output
// first differs, and the detailed one what the candidate wrote there.
func TestDisclosureShowsWhere(t *testing.T) {
	tests := []struct {
		c                Comparator
		got, want        string
		digest, detailed string
	}{
		{Comparator{Kind: KindExact}, "abc\nxyz", "abc\nxyZ", "first difference at byte 6 (line 2)", `byte 6 (line 2): got "z"`},
		{Comparator{Kind: KindLines}, "a\n" + hiddenInput + "\n", "a\nb\n", "first difference at line 2", `line 2: got "` + hiddenInput + `"`},
		{Comparator{Kind: KindTokens}, "1 2 x", "1 2 3", "first difference at token 3", `token 3: got "x"`},
		{Comparator{Kind: KindNumbers}, "1 2.5", "1 2", "first difference at token 2", `token 2: got "2.5"`},
		{Comparator{Kind: KindUnorderedLines}, "b\nz\n", "a\nb\n", "first difference at line 2", `line 2: "z" is not expected (or appears more often than expected)`},
		{Comparator{Kind: KindCSV}, "a,b\n1,x\n", "a,b\n1,2\n", "first difference at row 2, column 2", `row 2, column 2: got "x", want a number`},
		{Comparator{Kind: KindJSON}, `{"b":[1,{"c":5}],"a":1}`, `{"a":1,"b":[1,{"c":6}]}`, "first difference at $.#1[1].#0", `$.b[1].c: got "5"`},
		{Comparator{Kind: KindJSON}, `{"a":1}`, `{"a":1,"` + expectedKey + `":2}`, "first difference at $", `$: lacks a key the expected object has`},
		{Comparator{Kind: KindJSON}, `[1,`, `[1]`, "not valid JSON (unexpected end of input) at byte 3", "not valid JSON: unexpected end of input"},
	}
	for _, tt := range tests {
		t.Run(tt.c.Kind+"/"+tt.digest, func(t *testing.T) {
			d := Compare(tt.c, []byte(tt.got), []byte(tt.want))
			want := tt.digest + "; output " + schema.Summary([]byte(tt.got))
			if d.Reason != want {
				t.Errorf("digest reason %q, want %q", d.Reason, want)
			}
			r := CompareFor(schema.DisclosureDetailed, tt.c, []byte(tt.got), []byte(tt.want))
			if r.Reason != tt.detailed {
				t.Errorf("detailed reason %q, want %q", r.Reason, tt.detailed)
			}
		})
	}
}
