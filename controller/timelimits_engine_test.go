//go:build engine

package controller_test

import (
	"testing"

	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// TestTimeLimitsInTheVerdict: a case's time limit is a CPU-time budget
// (issue 30). A function that loops on the CPU fails each case as a
// timeout at its CPU budget (it was runtime_error), a command that loops
// meets its container's budget, a sleeper meets the wall-clock backstop;
// the verdict records each case's CPU time and which limit it met, and an
// honest case its CPU time.
func TestTimeLimitsInTheVerdict(t *testing.T) {
	t.Parallel()
	fn := func(id string) *task.Task {
		return writeTask(t, map[string]any{"id": id, "kind": "function", "function": map[string]any{"module": "solution", "name": "solve"},
			"artifacts": []string{"solution.py"}, "limits": map[string]any{"case_seconds": 1}},
			map[string]any{"compare": map[string]any{"kind": "json"}, "cases": []map[string]any{
				{"id": "c0", "args": []any{0}, "expected": 0}, {"id": "c1", "args": []any{1}, "expected": 1}}}, nil)
	}
	cmd := writeTask(t, map[string]any{"id": "loop-cmd", "kind": "command", "command": map[string]any{"path": "solution"},
		"artifacts": []string{"solution"}, "limits": map[string]any{"case_seconds": 1}}, commandCases(1), nil)
	for _, tt := range []struct {
		name  string
		tk    *task.Task
		files map[string]string
		want  schema.Outcome
		limit schema.Limit
	}{
		{"a function loops", fn("loop-fn"), map[string]string{"solution.py": "def solve(n):\n    while True:\n        pass\n"}, schema.OutcomeFail, schema.LimitCPU},
		{"a function sleeps", fn("sleep-fn"), map[string]string{"solution.py": "import time\ndef solve(n):\n    time.sleep(60)\n"}, schema.OutcomeFail, schema.LimitWall},
		{"a command loops", cmd, map[string]string{"solution": "#!/usr/bin/env python3\nwhile True:\n    pass\n"}, schema.OutcomeFail, schema.LimitCPU},
		{"a function answers", fn("honest-fn"), map[string]string{"solution.py": "def solve(n):\n    return n\n"}, schema.OutcomePass, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := grade(t, tt.tk, controller.Submission{Dir: writeSub(t, tt.files)})
			v := res.Verdict
			if v.Outcome != tt.want {
				t.Fatalf("%s %s: %s", v.Outcome, v.ReasonCode, v.Reason)
			}
			if tt.limit != "" && v.ReasonCode != schema.ReasonTimeout {
				t.Fatalf("reason code %s (%s), want timeout", v.ReasonCode, v.Reason)
			}
			for _, c := range v.Cases {
				if c.CPUMS == nil {
					t.Errorf("case %s records no CPU time", c.ID)
				}
				if c.Limit != tt.limit {
					t.Errorf("case %s: limit %q, want %q (%s)", c.ID, c.Limit, tt.limit, c.Reason)
				}
				if tt.limit != "" && (c.Exit != schema.ExitTimeout || c.ReasonCode != schema.ReasonTimeout) {
					t.Errorf("case %s: exit %s, reason %s: %s", c.ID, c.Exit, c.ReasonCode, c.Reason)
				}
				// The shim's own count of a call's CPU time is the
				// process clock's, which may read a little below what
				// the kernel's timer charged (874 ms of a 1 s budget
				// was seen on a loaded machine).
				if tt.limit == schema.LimitCPU && *c.CPUMS < 500 {
					t.Errorf("case %s stopped at its CPU budget after %d ms of CPU", c.ID, *c.CPUMS)
				}
			}
		})
	}
}
