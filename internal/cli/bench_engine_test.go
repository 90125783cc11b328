//go:build engine

package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestBenchSum benches examples/sum against the real engine, small: the
// honest solution twice per side and the wrong one once. Both sides must
// be in the output and agree (the baseline passes the honest solution and
// fails the wrong one, as the strict tier does), and nothing this process
// made may be left behind.
func TestBenchSum(t *testing.T) {
	code, stdout, stderr := run(t, "bench", "--task", sumTask, "--submission", sumHonest, "-n", "2")
	if code != ExitOK {
		t.Fatalf("honest: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, re := range []string{
		`(?m)^task sum \(function, \d+ cases\), 2 runs per side, 1 in flight, docker/`,
		`(?m)^strict +2 +2 +0 +\d+ +\d+ +\d+ +\d+/\d+ +[0-9.]+ +[0-9.]+$`,
		`(?m)^one-container +2 +2 +0 +\d+ +\d+ +\d+ +0/0 +[0-9.]+ +[0-9.]+$`,
		`(?m)^strict/one-container: p50 [0-9.]+x, throughput [0-9.]+x, stream throughput [0-9.]+x$`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("honest: output does not match %s:\n%s", re, stdout)
		}
	}
	if strings.Contains(stdout, "DISAGREEMENT") {
		t.Errorf("honest: the sides disagree:\n%s", stdout)
	}

	code, stdout, stderr = run(t, "bench", "--task", sumTask, "--submission", sumWrong, "-n", "1", "--json")
	if code != ExitOK {
		t.Fatalf("wrong: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("wrong: %v\n%s", err, stdout)
	}
	if rep.Strict.Fail != 1 || rep.OneContainer.Fail != 1 || len(rep.Disagreements) != 0 {
		t.Errorf("wrong: both sides must fail it: %+v", rep)
	}
	if !strings.Contains(stderr, "one-container FAIL") || !strings.Contains(stderr, "case negatives") {
		t.Errorf("wrong: the baseline should fail the case with negative numbers:\n%s", stderr)
	}

	assertNothingLeft(t)
}
