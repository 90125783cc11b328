//go:build engine

package controller_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// writeTask writes a task directory: task.json from spec, hidden/cases.json
// from cases, the hidden files and a public README, and loads it.
func writeTask(t *testing.T, spec, cases map[string]any, hidden map[string][]byte) *task.Task {
	t.Helper()
	dir := t.TempDir()
	spec["schema"] = "strictgrade.task/v1"
	spec["version"] = "1"
	spec["title"] = spec["id"]
	spec["runtime"] = "python"
	files := map[string][]byte{"public/README.md": []byte("A task at its limits.\n")}
	for name, v := range map[string]any{task.SpecFile: spec, "hidden/cases.json": cases} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	for name, data := range hidden {
		files["hidden/"+name] = data
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tk, err := task.Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// printer is a command solution that writes n bytes of 'x' to standard
// output whatever its input, and exits 0.
func printer(n int) map[string]string {
	return map[string]string{"solution": `#!/usr/bin/env python3
import sys
n, chunk = ` + strconv.Itoa(n) + `, b"x" * (1 << 20)
while n > 0:
    k = min(n, len(chunk))
    sys.stdout.buffer.write(chunk[:k])
    n -= k
sys.stdout.buffer.flush()
`}
}

// commandCases are n command cases, every second one graded on its
// standard output ("x" expected: any larger output is wrong or too large)
// and the others on their exit status (0) alone.
func commandCases(n int) map[string]any {
	cs := make([]map[string]any, n)
	for i := range cs {
		cs[i] = map[string]any{"id": "c" + strconv.Itoa(i), "stdin": ""}
		if i%2 == 0 {
			cs[i]["expected_stdout"] = "x"
		} else {
			cs[i]["expected_exit"] = 0
		}
	}
	return map[string]any{"compare": map[string]any{"kind": "exact"}, "cases": cs}
}

// alternate is n case lines, even ones ending in even, odd ones in odd.
func alternate(n int, even, odd string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "c" + strconv.Itoa(i) + ":" + even
		if i%2 == 1 {
			out[i] = "c" + strconv.Itoa(i) + ":" + odd
		}
	}
	return out
}

// caseOutcomes lists the verdict's cases as "id:OUTCOME:decided_by".
func caseOutcomes(v *schema.Verdict) []string {
	var out []string
	for _, c := range v.Cases {
		out = append(out, c.ID+":"+string(c.Outcome)+":"+c.DecidedBy)
	}
	return out
}

// TestOutputAtTaskLimits grades submissions whose outputs reach the task's
// own limits: every grade is PASS or FAIL, decided by the judge, never an
// ERROR of a judge sandbox too small for what the task admits (issue 29,
// item 3). Outputs larger than the judge reads fail their case as
// output_limit; outputs the judge does not read do not matter.
func TestOutputAtTaskLimits(t *testing.T) {
	const mib = 1 << 20
	maxOutput := 256 * mib // task-v1.json: limits.output_bytes maximum
	tests := []struct {
		name  string
		tk    func(t *testing.T) *task.Task
		files map[string]string
		want  schema.Outcome
		cases []string
	}{{
		// The reproduction: the judge's tree could not hold a
		// 65 MiB stdout (sginit: file too large).
		name: "one case of 65 MiB under output_bytes 100 MiB",
		tk: func(t *testing.T) *task.Task {
			return writeTask(t, map[string]any{"id": "big-stdout", "kind": "command", "command": map[string]any{"path": "solution"},
				"artifacts": []string{"solution"}, "limits": map[string]any{"output_bytes": 100 * mib, "memory_mb": 256, "case_seconds": 60}}, commandCases(2), nil)
		},
		files: printer(65 * mib),
		want:  schema.OutcomeFail,
		cases: []string{"c0:FAIL:limit", "c1:PASS:exit_code"},
	}, {
		name: "one case at the maximum output_bytes",
		tk: func(t *testing.T) *task.Task {
			return writeTask(t, map[string]any{"id": "max-stdout", "kind": "command", "command": map[string]any{"path": "solution"},
				"artifacts": []string{"solution"}, "limits": map[string]any{"output_bytes": maxOutput, "memory_mb": 256, "case_seconds": 60}}, commandCases(1), nil)
		},
		files: printer(maxOutput),
		want:  schema.OutcomeFail,
		cases: []string{"c0:FAIL:limit"},
	}, {
		// More than the judge's memory (1 GiB) in all: its tree held
		// every output whole.
		name: "five cases at the maximum output_bytes",
		tk: func(t *testing.T) *task.Task {
			return writeTask(t, map[string]any{"id": "max-stdouts", "kind": "command", "command": map[string]any{"path": "solution"},
				"artifacts": []string{"solution"}, "limits": map[string]any{"output_bytes": maxOutput, "memory_mb": 256, "case_seconds": 60}}, commandCases(5), nil)
		},
		files: printer(maxOutput),
		want:  schema.OutcomeFail,
		cases: []string{"c0:FAIL:limit", "c1:PASS:exit_code", "c2:FAIL:limit", "c3:PASS:exit_code", "c4:FAIL:limit"},
	}, {
		// The second reproduction: each output within the judge
		// sandbox's file size limit, all of them more than its memory
		// (the judge was killed, out of memory).
		name: "seventeen cases of 64 MiB",
		tk: func(t *testing.T) *task.Task {
			return writeTask(t, map[string]any{"id": "many-stdouts", "kind": "command", "command": map[string]any{"path": "solution"},
				"artifacts": []string{"solution"}, "limits": map[string]any{"output_bytes": 64 * mib, "memory_mb": 256, "case_seconds": 60}}, commandCases(17), nil)
		},
		files: printer(64 * mib),
		want:  schema.OutcomeFail,
		cases: alternate(17, "FAIL:limit", "PASS:exit_code"),
	}, {
		// A function's record above what the judge reads of a file, and
		// above the judge sandbox's file size limit.
		name: "a function returning 70 MiB",
		tk: func(t *testing.T) *task.Task {
			return writeTask(t, map[string]any{"id": "big-value", "kind": "function", "function": map[string]any{"module": "solution", "name": "solve"},
				"artifacts": []string{"solution.py"}, "limits": map[string]any{"output_bytes": maxOutput, "memory_mb": 1024, "case_seconds": 60}},
				map[string]any{"compare": map[string]any{"kind": "json"}, "cases": []map[string]any{{"id": "c0", "args": []any{}, "expected": "x"}}}, nil)
		},
		files: map[string]string{"solution.py": "def solve():\n    return 'x' * (70 << 20)\n"},
		want:  schema.OutcomeFail,
		cases: []string{"c0:FAIL:limit"},
	}, {
		// A data case's output file near the maximum output_bytes (its
		// output directory is a tmpfs of that size).
		name: "a data file of 250 MiB",
		tk: func(t *testing.T) *task.Task {
			return writeTask(t, map[string]any{"id": "big-file", "kind": "data", "data": map[string]any{"argv": []string{"python3", "-I", "solution.py"}},
				"artifacts": []string{"solution.py"}, "limits": map[string]any{"output_bytes": maxOutput, "memory_mb": 512, "case_seconds": 60}},
				map[string]any{"compare": map[string]any{"kind": "exact"}, "cases": []map[string]any{{"id": "c0", "expected_files": map[string]string{"out.txt": "want.txt"}}}},
				map[string][]byte{"want.txt": []byte("y")})
		},
		files: map[string]string{"solution.py": "chunk = b'y' * (1 << 20)\nwith open('/output/out.txt', 'wb') as f:\n    for _ in range(250):\n        f.write(chunk)\n"},
		want:  schema.OutcomeFail,
		cases: []string{"c0:FAIL:limit"},
	}, {
		// Data cases whose outputs add up to more than the judge reads in
		// all (judge.MaxOutputsSize, 64 MiB): the first seven, 63 MiB, are
		// read and pass, the eighth is larger than what is left and fails.
		name: "data cases past the judge's outputs budget",
		tk: func(t *testing.T) *task.Task {
			cs := make([]map[string]any, 8)
			for i := range cs {
				cs[i] = map[string]any{"id": "c" + strconv.Itoa(i), "expected_files": map[string]string{"out.txt": "want.txt"}}
			}
			return writeTask(t, map[string]any{"id": "many-files", "kind": "data", "data": map[string]any{"argv": []string{"python3", "-I", "solution.py"}},
				"artifacts": []string{"solution.py"}, "limits": map[string]any{"output_bytes": 16 * mib, "memory_mb": 256, "case_seconds": 60}},
				map[string]any{"compare": map[string]any{"kind": "exact"}, "cases": cs},
				map[string][]byte{"want.txt": bytes.Repeat([]byte("y"), 9*mib)})
		},
		files: map[string]string{"solution.py": "with open('/output/out.txt', 'wb') as f:\n    f.write(b'y' * (9 << 20))\n"},
		want:  schema.OutcomeFail,
		cases: []string{"c0:PASS:exact", "c1:PASS:exact", "c2:PASS:exact", "c3:PASS:exact", "c4:PASS:exact", "c5:PASS:exact", "c6:PASS:exact", "c7:FAIL:limit"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := tt.tk(t)
			res, err := ctrl.Grade(t.Context(), tk, controller.Submission{Dir: writeSub(t, tt.files)})
			if err != nil {
				reason := ""
				if res != nil {
					reason = res.Verdict.Reason
				}
				t.Fatalf("Grade: %v (%s)", err, reason)
			}
			verify(t, tk, res)
			assertClean(t, res.Verdict.RunID)
			v := res.Verdict
			if v.Outcome != tt.want || strings.Join(caseOutcomes(v), " ") != strings.Join(tt.cases, " ") {
				t.Errorf("%s (%s: %s), cases %v; want %s, cases %v", v.Outcome, v.ReasonCode, v.Reason, caseOutcomes(v), tt.want, tt.cases)
			}
		})
	}
}
