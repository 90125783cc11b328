package judge

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/schema"
)

const okCases = `{"compare":{"kind":"exact"},"cases":[
	{"id":"a","expected_stdout":"ok\n"},
	{"id":"b","expected_stdout":"ok\n"},
	{"id":"c","expected_stdout":"ok\n"},
	{"id":"d","expected_stdout":"ok\n"}
]}`

// TestReadInputOutputsBudget: candidate outputs sized to use up the
// judge's read budget starve neither the trusted files read after them nor
// the judge; an output beyond what is left fails its case (output_limit),
// and the outputs after it are still read within what remains.
func TestReadInputOutputsBudget(t *testing.T) {
	lim := limits{file: 1000, hidden: 1 << 20, outputs: 150}
	f := fixture{kind: schema.KindCommand, cases: okCases, outs: []out{
		stdout(0, strings.Repeat("a", 100)), // read: 50 bytes left
		stdout(0, strings.Repeat("b", 51)),  // more than is left
		stdout(0, "ok\n"),
		stdout(0, "ok\n"),
	}}
	in, err := readInput(f.write(t), lim)
	if err != nil {
		t.Fatalf("outputs that use up the budget made the judge fail: %v", err)
	}
	for i, o := range in.Outputs {
		if o.Result == nil {
			t.Fatalf("result.json of case %d was not read", i)
		}
	}
	if b := in.Outputs[1].Stdout; b == nil || !b.TooLarge || b.Limit != 50 {
		t.Fatalf("case b: %+v, want too large for the 50 bytes left", b)
	}
	v, err := Judge(in)
	if err != nil {
		t.Fatal(err)
	}
	mustValidate(t, v)
	want := []struct {
		outcome schema.Outcome
		by      string
	}{
		{schema.OutcomeFail, KindExact},
		{schema.OutcomeFail, schema.DecidedByLimit},
		{schema.OutcomePass, KindExact},
		{schema.OutcomePass, KindExact},
	}
	for i, w := range want {
		if c := v.Cases[i]; c.Outcome != w.outcome || c.DecidedBy != w.by {
			t.Errorf("case %s: %s by %s (%s), want %s by %s", c.ID, c.Outcome, c.DecidedBy, c.Reason, w.outcome, w.by)
		}
	}
	if !strings.Contains(v.Cases[1].Reason, "larger than what was left (50 bytes)") {
		t.Errorf("reason %q", v.Cases[1].Reason)
	}
	if v.ReasonCode != schema.ReasonWrongAnswer {
		t.Errorf("verdict %s %s, want the first failure's code", v.ReasonCode, v.Reason)
	}
}

// TestReadInputHiddenBudget: hidden files have a budget of their own,
// read before any output, that candidate outputs never use.
func TestReadInputHiddenBudget(t *testing.T) {
	data := func(expected string, outs ...string) fixture {
		f := fixture{
			kind:   schema.KindData,
			cases:  `{"cases":[{"id":"x","expected_files":{"out.txt":"want.txt"}}]}`,
			hidden: map[string]string{"want.txt": expected},
		}
		for _, o := range outs {
			f.outs = append(f.outs, out{result: exited(0), files: map[string]string{"out.txt": o}})
		}
		return f
	}
	cases := len(`{"cases":[{"id":"x","expected_files":{"out.txt":"want.txt"}}]}`)

	// Hidden files within their budget; an output of the same size as the
	// rest of the budget does not matter to it.
	lim := limits{file: 100, hidden: int64(cases + 60), outputs: 10}
	in, err := readInput(data(strings.Repeat("e", 60), strings.Repeat("e", 60)).write(t), lim)
	if err != nil {
		t.Fatalf("hidden files within their budget: %v", err)
	}
	if b := in.Outputs[0].Files["out.txt"]; b == nil || !b.TooLarge {
		t.Errorf("output %+v, want too large", b)
	}

	// Hidden files beyond their budget are the task's problem: an error,
	// whatever the outputs.
	lim.hidden = int64(cases + 59)
	_, err = readInput(data(strings.Repeat("e", 60), "").write(t), lim)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "hidden files") {
		t.Errorf("err = %v, want ErrTooLarge for the hidden files", err)
	}
}

// TestReadInputTooLargeMarked: an output the controller marks too large
// (RunResult.TooLarge) is recorded as too large with the limit the budget
// gives it there, without being read or charged, exactly as the same
// output left whole in the input would be; marks that name nothing the
// judge reads are the controller's error.
func TestReadInputTooLargeMarked(t *testing.T) {
	lim := limits{file: 1000, hidden: 1 << 20, outputs: 150}
	big := strings.Repeat("b", 51)
	whole := fixture{kind: schema.KindCommand, cases: okCases, outs: []out{
		stdout(0, strings.Repeat("a", 100)), // read: 50 bytes left
		stdout(0, big),                      // more than is left
		stdout(0, "ok\n"),
		stdout(0, "ok\n"),
	}}
	marked := whole
	marked.outs = slices.Clone(whole.outs)
	marked.outs[1] = out{result: &RunResult{Exit: schema.ExitExited, DurationMS: 25, TooLarge: []int{0}}}
	want, err := readInput(whole.write(t), lim)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readInput(marked.write(t), lim)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got.Outputs {
		got.Outputs[i].Result, want.Outputs[i].Result = nil, nil
	}
	if diff := cmp.Diff(want.Outputs, got.Outputs); diff != "" {
		t.Errorf("a marked output reads otherwise than the output itself (-whole +marked):\n%s", diff)
	}

	for _, bad := range [][]int{{1}, {-1}, {0, 0}} {
		f := whole
		f.outs = slices.Clone(whole.outs)
		f.outs[1] = out{result: &RunResult{Exit: schema.ExitExited, TooLarge: bad}}
		if _, err := readInput(f.write(t), lim); !errors.Is(err, ErrInput) {
			t.Errorf("too_large %v: err = %v, want ErrInput", bad, err)
		}
	}
}

// TestCasesReads: what the judge reads of each kind of case.
func TestCasesReads(t *testing.T) {
	tests := []struct {
		kind  schema.TaskKind
		cases string
		want  [][]string
	}{
		{schema.KindFunction, `{"cases":[{"id":"a","args":[],"expected":1}]}`, [][]string{{"files/value.json"}}},
		{schema.KindCommand, `{"cases":[{"id":"a","expected_stdout":""},{"id":"b","expected_exit":3}]}`, [][]string{{"stdout"}, nil}},
		{schema.KindData, `{"cases":[{"id":"a","expected_files":{"z":"w","a/b":"w"}}]}`, [][]string{{"files/a/b", "files/z"}}},
	}
	for _, tt := range tests {
		cs, err := LoadCases([]byte(tt.cases), tt.kind)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]string
		for i := range cs.Cases {
			got = append(got, cs.Reads(tt.kind, i))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.kind, diff)
		}
	}
}
