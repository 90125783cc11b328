package judge

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/schema"
)

// TestFunctionCheckerWithoutExpected: a function case a checker decides
// may omit expected, as the task format says (issue 29, item 8): it loads,
// the checker gets no expected value and decides the case alone. Every
// other comparator still needs one.
func TestFunctionCheckerWithoutExpected(t *testing.T) {
	const checkerCases = `{"compare":{"kind":"checker","module":"checker.wasm"},"cases":[` +
		`{"id":"sorted","args":["sorted",[3,1,2]]},` +
		`{"id":"wrong","args":["sorted",[3,1,2]]}]}`
	cs, err := LoadCases([]byte(checkerCases), schema.KindFunction)
	if err != nil {
		t.Fatalf("LoadCases: %v", err)
	}
	want := []Case{
		{ID: "sorted", Args: []byte(`["sorted",[3,1,2]]`)},
		{ID: "wrong", Args: []byte(`["sorted",[3,1,2]]`)},
	}
	if diff := cmp.Diff(want, cs.Cases); diff != "" {
		t.Errorf("LoadCases (-want +got):\n%s", diff)
	}

	// Per case too: a checker override lets that case omit expected.
	override := `{"cases":[{"id":"a","args":[],"compare":{"kind":"checker","module":"checker.wasm"}}]}`
	if _, err := LoadCases([]byte(override), schema.KindFunction); err != nil {
		t.Errorf("LoadCases with a per-case checker: %v", err)
	}
	for name, data := range map[string]string{
		"default json":  `{"cases":[{"id":"a","args":[]}]}`,
		"json override": `{"compare":{"kind":"checker","module":"checker.wasm"},"cases":[{"id":"a","args":[],"compare":{"kind":"json"}}]}`,
	} {
		if _, err := LoadCases([]byte(data), schema.KindFunction); err == nil || !strings.Contains(err.Error(), "need args and expected") {
			t.Errorf("%s: LoadCases error %v, want one saying expected is needed", name, err)
		}
	}

	f := fixture{kind: schema.KindFunction, hidden: map[string]string{"checker.wasm": string(testChecker(t))}, cases: checkerCases,
		outs: []out{{result: exited(0), files: value(`[1,2,3]`)}, {result: exited(0), files: value(`[1,2]`)}}}
	v, err := judgeDir(t, f.write(t))
	if err != nil {
		t.Fatalf("Judge: %v", err)
	}
	mustValidate(t, v)
	got := map[string]string{}
	for _, c := range v.Cases {
		got[c.ID] = string(c.Outcome) + " by " + c.DecidedBy
	}
	if diff := cmp.Diff(map[string]string{"sorted": "PASS by checker", "wrong": "FAIL by checker"}, got); diff != "" {
		t.Errorf("cases (-want +got):\n%s", diff)
	}
	if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonWrongAnswer {
		t.Errorf("verdict %s %s, want FAIL wrong_answer", v.Outcome, v.ReasonCode)
	}
}

// TestCaseReasonCode: a case that fails carries its own reason code, the
// one the verdict takes when it is the first failure; a checker-rejected
// case had none (issue 29, item 8), only the verdict said wrong_answer.
func TestCaseReasonCode(t *testing.T) {
	module := testChecker(t)
	for _, command := range []bool{false, true} {
		name := "function"
		if command {
			name = "command"
		}
		t.Run(name, func(t *testing.T) {
			f := checkerFixture(module, "", command,
				checkerCase{id: "right", args: `["sorted",[2,1]]`, expected: `[1,2]`, output: `[2,1]`},
				checkerCase{id: "rejected", args: `["sorted",[2,1]]`, expected: `[1,2]`, output: `[3]`},
				checkerCase{id: "timed-out", args: `["sorted",[2,1]]`, expected: `[1,2]`, output: `[1,2]`,
					result: &RunResult{Exit: schema.ExitTimeout, DurationMS: 10000}},
			)
			if command {
				// A command's checker input is {"argv": [...]}: argv[0]
				// picks the mode and "sorted" reads args[1], so use "equal".
				f = checkerFixture(module, "", true,
					checkerCase{id: "right", args: `["equal"]`, expected: "ok\n", output: "ok\n"},
					checkerCase{id: "rejected", args: `["equal"]`, expected: "ok\n", output: "no\n"},
					checkerCase{id: "timed-out", args: `["equal"]`, expected: "ok\n", output: "ok\n",
						result: &RunResult{Exit: schema.ExitTimeout, DurationMS: 10000}},
				)
			}
			v, err := judgeDir(t, f.write(t))
			if err != nil {
				t.Fatalf("Judge: %v", err)
			}
			mustValidate(t, v)
			got := map[string]string{}
			for _, c := range v.Cases {
				got[c.ID] = string(c.Outcome) + " " + c.DecidedBy + " " + c.ReasonCode
			}
			want := map[string]string{
				"right":     "PASS checker ",
				"rejected":  "FAIL checker " + schema.ReasonWrongAnswer,
				"timed-out": "FAIL limit " + schema.ReasonTimeout,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cases (-want +got):\n%s", diff)
			}
		})
	}
}
