package judge

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strictgrade/strictgrade/schema"
)

// wantCase is what a test expects of one case record.
type wantCase struct {
	outcome schema.Outcome
	by      string
	reason  string // substring
}

func passed(by string) wantCase { return wantCase{schema.OutcomePass, by, ""} }

func failed(by, reason string) wantCase { return wantCase{schema.OutcomeFail, by, reason} }

type judgeTest struct {
	name    string
	fix     fixture
	outcome schema.Outcome
	code    string
	cases   []wantCase
}

// digestText is what a reason may consist of under the digest policy: no
// quotation marks (every quote of candidate text starts with one), no
// backslash escapes, only a plain vocabulary, positions and summaries.
var digestText = regexp.MustCompile(`^[A-Za-z0-9 ,;:.()\[\]$#/_…-]*$`)

// runJudgeTable judges each fixture under the detailed policy, checking
// the reasons the table names, and again under the default one, which must
// decide alike and quote nothing.
func runJudgeTable(t *testing.T, tests []judgeTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fix := tt.fix
			fix.disclosure = schema.DisclosureDetailed
			v, err := judgeDir(t, fix.write(t))
			if err != nil {
				t.Fatalf("Judge: %v", err)
			}
			if v.Disclosure != schema.DisclosureDetailed {
				t.Errorf("disclosure %q, want detailed", v.Disclosure)
			}
			if v.Outcome != tt.outcome || v.ReasonCode != tt.code {
				t.Errorf("outcome %s/%q, want %s/%q (reason %q)", v.Outcome, v.ReasonCode, tt.outcome, tt.code, v.Reason)
			}
			if len(v.Cases) != len(tt.cases) {
				t.Fatalf("%d cases, want %d", len(v.Cases), len(tt.cases))
			}
			for i, w := range tt.cases {
				c := v.Cases[i]
				if c.Outcome != w.outcome || c.DecidedBy != w.by || !strings.Contains(c.Reason, w.reason) {
					t.Errorf("case %s: %s by %s (%q), want %s by %s containing %q", c.ID, c.Outcome, c.DecidedBy, c.Reason, w.outcome, w.by, w.reason)
				}
			}
			if tt.outcome == schema.OutcomeFail && !strings.Contains(v.Reason, "first: case ") {
				t.Errorf("verdict reason %q", v.Reason)
			}
			// The controller's binding fields pass through untouched.
			want := skeleton(tt.fix.kind)
			if v.RunID != want.RunID || v.Nonce != want.Nonce || v.Submission != want.Submission || v.Images != want.Images || v.Task != want.Task {
				t.Errorf("binding fields changed: %+v", v)
			}

			d, err := judgeDir(t, tt.fix.write(t))
			if err != nil {
				t.Fatalf("Judge under the default policy: %v", err)
			}
			if d.Disclosure != schema.DisclosureDigest || d.Outcome != v.Outcome || d.ReasonCode != v.ReasonCode {
				t.Errorf("default policy: %s %s/%s, detailed: %s/%s", d.Disclosure, d.Outcome, d.ReasonCode, v.Outcome, v.ReasonCode)
			}
			for i, c := range d.Cases {
				if c.Outcome != v.Cases[i].Outcome || c.DecidedBy != v.Cases[i].DecidedBy {
					t.Errorf("case %s: the policy changed the decision: %+v, detailed %+v", c.ID, c, v.Cases[i])
				}
				if !digestText.MatchString(c.Reason) {
					t.Errorf("case %s: digest reason %q quotes text", c.ID, c.Reason)
				}
			}
		})
	}
}

const sumCases = `{"cases":[
	{"id":"empty","args":[[]],"expected":0},
	{"id":"negatives","args":[[-1,-2]],"expected":-3}
]}`

func sumFixture(outs ...out) fixture {
	return fixture{kind: schema.KindFunction, cases: sumCases, outs: outs}
}

func ok(files map[string]string) out { return out{result: exited(0), files: files} }

func TestJudgeFunction(t *testing.T) {
	json := KindJSON
	runJudgeTable(t, []judgeTest{
		{"pass", sumFixture(ok(value("0")), ok(value("-3.0"))), schema.OutcomePass, "", []wantCase{passed(json), passed(json)}},
		{"wrong answer", sumFixture(ok(value("0")), ok(value("-2"))), schema.OutcomeFail, schema.ReasonWrongAnswer,
			[]wantCase{passed(json), failed(json, `$: got "-2"`)}},
		{"wrong type", sumFixture(ok(value(`"0"`)), ok(value("-3"))), schema.OutcomeFail, schema.ReasonWrongAnswer,
			[]wantCase{failed(json, `$: got string "0", want a number`), passed(json)}},
		{"always-equal object arrives as data", sumFixture(ok(value(`{"__eq__":"lambda s, o: True"}`)), ok(value("-3"))), schema.OutcomeFail, schema.ReasonWrongAnswer,
			[]wantCase{failed(json, "got an object with 1 key, want a number"), passed(json)}},
		{"runtime error", sumFixture(ok(value("0")), ok(map[string]string{ValueFile: `{"ok":false,"error":"TypeError: bad operand\nline 2"}`})),
			schema.OutcomeFail, schema.ReasonRuntimeError, []wantCase{passed(json), failed(DecidedByException, `raised "TypeError: bad operand\nline 2"`)}},
		{"timeout", sumFixture(out{result: &RunResult{Exit: schema.ExitTimeout, DurationMS: 10000}}, ok(value("-3"))),
			schema.OutcomeFail, schema.ReasonTimeout, []wantCase{failed(schema.DecidedByLimit, "time limit exceeded (stopped after 10000 ms)"), passed(json)}},
		{"memory", sumFixture(ok(value("0")), out{result: &RunResult{Exit: schema.ExitOOM, DurationMS: 300}}),
			schema.OutcomeFail, schema.ReasonMemoryLimit, []wantCase{passed(json), failed(schema.DecidedByLimit, "memory limit exceeded")}},
		{"output limit", sumFixture(out{result: &RunResult{Exit: schema.ExitOutputLimit}}, ok(value("-3"))),
			schema.OutcomeFail, schema.ReasonOutputLimit, []wantCase{failed(schema.DecidedByLimit, "output limit exceeded"), passed(json)}},
		{"stdout truncated", sumFixture(out{result: &RunResult{Exit: schema.ExitExited, StdoutTruncated: true}, files: value("0")}, ok(value("-3"))),
			schema.OutcomeFail, schema.ReasonOutputLimit, []wantCase{failed(schema.DecidedByLimit, "standard output exceeded its limit"), passed(json)}},
		{"signaled", sumFixture(out{result: &RunResult{Exit: schema.ExitSignaled}}, ok(value("-3"))),
			schema.OutcomeFail, schema.ReasonRuntimeError, []wantCase{failed(schema.DecidedByExitCode, "killed by a signal"), passed(json)}},
		{"rejected output", sumFixture(out{result: &RunResult{Exit: schema.ExitExited, Error: "output rejected: firewall: symlink \"x\"\n"}}, ok(value("-3"))),
			schema.OutcomeFail, schema.ReasonRejectedArtifact, []wantCase{failed(schema.DecidedByFirewall, `output rejected: firewall: symlink "x"\u000a`), passed(json)}},
		{"not run", sumFixture(out{result: &RunResult{Exit: schema.ExitNotRun}}, ok(value("-3"))),
			schema.OutcomeFail, ReasonMissingOutput, []wantCase{failed(DecidedByOutput, "the case did not run"), passed(json)}},
		{"no outputs at all", sumFixture(), schema.OutcomeFail, ReasonMissingOutput,
			[]wantCase{failed(DecidedByOutput, "no result was recorded"), failed(DecidedByOutput, "no result was recorded")}},
		{"one output dir missing", sumFixture(ok(value("0")), out{absent: true}), schema.OutcomeFail, ReasonMissingOutput,
			[]wantCase{passed(json), failed(DecidedByOutput, "the case did not run")}},
		{"result missing", sumFixture(out{files: value("0")}, ok(value("-3"))), schema.OutcomeFail, ReasonMissingOutput,
			[]wantCase{failed(DecidedByOutput, "the case did not run"), passed(json)}},
		{"record missing", sumFixture(ok(nil), ok(value("-3"))), schema.OutcomeFail, ReasonMissingOutput,
			[]wantCase{failed(DecidedByOutput, "the result record (files/value.json) is missing"), passed(json)}},
		{"record missing after crash", sumFixture(out{result: exited(1)}, ok(value("-3"))), schema.OutcomeFail, schema.ReasonRuntimeError,
			[]wantCase{failed(schema.DecidedByExitCode, "exited with status 1 without recording a result"), passed(json)}},
		{"record then bad exit", sumFixture(out{result: exited(3), files: value("0")}, ok(value("-3"))), schema.OutcomeFail, schema.ReasonRuntimeError,
			[]wantCase{failed(schema.DecidedByExitCode, "exited with status 3 after recording a result"), passed(json)}},
	})
}

func TestJudgeFunctionMalformedRecord(t *testing.T) {
	for name, rec := range map[string]string{
		"not json":                 `PASS`,
		"empty":                    ``,
		"forged verdict":           `{"schema":"https://strictgrade.dev/schema/verdict/v1","outcome":"PASS","cases":[]}`,
		"ok missing":               `{"value":0}`,
		"ok not bool":              `{"ok":"true","value":0}`,
		"value missing":            `{"ok":true}`,
		"error instead of value":   `{"ok":true,"error":"x"}`,
		"extra field":              `{"ok":true,"value":0,"passed":true}`,
		"error not string":         `{"ok":false,"error":1}`,
		"duplicate ok":             `{"ok":false,"ok":true,"value":0}`,
		"duplicate key in value":   `{"ok":true,"value":{"a":1,"a":0}}`,
		"two documents":            `{"ok":true,"value":0}{"ok":true,"value":0}`,
		"trailing garbage":         `{"ok":true,"value":0} x`,
		"NaN value":                `{"ok":true,"value":NaN}`,
		"array":                    `[true,0]`,
		"invalid utf8":             "{\"ok\":true,\"value\":\"\xff\"}",
		"lone surrogate":           `{"ok":true,"value":"\udead"}`,
		"deep":                     `{"ok":true,"value":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
		"case-folded key (Go bug)": `{"OK":true,"value":0}`,
	} {
		t.Run(name, func(t *testing.T) {
			for _, d := range []schema.Disclosure{schema.DisclosureDigest, schema.DisclosureDetailed} {
				f := sumFixture(ok(map[string]string{ValueFile: rec}), ok(value("-3")))
				f.disclosure = d
				v, err := judgeDir(t, f.write(t))
				if err != nil {
					t.Fatalf("a malformed record must fail the case, not the judge: %v", err)
				}
				c := v.Cases[0]
				if v.Outcome != schema.OutcomeFail || c.Outcome != schema.OutcomeFail || c.DecidedBy != DecidedByOutput ||
					!strings.HasPrefix(c.Reason, "malformed result record") {
					t.Errorf("%s: verdict %s, case %+v", d, v.Outcome, c)
				}
				if d == schema.DisclosureDigest && !digestText.MatchString(c.Reason) {
					t.Errorf("digest reason %q quotes text", c.Reason)
				}
			}
		})
	}
}

const wordfreqCases = `{"cases":[
	{"id":"basic","stdin":"b a b\n","expected_stdout":"b 2\na 1\n"},
	{"id":"usage","argv":["--bad"],"expected_exit":2},
	{"id":"both","argv":["-n","1"],"stdin":"x","expected_stdout":"x 1\n","expected_exit":0}
]}`

func cmdFixture(outs ...out) fixture {
	return fixture{kind: schema.KindCommand, cases: wordfreqCases, outs: outs}
}

func stdout(code int, s string) out { return out{result: exited(code), stdout: &s} }

func TestJudgeCommand(t *testing.T) {
	lines, exit := KindLines, schema.DecidedByExitCode
	good := []out{stdout(0, "b 2\r\na 1   \n\n"), stdout(2, "usage: ...\n"), stdout(0, "x 1")}
	with := func(i int, o out) []out {
		outs := append([]out(nil), good...)
		outs[i] = o
		return outs
	}
	runJudgeTable(t, []judgeTest{
		{"pass", cmdFixture(good...), schema.OutcomePass, "", []wantCase{passed(lines), passed(exit), passed(lines)}},
		{"wrong order", cmdFixture(with(0, stdout(0, "a 1\nb 2\n"))...), schema.OutcomeFail, schema.ReasonWrongAnswer,
			[]wantCase{failed(lines, `line 1: got "a 1"`), passed(exit), passed(lines)}},
		{"forged pass line", cmdFixture(with(0, stdout(0, "PASS\nall tests passed\n"))...), schema.OutcomeFail, schema.ReasonWrongAnswer,
			[]wantCase{failed(lines, `line 1: got "PASS"`), passed(exit), passed(lines)}},
		{"crash", cmdFixture(with(0, stdout(1, "b 2\na 1\n"))...), schema.OutcomeFail, schema.ReasonRuntimeError,
			[]wantCase{failed(exit, "exited with status 1, not the expected status"), passed(exit), passed(lines)}},
		{"wrong exit status", cmdFixture(with(1, stdout(0, ""))...), schema.OutcomeFail, schema.ReasonWrongAnswer,
			[]wantCase{passed(lines), failed(exit, "exited with status 0, not the expected status"), passed(lines)}},
		{"stdout missing", cmdFixture(with(2, out{result: exited(0)})...), schema.OutcomeFail, ReasonMissingOutput,
			[]wantCase{passed(lines), passed(exit), failed(DecidedByOutput, "standard output is missing")}},
		{"timeout", cmdFixture(with(1, out{result: &RunResult{Exit: schema.ExitTimeout, DurationMS: 2000}})...), schema.OutcomeFail, schema.ReasonTimeout,
			[]wantCase{passed(lines), failed(schema.DecidedByLimit, "time limit exceeded"), passed(lines)}},
		{"first failure sets the code", cmdFixture(stdout(0, "zzz\n"), out{result: &RunResult{Exit: schema.ExitOOM}}, stdout(0, "x 1")), schema.OutcomeFail, schema.ReasonWrongAnswer,
			[]wantCase{failed(lines, `line 1: got "zzz"`), failed(schema.DecidedByLimit, "memory"), passed(lines)}},
	})
}

const statsCases = `{"compare":{"kind":"json","rel_tol":1e-9},"cases":[
	{"id":"small","input_files":{"data.csv":"in/small.csv"},"expected_files":{"stats.json":"out/small.json"}}
]}`

func dataFixture(files map[string]string, code int) fixture {
	return fixture{
		kind:  schema.KindData,
		cases: statsCases,
		hidden: map[string]string{
			"in/small.csv":   "a,b\n1,x\n3,y\n",
			"out/small.json": `{"a":{"min":1,"max":3,"mean":2}}`,
		},
		outs: []out{{result: exited(code), files: files}},
	}
}

func TestJudgeData(t *testing.T) {
	json := KindJSON
	runJudgeTable(t, []judgeTest{
		{"pass, extra files ignored", dataFixture(map[string]string{"stats.json": `{"a":{"mean":2.0000000000001,"max":3.0,"min":1}}`, "debug.log": "x"}, 0),
			schema.OutcomePass, "", []wantCase{passed(json)}},
		{"wrong", dataFixture(map[string]string{"stats.json": `{"a":{"min":1,"max":3,"mean":2.5}}`}, 0), schema.OutcomeFail, schema.ReasonWrongAnswer,
			[]wantCase{failed(json, `file "stats.json": $.a.mean: got "2.5", not within the tolerance`)}},
		{"duplicate keys", dataFixture(map[string]string{"stats.json": `{"a":{"min":1,"max":3,"mean":2,"mean":2}}`}, 0), schema.OutcomeFail, schema.ReasonWrongAnswer,
			[]wantCase{failed(json, `file "stats.json": not valid JSON: duplicate object key "mean"`)}},
		{"missing file", dataFixture(map[string]string{"stat.json": `{}`}, 0), schema.OutcomeFail, ReasonMissingOutput,
			[]wantCase{failed(DecidedByOutput, `output file "stats.json" is missing`)}},
		{"crash", dataFixture(map[string]string{"stats.json": `{"a":{"min":1,"max":3,"mean":2}}`}, 1), schema.OutcomeFail, schema.ReasonRuntimeError,
			[]wantCase{failed(schema.DecidedByExitCode, "exited with status 1")}},
	})
}

// TestJudgeBreakouts: candidate outputs that try to point the judge at the
// answer key, or to be something other than bytes, fail.
func TestJudgeBreakouts(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, files string)
	}{
		{"symlink to the expected file", func(t *testing.T, files string) {
			must(t, os.Symlink("../../../hidden/out/small.json", filepath.Join(files, "stats.json")))
		}},
		{"absolute symlink", func(t *testing.T, files string) {
			must(t, os.Symlink("/etc/hostname", filepath.Join(files, "stats.json")))
		}},
		{"directory instead of file", func(t *testing.T, files string) {
			must(t, os.Mkdir(filepath.Join(files, "stats.json"), 0o755))
		}},
		{"fifo", func(t *testing.T, files string) {
			if err := mkfifo(filepath.Join(files, "stats.json")); err != nil {
				t.Skip("no mkfifo:", err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := dataFixture(map[string]string{"other": "x"}, 0).write(t)
			tt.setup(t, filepath.Join(root, "outputs", "0", "files"))
			v, err := judgeDir(t, root)
			if err != nil {
				t.Fatal(err)
			}
			if v.Outcome != schema.OutcomeFail || v.Cases[0].DecidedBy != DecidedByOutput {
				t.Errorf("verdict %s, case %+v", v.Outcome, v.Cases[0])
			}
		})
	}
	t.Run("symlinked files directory", func(t *testing.T) {
		root := dataFixture(nil, 0).write(t)
		must(t, os.Symlink("../../hidden/out", filepath.Join(root, "outputs", "0", "files")))
		// hidden/out holds small.json, not stats.json; link a matching name too.
		must(t, os.WriteFile(filepath.Join(root, "hidden", "out", "stats.json"), []byte(`{"a":{"min":1,"max":3,"mean":2}}`), 0o644))
		v, err := judgeDir(t, root)
		if err != nil {
			t.Fatal(err)
		}
		if v.Outcome != schema.OutcomeFail {
			t.Errorf("verdict %s, case %+v", v.Outcome, v.Cases[0])
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestJudgeInputErrors: a broken judge input is an error, never a verdict.
func TestJudgeInputErrors(t *testing.T) {
	good := func() fixture { return sumFixture(ok(value("0")), ok(value("-3"))) }
	tests := []struct {
		name   string
		fix    func() fixture
		change func(t *testing.T, root string)
		want   error
		text   string
	}{
		{"meta missing", good, func(t *testing.T, root string) { must(t, os.Remove(filepath.Join(root, MetaFile))) }, ErrInput, "meta.json is missing"},
		{"meta malformed", func() fixture { f := good(); f.meta = `{"kind":"function"`; return f }, nil, ErrInput, "meta.json"},
		{"meta unknown field", func() fixture {
			f := good()
			f.meta = `{"kind":"function","verdict":{},"extra":1}`
			return f
		}, nil, ErrInput, `unknown field "extra"`},
		{"meta duplicate key", func() fixture { f := good(); f.meta = `{"kind":"function","kind":"data","verdict":{}}`; return f }, nil, ErrInput, "duplicate object key"},
		{"meta kind repository", func() fixture { f := good(); f.meta = `{"kind":"repository","verdict":{}}`; return f }, nil, ErrCases, "repository"},
		{"meta tier compat", func() fixture {
			f := good()
			f.meta = `{"kind":"function","verdict":{"tier":"compat","task":{"id":"x","digest":"","kind":"function"}}}`
			return f
		}, nil, ErrInput, "strict tier only"},
		{"meta kinds disagree", func() fixture {
			f := good()
			f.meta = `{"kind":"function","verdict":{"tier":"strict","task":{"id":"x","digest":"","kind":"data"}}}`
			return f
		}, nil, ErrInput, "differs from the verdict's task kind"},
		{"cases missing", func() fixture { f := good(); f.cases = ""; return f }, nil, ErrInput, "hidden/cases.json is missing"},
		{"cases invalid", func() fixture { f := good(); f.cases = `{"cases":[{"id":"x"}]}`; return f }, nil, ErrCases, "function cases need args and expected"},
		{"result malformed", func() fixture { f := good(); f.outs[0] = out{raw: `{"exit":"exited"`}; return f }, nil, ErrInput, "outputs/0/result.json"},
		{"result unknown field", func() fixture { f := good(); f.outs[0] = out{raw: `{"exit":"exited","passed":true}`}; return f }, nil, ErrInput, `unknown field "passed"`},
		{"result unknown exit", func() fixture { f := good(); f.outs[0] = out{raw: `{"exit":"crashed"}`}; return f }, nil, ErrInput, `unknown exit "crashed"`},
		{"result exit code out of range", func() fixture { f := good(); f.outs[0] = out{result: exited(300)}; return f }, nil, ErrInput, "exit code 300"},
		{"result negative duration", func() fixture {
			f := good()
			f.outs[0] = out{result: &RunResult{Exit: schema.ExitExited, DurationMS: -1}}
			return f
		}, nil, ErrInput, "duration -1 ms"},
		{"result too large", good, func(t *testing.T, root string) {
			must(t, os.WriteFile(filepath.Join(root, "outputs", "0", ResultFile), []byte(`{"exit":"exited","error":"`+strings.Repeat("x", maxResultSize)+`"}`), 0o644))
		}, ErrTooLarge, "result.json is larger than"},
		{"extra output directory", good, func(t *testing.T, root string) {
			must(t, os.MkdirAll(filepath.Join(root, "outputs", "2"), 0o755))
		}, ErrInput, "more than 2 entries"},
		{"stray output entry", func() fixture { f := good(); f.outs = f.outs[:1]; return f }, func(t *testing.T, root string) {
			must(t, os.MkdirAll(filepath.Join(root, "outputs", "01"), 0o755))
		}, ErrInput, `outputs/"01" is not the directory of a case`},
		{"symlinked meta", good, func(t *testing.T, root string) {
			must(t, os.Rename(filepath.Join(root, MetaFile), filepath.Join(root, "real.json")))
			must(t, os.Symlink("real.json", filepath.Join(root, MetaFile)))
		}, ErrInput, "not a regular file"},
		{"expected file missing", func() fixture {
			f := dataFixture(map[string]string{"stats.json": "{}"}, 0)
			delete(f.hidden, "out/small.json")
			return f
		}, nil, ErrInput, "hidden/out/small.json is missing"},
		{"expected file not JSON", func() fixture {
			f := dataFixture(map[string]string{"stats.json": "{}"}, 0)
			f.hidden["out/small.json"] = `{"a":1,"a":2}`
			return f
		}, nil, ErrExpected, `case "small": expected file stats.json: judge: unusable expected value: json: duplicate object key "a"`},
		{"root missing", good, func(t *testing.T, root string) { must(t, os.RemoveAll(root)) }, ErrInput, "judge: invalid input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tt.fix().write(t)
			if tt.change != nil {
				tt.change(t, root)
			}
			v, err := judgeDir(t, root)
			if err == nil {
				t.Fatalf("judged %s, want an error", v.Outcome)
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %q, want %v containing %q", err, tt.want, tt.text)
			}
		})
	}
}

// TestJudgePure covers what a directory cannot easily show.
func TestJudgePure(t *testing.T) {
	cases, err := LoadCases([]byte(sumCases), schema.KindFunction)
	if err != nil {
		t.Fatal(err)
	}
	in := func(outs ...Output) *Input {
		return &Input{Meta: Meta{Verdict: skeleton(schema.KindFunction), Kind: schema.KindFunction}, Cases: cases, Outputs: outs}
	}
	rec := func(s string) Output {
		return Output{Result: exited(0), Files: map[string]*Blob{ValueFile: {Data: []byte(s)}}}
	}
	t.Run("record too large", func(t *testing.T) {
		v, err := Judge(in(Output{Result: exited(0), Files: map[string]*Blob{ValueFile: {TooLarge: true}}}, rec(`{"ok":true,"value":-3}`)))
		if err != nil {
			t.Fatal(err)
		}
		mustValidate(t, v)
		if c := v.Cases[0]; c.Outcome != schema.OutcomeFail || c.DecidedBy != schema.DecidedByLimit || v.ReasonCode != schema.ReasonOutputLimit {
			t.Errorf("case %+v, code %s", c, v.ReasonCode)
		}
	})
	t.Run("record larger than the json comparator reads", func(t *testing.T) {
		big := `{"ok":true,"value":"` + strings.Repeat("x", MaxJSONSize) + `"}`
		v, err := Judge(in(rec(big), rec(`{"ok":true,"value":-3}`)))
		if err != nil {
			t.Fatal(err)
		}
		mustValidate(t, v)
		if c := v.Cases[0]; c.DecidedBy != schema.DecidedByLimit || !strings.Contains(c.Reason, "more than the json comparator reads") {
			t.Errorf("case %+v", c)
		}
	})
	t.Run("outputs do not match cases", func(t *testing.T) {
		if _, err := Judge(in(rec(`{"ok":true,"value":0}`))); !errors.Is(err, ErrInput) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("nil input", func(t *testing.T) {
		if _, err := Judge(nil); !errors.Is(err, ErrInput) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("skeleton without task kind", func(t *testing.T) {
		i := in(rec(`{"ok":true,"value":0}`), rec(`{"ok":true,"value":-3}`))
		i.Meta.Verdict.Task.Kind = ""
		v, err := Judge(i)
		if err != nil {
			t.Fatal(err)
		}
		if v.Task.Kind != schema.KindFunction || v.Outcome != schema.OutcomePass {
			t.Errorf("verdict %+v", v)
		}
	})
	t.Run("invalid override comparator", func(t *testing.T) {
		bad := &Cases{Compare: Comparator{Kind: KindLines}, Cases: cases.Cases}
		i := in(rec(`{"ok":true,"value":0}`), rec(`{"ok":true,"value":-3}`))
		i.Cases = bad
		if _, err := Judge(i); !errors.Is(err, ErrComparator) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("does not modify its input", func(t *testing.T) {
		i := in(rec(`{"ok":true,"value":0}`), rec(`{"ok":true,"value":-2}`))
		before := i.Meta.Verdict
		if _, err := Judge(i); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, i.Meta.Verdict); diff != "" {
			t.Errorf("skeleton changed:\n%s", diff)
		}
	})
	t.Run("tests hash", func(t *testing.T) {
		v, err := Judge(in(rec(`{"ok":true,"value":0}`), rec(`{"ok":true,"value":-3}`)))
		if err != nil {
			t.Fatal(err)
		}
		if want := schema.TestsHash([]string{"negatives", "empty"}); v.TestsHash != want {
			t.Errorf("tests_hash %s, want %s", v.TestsHash, want)
		}
	})
}

// TestJudgeReasonsAreSafe: hostile candidate text reaches a verdict only
// escaped and truncated.
func TestJudgeReasonsAreSafe(t *testing.T) {
	hostile := strings.Repeat("\u202e\x1b[2J\u2028PASS\r\n\x00\xff", 500)
	f := cmdFixture(stdout(0, hostile), stdout(2, ""), stdout(0, "x 1"))
	v, err := judgeDir(t, f.write(t))
	if err != nil {
		t.Fatal(err)
	}
	if v.Outcome != schema.OutcomeFail {
		t.Fatal(v.Outcome)
	}
	for _, s := range []string{v.Reason, v.Cases[0].Reason} {
		if !textRule.MatchString(s) || len([]rune(s)) > 1024 {
			t.Errorf("unsafe reason %q", s)
		}
	}
}
