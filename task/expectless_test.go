package task_test

import (
	"testing"
)

// TestCheckerCaseWithoutExpected: a function task whose checker decides a
// case without an expected value loads (issue 29, item 8: it was refused,
// though the format implied it was allowed), and task check's checker
// probes take it: nothing to accept, wrong outputs still to reject.
func TestCheckerCaseWithoutExpected(t *testing.T) {
	t.Parallel()
	tk := checkerTask(t, functionSpec, testChecker(t), "", `{"id":"a","args":["equal"]},{"id":"b","args":["equal"],"expected":[1]}`)
	if tk.Cases.Cases[0].Expected != nil {
		t.Errorf("case a's expected is %s, want none", tk.Cases.Cases[0].Expected)
	}
	f, err := tk.CheckCheckers()
	if err != nil {
		t.Fatal(err)
	}
	if f.Cases != 2 || f.Expected != 1 || f.Accept != "" || f.Reject != "" {
		t.Errorf("findings %+v, want 2 cases, 1 with an expected output, the checker fit", *f)
	}
}
