package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

func TestBenchArgs(t *testing.T) {
	a, err := parseBench([]string{"--task", "T", "--submission", "S"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if a.n != 10 || a.parallel != 1 || a.json || a.task != "T" || a.submission != "S" {
		t.Errorf("defaults: %+v", a)
	}
	a, err = parseBench([]string{"--task", "T", "--submission", "S", "-n", "4", "--parallel", "2", "--json"}, &bytes.Buffer{})
	if err != nil || a.n != 4 || a.parallel != 2 || !a.json {
		t.Errorf("flags: %+v, %v", a, err)
	}
}

// TestBenchUsage: a wrong command line or task is a usage error found
// before the daemon is asked for anything (DOCKER_HOST names none).
func TestBenchUsage(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent")
	compatTask := filepath.Join("..", "..", "examples", "compat-textkit", "task")
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"bench"}, "--task DIR and --submission PATH are required"},
		{[]string{"bench", "--task", sumTask}, "--task DIR and --submission PATH are required"},
		{[]string{"bench", "--task", sumTask, "--submission", sumHonest, "extra"}, "and nothing else"},
		{[]string{"bench", "--task", sumTask, "--submission", sumHonest, "-n", "0"}, "-n must be at least 1"},
		{[]string{"bench", "--task", sumTask, "--submission", sumHonest, "--parallel", "0"}, "--parallel must be at least 1"},
		{[]string{"bench", "--task", sumTask, "--submission", sumHonest, "-n", "2", "--parallel", "3"}, "--parallel 3 is more than -n 2"},
		{[]string{"bench", "--bogus"}, "flag provided but not defined"},
		{[]string{"bench", "--task", "nowhere", "--submission", sumHonest}, "nowhere"},
		{[]string{"bench", "--task", sumTask, "--submission", "nowhere"}, "nowhere"},
		{[]string{"bench", "--task", compatTask, "--submission", sumHonest}, "bench takes a strict-tier task"},
	} {
		code, _, stderr := run(t, tt.args...)
		if code != ExitUsage || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", tt.args, code, ExitUsage, tt.stderr, stderr)
		}
	}
	if code, _, stderr := run(t, "bench", "-h"); code != ExitOK || !strings.Contains(stderr, "usage: strictgrade bench --task DIR") {
		t.Errorf("help: exit %d\n%s", code, stderr)
	}
}

// TestBenchDaemonUnreachable: no daemon is exit 3, as for grade.
func TestBenchDaemonUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent")
	code, _, stderr := run(t, "bench", "--task", sumTask, "--submission", sumHonest, "-n", "1")
	if code != ExitError || !strings.Contains(stderr, "not reachable") {
		t.Fatalf("exit %d, want %d\n%s", code, ExitError, stderr)
	}
}

func ms(v ...int) []time.Duration {
	d := make([]time.Duration, len(v))
	for i, x := range v {
		d[i] = time.Duration(x) * time.Millisecond
	}
	return d
}

func TestPercentile(t *testing.T) {
	for _, tt := range []struct {
		d            []time.Duration
		p50, p90, mx time.Duration
	}{
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 5 * time.Millisecond, 9 * time.Millisecond, 10 * time.Millisecond},
		{ms(7), 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond},
		{ms(300, 100), 100 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond},
		{ms(1, 2, 3), 2 * time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond},
		{nil, 0, 0, 0},
	} {
		in := slices.Clone(tt.d)
		if p50, p90, mx := percentile(tt.d, 50), percentile(tt.d, 90), percentile(tt.d, 100); p50 != tt.p50 || p90 != tt.p90 || mx != tt.mx {
			t.Errorf("%v: p50 %v p90 %v max %v, want %v %v %v", tt.d, p50, p90, mx, tt.p50, tt.p90, tt.mx)
		}
		if !slices.Equal(in, tt.d) {
			t.Errorf("percentile sorted its input in place: %v", tt.d)
		}
	}
}

func TestThroughput(t *testing.T) {
	for _, tt := range []struct {
		n    int
		wall time.Duration
		want float64
	}{
		{10, time.Minute, 10},
		{10, 5 * time.Second, 120},
		{3, 7 * time.Second, 25.7},
		{1, 0, 0},
	} {
		if got := throughput(tt.n, tt.wall); got != tt.want {
			t.Errorf("%d in %v: %v grades/min, want %v", tt.n, tt.wall, got, tt.want)
		}
	}
	// With two grades in flight, a side's rate is its runs over the wall
	// time of its batches, not over the sum of the latencies.
	samples := []sample{
		{latency: 2 * time.Second, outcome: schema.OutcomePass},
		{latency: 2 * time.Second, outcome: schema.OutcomePass},
		{latency: 3 * time.Second, outcome: schema.OutcomeFail},
		{latency: 3 * time.Second, outcome: schema.OutcomePass},
	}
	s := summarize(sideStrict, samples, 6*time.Second)
	want := sideReport{Side: sideStrict, Runs: 4, Pass: 3, Fail: 1, P50MS: 2000, P90MS: 3000, MaxMS: 3000, WallMS: 6000, GradesPerMin: 40}
	if s != want {
		t.Errorf("summarize: %+v, want %+v", s, want)
	}
}

// testReport is a report with figures chosen by hand.
func testReport() *benchReport {
	strict := summarize(sideStrict, []sample{
		{latency: 900 * time.Millisecond, outcome: schema.OutcomePass},
		{latency: 1100 * time.Millisecond, queued: 200 * time.Millisecond, outcome: schema.OutcomePass},
	}, 2*time.Second)
	one := summarize(sideOne, []sample{
		{latency: 300 * time.Millisecond, outcome: schema.OutcomePass},
		{latency: 500 * time.Millisecond, outcome: schema.OutcomePass},
	}, 800*time.Millisecond)
	strict.StreamGradesPerMin, one.StreamGradesPerMin = 50, 100
	r := newReport(2, 1, strict, one)
	r.Task, r.Kind, r.Cases, r.Submission, r.Runtime = "sum", "function", 7, "sol", "docker/runc"
	return r
}

func TestBenchTable(t *testing.T) {
	var out bytes.Buffer
	if err := testReport().write(&out, false); err != nil {
		t.Fatal(err)
	}
	want := `task sum (function, 7 cases), 2 runs per side, 1 in flight, docker/runc
SIDE           RUNS  PASS  FAIL  P50 MS  P90 MS  MAX MS  QUEUED P50/MAX MS  GRADES/MIN  STREAM GRADES/MIN
strict         2     2     0     900     1100    1100    0/200              60.0        50.0
one-container  2     2     0     300     500     500     0/0                150.0       100.0
strict/one-container: p50 3.00x, throughput 0.40x, stream throughput 0.50x
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestBenchJSON(t *testing.T) {
	var out bytes.Buffer
	r := testReport()
	if err := r.write(&out, true); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Task, Kind, Runtime, Submission string
		Cases, Runs, Parallel           int
		Strict                          sideReport
		OneContainer                    sideReport `json:"one_container"`
		Ratio                           struct {
			P50              float64 `json:"p50"`
			Throughput       float64 `json:"throughput"`
			StreamThroughput float64 `json:"stream_throughput"`
		} `json:"strict_over_one_container"`
		Disagreements []string
	}
	text := out.String()
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if got.Task != "sum" || got.Kind != "function" || got.Cases != 7 || got.Submission != "sol" || got.Runtime != "docker/runc" || got.Runs != 2 || got.Parallel != 1 || got.Strict != r.Strict || got.OneContainer != r.OneContainer ||
		got.Ratio.P50 != 3 || got.Ratio.Throughput != 0.4 || got.Ratio.StreamThroughput != 0.5 || got.Disagreements == nil || len(got.Disagreements) != 0 {
		t.Errorf("JSON: %+v", got)
	}
	if !strings.Contains(text, `"disagreements": []`) {
		t.Errorf("no disagreements should print as an empty list:\n%s", text)
	}
}

func TestReadBaselineReport(t *testing.T) {
	cases := []judge.Case{{ID: "a"}, {ID: "b"}}
	ok := func(stdout string) *sandbox.Result {
		return &sandbox.Result{Exit: sandbox.ExitExited, Stdout: []byte(stdout)}
	}
	for _, tt := range []struct {
		name    string
		res     *sandbox.Result
		outcome schema.Outcome
		cases   []bool
		reason  string
		err     string
	}{
		{name: "pass", res: ok("case\t0\tPASS\t\ncase\t1\tPASS\t\nresult\tPASS\t2\t2\n"),
			outcome: schema.OutcomePass, cases: []bool{true, true}},
		{name: "fail", res: ok("case\t0\tPASS\t\ncase\t1\tFAIL\tline 3 differs\nresult\tFAIL\t1\t2\n"),
			outcome: schema.OutcomeFail, cases: []bool{true, false}, reason: "case b: line 3 differs"},
		{name: "no report", res: &sandbox.Result{Exit: sandbox.ExitExited, Code: 7, Stdout: []byte("case\t0\tPASS\t\n")},
			outcome: schema.OutcomeFail, reason: "the process ended before its report (exit status 7)"},
		{name: "killed", res: &sandbox.Result{Exit: sandbox.ExitOOM},
			outcome: schema.OutcomeFail, reason: "the container was stopped: oom"},
		{name: "exit after report", res: &sandbox.Result{Exit: sandbox.ExitExited, Code: 1, Stdout: []byte("case\t0\tPASS\t\ncase\t1\tPASS\t\nresult\tPASS\t2\t2\n")},
			outcome: schema.OutcomeFail, reason: "exited with status 1 after its report"},
		{name: "program error", res: ok("error\tKeyError: 'x'\n"), err: "the baseline program failed: KeyError"},
		{name: "counts disagree", res: ok("case\t0\tPASS\t\ncase\t1\tFAIL\tx\nresult\tPASS\t2\t2\n"), err: "malformed"},
		{name: "case out of order", res: ok("case\t1\tPASS\t\n"), err: "malformed"},
		{name: "too many cases", res: ok("case\t0\tPASS\t\ncase\t1\tPASS\t\ncase\t2\tPASS\t\n"), err: "malformed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := readBaselineReport(tt.res, cases)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || s.outcome != tt.outcome || s.reason != tt.reason || !slices.Equal(s.cases, tt.cases) {
				t.Fatalf("%+v, %v; want %s %q %v", s, err, tt.outcome, tt.reason, tt.cases)
			}
		})
	}
}

func mustLoadTask(t *testing.T, dir string) *task.Task {
	t.Helper()
	tk, err := task.Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestDisagreement(t *testing.T) {
	b := &bench{task: mustLoadTask(t, sumTask)}
	pass := sample{outcome: schema.OutcomePass, cases: slices.Repeat([]bool{true}, len(b.task.Cases.Cases))}
	failOne := sample{outcome: schema.OutcomeFail, cases: slices.Clone(pass.cases), reason: "case negatives: x"}
	failOne.cases[3] = false
	failOther := sample{outcome: schema.OutcomeFail, cases: slices.Clone(pass.cases)}
	failOther.cases[4] = false
	for _, tt := range []struct {
		strict, one sample
		want        string
	}{
		{pass, pass, ""},
		{failOne, failOne, ""},
		{pass, failOne, "strict PASS, one-container FAIL (case negatives: x)"},
		{failOther, failOne, "case negatives: strict PASS, one-container FAIL (case negatives: x)"},
		// A grade that ended before its cases: the outcome alone counts.
		{sample{outcome: schema.OutcomeFail}, failOne, ""},
	} {
		if got := b.disagreement(tt.strict, tt.one); got != tt.want {
			t.Errorf("disagreement: %q, want %q", got, tt.want)
		}
	}
}

// TestBaselineComparators runs the baseline program's comparators under
// the host's python3 and checks each against the judge's on the same
// bytes, so that the yardstick's pass/fail is the judge's. It needs
// python3 (the runtime image has 3.11), not a daemon.
func TestBaselineComparators(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	type cmpCase struct {
		Cmp  judge.Comparator `json:"cmp"`
		Got  []byte           `json:"got"`
		Want []byte           `json:"want"`
	}
	c := func(kind string) judge.Comparator { return judge.Comparator{Kind: kind} }
	tol := judge.Comparator{Kind: judge.KindNumbers, AbsTol: 0.01}
	rel := judge.Comparator{Kind: judge.KindJSON, RelTol: 1e-9}
	nan := judge.Comparator{Kind: judge.KindNumbers, AllowNaN: true}
	unord := judge.Comparator{Kind: judge.KindJSON, UnorderedArrays: true}
	unordTol := judge.Comparator{Kind: judge.KindJSON, UnorderedArrays: true, AbsTol: 0.6}
	fold := judge.Comparator{Kind: judge.KindLines, IgnoreCase: true}
	csvH := judge.Comparator{Kind: judge.KindCSV, CSVHeader: true, RelTol: 1e-6}
	table := []struct {
		cmp       judge.Comparator
		got, want string
	}{
		{c(judge.KindExact), "a\n", "a\n"},
		{c(judge.KindExact), "a", "a\n"},
		{c(judge.KindLines), "a \r\nb\n\n\n", "a\nb"},
		{c(judge.KindLines), "a\n\nb", "a\nb"},
		{c(judge.KindLines), " a", "a"},
		{c(judge.KindLines), "", "\n \n"},
		{fold, "HELLO 3\nWorld", "hello 3\nworld\n"},
		{c(judge.KindLines), "HELLO", "hello"},
		{c(judge.KindTokens), " a\tb\n\x0bc ", "a b c"},
		{c(judge.KindTokens), "a b", "a b c"},
		{c(judge.KindNumbers), "1 1.0 1e0 .5", "1.0 1 10e-1 0.5"},
		{c(judge.KindNumbers), "0.1", "0.10000000000000001"},
		{c(judge.KindNumbers), "1_000", "1000"},
		{c(judge.KindNumbers), "0x10", "16"},
		{c(judge.KindNumbers), "-inf +Infinity", "-INF inf"},
		{c(judge.KindNumbers), "nan", "1"},
		{nan, "NaN", "nan"},
		{tol, "1.005", "1"},
		{tol, "1.02", "1"},
		{c(judge.KindNumbers), "-0", "0"},
		{c(judge.KindJSON), `{"b": 1, "a": [1.0, true]}`, `{"a":[1,true],"b":1e0}`},
		{c(judge.KindJSON), `[true]`, `[1]`},
		{c(judge.KindJSON), `[1, 2]`, `[2, 1]`},
		{unord, `[1, 2, [3, 4]]`, `[[3, 4], 2, 1]`},
		{unord, `[1, 1, 2]`, `[1, 2, 2]`},
		{unordTol, `[1, 1.5]`, `[2, 1]`},
		{rel, `{"m": 0.30000000000000004}`, `{"m": 0.3}`},
		{rel, `{"m": 0.31}`, `{"m": 0.3}`},
		{c(judge.KindJSON), `{"a": 1, "a": 1}`, `{"a": 1}`},
		{c(judge.KindJSON), `NaN`, `1`},
		{c(judge.KindJSON), `{"a": null}`, `{}`},
		{c(judge.KindJSON), `"x"`, `"x"`},
		{c(judge.KindJSON), `1 2`, `1`},
		{c(judge.KindUnorderedLines), "b\na\na\n", "a\nb\na"},
		{c(judge.KindUnorderedLines), "b\na\n", "a\nb\na"},
		{csvH, "name,v\nx, 1.0000001\n\ny,\"2\"\n", "name,v\nx,1\ny,2\n"},
		{csvH, "Name,v\nx,1\n", "name,v\nx,1\n"},
		{csvH, "name,v\nx,1,3\n", "name,v\nx,1\n"},
		{csvH, "name,v\nx,abc\n", "name,v\nx,1\n"},
	}
	in := make([]cmpCase, len(table))
	for i, tt := range table {
		in[i] = cmpCase{tt.cmp, []byte(tt.got), []byte(tt.want)}
	}
	spec, err := json.Marshal(map[string]any{"comparisons": in})
	if err != nil {
		t.Fatal(err)
	}
	// The program reads its standard input and keeps descriptor 1 when it
	// loads; under a name other than __main__ it runs no case.
	script := filepath.Join(t.TempDir(), "baseline.py")
	if err := os.WriteFile(script, []byte(baselineScript), 0o644); err != nil {
		t.Fatal(err)
	}
	driver := `
import base64, sys
ns = {"__name__": "baseline"}
exec(compile(open(sys.argv[1]).read(), "bench_baseline.py", "exec"), ns)
for c in ns["SPEC"]["comparisons"]:
    why = ns["compare"](c["cmp"], base64.b64decode(c["got"]), base64.b64decode(c["want"]))
    ns["emit"]("equal" if why is None else "differs")
`
	cmd := exec.Command(py, "-I", "-c", driver, script)
	cmd.Stdin = bytes.NewReader(spec)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(table) {
		t.Fatalf("%d answers for %d comparisons:\n%s\n%s", len(lines), len(table), out, stderr.String())
	}
	equal := 0
	for i, tt := range table {
		want := judge.Compare(tt.cmp, []byte(tt.got), []byte(tt.want)).Equal
		if got := lines[i] == "equal"; got != want {
			t.Errorf("%s %q vs %q: the baseline says equal=%v, the judge %v", tt.cmp.Kind, tt.got, tt.want, got, want)
		}
		if want {
			equal++
		}
	}
	if equal == 0 || equal == len(table) {
		t.Errorf("the table must hold both equal and unequal pairs (%d of %d equal)", equal, len(table))
	}
}
