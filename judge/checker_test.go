package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/schema"
)

// The test checker (testdata/checker) is built once per test binary, into
// a directory TestMain removes.
var (
	checkerOnce  sync.Once
	checkerWasm  []byte
	checkerErr   error
	checkerBuild string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if checkerBuild != "" {
		os.RemoveAll(checkerBuild)
	}
	os.Exit(code)
}

// testChecker returns the test checker module, building it on first use.
func testChecker(t testing.TB) []byte {
	t.Helper()
	checkerOnce.Do(func() {
		if checkerBuild, checkerErr = os.MkdirTemp("", "judge-checker-*"); checkerErr != nil {
			return
		}
		out := filepath.Join(checkerBuild, "checker.wasm")
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./testdata/checker")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			checkerErr = fmt.Errorf("build the test checker: %v\n%s", err, msg)
			return
		}
		checkerWasm, checkerErr = os.ReadFile(out)
	})
	if checkerErr != nil {
		t.Fatal(checkerErr)
	}
	return checkerWasm
}

// toposortChecker returns the example's checked-in checker.
func toposortChecker(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "toposort", "task", "hidden", "checker.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Hand-written modules (WebAssembly binary format), each exporting a
// memory and a _start function.
var (
	// (func (export "_start") unreachable)
	trapModule = wasmModule(1, []byte{0x00, 0x00, 0x0b})
	// (func (export "_start") (loop (br 0)))
	loopModule = wasmModule(1, []byte{0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b})
	// a memory of 5000 pages at least, more than any limit allows
	bigMemoryModule = wasmModule(5000, []byte{0x00, 0x0b})
	// (import "env" "f" (func)) (func (export "_start")): a module for
	// another host
	envImportModule = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type () -> ()
		0x02, 0x09, 0x01, 0x03, 'e', 'n', 'v', 0x01, 'f', 0x00, 0x00, // import env.f
		0x03, 0x02, 0x01, 0x00, // one function of type 0
		0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x01, // export _start = func 1
		0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b}
)

// wasmModule assembles a module with one memory of min pages and one
// function _start with the given body (locals and code).
func wasmModule(pages uint32, body []byte) []byte {
	leb := func(v uint32) []byte {
		var b []byte
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v != 0 {
				b = append(b, c|0x80)
				continue
			}
			return append(b, c)
		}
	}
	section := func(id byte, content []byte) []byte {
		return append(append([]byte{id}, leb(uint32(len(content)))...), content...)
	}
	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	m = append(m, section(1, []byte{1, 0x60, 0, 0})...)               // type () -> ()
	m = append(m, section(3, []byte{1, 0})...)                        // one function of type 0
	m = append(m, section(5, append([]byte{1, 0}, leb(pages)...))...) // memory min pages
	exports := []byte{2, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0, 6, '_', 's', 't', 'a', 'r', 't', 0, 0}
	m = append(m, section(7, exports)...)
	m = append(m, section(10, append(append([]byte{1}, leb(uint32(len(body)))...), body...))...)
	return m
}

// checkerCase is a case of a checker fixture: its input, expected value
// and what the candidate returned (a function record's value) or printed
// (a command's stdout).
type checkerCase struct {
	id, args, expected string
	output             string
	result             *RunResult
}

// checkerFixture makes a function task (or a command task, when command
// is set) graded by a checker with the given options.
func checkerFixture(module []byte, opts string, command bool, cs ...checkerCase) fixture {
	kind := schema.KindFunction
	if command {
		kind = schema.KindCommand
	}
	f := fixture{kind: kind, hidden: map[string]string{"checker.wasm": string(module)}}
	var cases []string
	for _, c := range cs {
		r := c.result
		if r == nil {
			r = exited(0)
		}
		if command {
			cases = append(cases, fmt.Sprintf(`{"id":%q,"argv":%s,"expected_stdout":%s}`, c.id, c.args, jsonString(c.expected)))
			f.outs = append(f.outs, out{result: r, stdout: str(c.output)})
			continue
		}
		cases = append(cases, fmt.Sprintf(`{"id":%q,"args":%s,"expected":%s}`, c.id, c.args, c.expected))
		f.outs = append(f.outs, out{result: r, files: value(c.output)})
	}
	f.cases = `{"compare":{"kind":"checker","module":"checker.wasm"` + opts + `},"cases":[` + strings.Join(cases, ",") + `]}`
	return f
}

func sum256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestCheckerToposort(t *testing.T) {
	args := `[4,[[0,1],[0,2],[1,3],[2,3]]]`
	f := checkerFixture(toposortChecker(t), "", false,
		checkerCase{id: "expected", args: args, expected: `[0,1,2,3]`, output: `[0,1,2,3]`},
		checkerCase{id: "alternative", args: args, expected: `[0,1,2,3]`, output: `[0,2,1,3]`},
		checkerCase{id: "float-nodes", args: args, expected: `[0,1,2,3]`, output: `[0.0,2,1,3e0]`},
		checkerCase{id: "wrong", args: args, expected: `[0,1,2,3]`, output: `[3,2,1,0]`},
		checkerCase{id: "missing", args: args, expected: `[0,1,2,3]`, output: `[0,1,2]`},
		checkerCase{id: "not-a-list", args: args, expected: `[0,1,2,3]`, output: `{"order":[0,1,2,3]}`},
		checkerCase{id: "empty", args: `[0,[]]`, expected: `[]`, output: `[]`},
	)
	f.disclosure = schema.DisclosureDetailed
	start := time.Now()
	v, err := judgeDir(t, f.write(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("judged %d cases in %v", len(v.Cases), time.Since(start))
	want := map[string]schema.Outcome{"expected": "PASS", "alternative": "PASS", "float-nodes": "PASS", "wrong": "FAIL", "missing": "FAIL", "not-a-list": "FAIL", "empty": "PASS"}
	for _, c := range v.Cases {
		if c.Outcome != want[c.ID] || c.DecidedBy != KindChecker {
			t.Errorf("case %s: %s decided by %s (%s), want %s by checker", c.ID, c.Outcome, c.DecidedBy, c.Reason, want[c.ID])
		}
	}
	if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonWrongAnswer {
		t.Errorf("verdict %s %s, want FAIL wrong_answer", v.Outcome, v.ReasonCode)
	}
	if r := v.Cases[3].Reason; !strings.Contains(r, "the checker rejected the output: ") || !strings.Contains(r, "edge 0->1") {
		t.Errorf("detailed reason %q does not quote the checker's message", r)
	}

	// The same alternative order fails under an exact comparison.
	g := f
	g.cases = strings.Replace(f.cases, `{"kind":"checker","module":"checker.wasm"}`, `{"kind":"json"}`, 1)
	v, err = judgeDir(t, g.write(t))
	if err != nil {
		t.Fatal(err)
	}
	if v.Cases[1].Outcome != schema.OutcomeFail {
		t.Errorf("json comparator: alternative %s, want FAIL", v.Cases[1].Outcome)
	}
}

// TestCheckerDisclosure: under digest a reject reason quotes neither the
// checker's message nor the candidate's output; under detailed it quotes
// the message.
func TestCheckerDisclosure(t *testing.T) {
	const secret = "s3cr3t-hidden-input"
	f := checkerFixture(testChecker(t), "", false,
		checkerCase{id: "echo", args: `["equal","` + secret + `"]`, expected: `"` + secret + `"`, output: `"` + secret + `-x"`})
	v, err := judgeDir(t, f.write(t))
	if err != nil {
		t.Fatal(err)
	}
	data := mustValidate(t, v)
	if strings.Contains(string(data), secret) || v.Cases[0].Outcome != schema.OutcomeFail {
		t.Errorf("digest verdict:\n%s", data)
	}
	if r, want := v.Cases[0].Reason, "the checker rejected the output; output "+schema.Summary([]byte(`"`+secret+`-x"`)); r != want {
		t.Errorf("digest reason %q, want %q", r, want)
	}
	f.disclosure = schema.DisclosureDetailed
	if v, err = judgeDir(t, f.write(t)); err != nil {
		t.Fatal(err)
	}
	if r := v.Cases[0].Reason; !strings.Contains(r, `the checker rejected the output: "got \"`+secret+`-x\""`) {
		t.Errorf("detailed reason %q", r)
	}
}

// TestCheckerHostileOutputs: whatever the candidate wrote, the checker
// decides PASS or FAIL.
func TestCheckerHostileOutputs(t *testing.T) {
	mod := testChecker(t)
	garbage := make([]byte, 1<<20)
	for i := range garbage {
		garbage[i] = byte(i*7 + i>>9)
	}
	deep := strings.Repeat("[", 100000)
	// The largest output takes the test checker a while to decode on a
	// loaded machine: a deadline of 10 s.
	cmd := checkerFixture(mod, `,"timeout_ms":10000`, true,
		checkerCase{id: "garbage", args: `["short"]`, output: string(garbage)},
		checkerCase{id: "invalid-utf8", args: `["equal"]`, expected: "ok\n", output: "\xff\xfe\xc0\x80ok\n"},
		checkerCase{id: "deep-json", args: `["equal"]`, expected: "[]", output: deep},
		checkerCase{id: "nul", args: `["equal"]`, expected: "a\x00b", output: "a\x00b"},
		checkerCase{id: "short", args: `["short"]`, output: "fine\n"},
	)
	v, err := judgeDir(t, cmd.write(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.Outcome{"FAIL", "FAIL", "FAIL", "PASS", "PASS"}
	for i, c := range v.Cases {
		if c.Outcome != want[i] {
			t.Errorf("command case %s: %s (%s), want %s", c.ID, c.Outcome, c.Reason, want[i])
		}
	}

	// The record's object is one level: the deepest value it may hold
	// is one less than MaxJSONDepth.
	// An output over a sixteenth of the checker's memory fails before
	// the checker runs: no candidate can starve it of memory.
	big := checkerFixture([]byte("not even a module"), `,"memory_pages":64`, true,
		checkerCase{id: "big", args: `["short"]`, output: strings.Repeat("x", 64*65536/16+1)})
	if v, err = judgeDir(t, big.write(t)); err == nil {
		t.Fatalf("a module that does not compile: verdict %s, want an error", v.Outcome)
	}
	big.hidden["checker.wasm"] = string(mod)
	if v, err = judgeDir(t, big.write(t)); err != nil {
		t.Fatal(err)
	}
	if c := v.Cases[0]; c.Outcome != schema.OutcomeFail || c.DecidedBy != schema.DecidedByLimit || v.ReasonCode != schema.ReasonOutputLimit {
		t.Errorf("an output over what the checker reads: %s by %s, %s (%s)", c.Outcome, c.DecidedBy, v.ReasonCode, c.Reason)
	}

	deepValue := strings.Repeat("[", MaxJSONDepth-1) + strings.Repeat("]", MaxJSONDepth-1)
	fn := checkerFixture(mod, "", false,
		checkerCase{id: "deep", args: `["sorted",[1,2]]`, expected: `[1,2]`, output: deepValue},
		checkerCase{id: "too-deep", args: `["sorted",[1,2]]`, expected: `[1,2]`, output: "[" + deepValue + "]"},
		checkerCase{id: "strings", args: `["sorted",[1,2]]`, expected: `[1,2]`, output: `["\u0000","\ud83d\ude00"]`},
		checkerCase{id: "permuted", args: `["sorted",[1,2,3]]`, expected: `[1,2,3]`, output: `[3,1,2]`},
	)
	if v, err = judgeDir(t, fn.write(t)); err != nil {
		t.Fatal(err)
	}
	want = []schema.Outcome{"FAIL", "FAIL", "FAIL", "PASS"}
	for i, c := range v.Cases {
		if c.Outcome != want[i] {
			t.Errorf("function case %s: %s (%s), want %s", c.ID, c.Outcome, c.Reason, want[i])
		}
	}
	if v.Cases[1].DecidedBy != DecidedByOutput {
		t.Errorf("too deep a value: decided by %s, want output (the record is refused before any checker)", v.Cases[1].DecidedBy)
	}
}

// TestCheckerFailures: every way a checker can fail is an error wrapping
// ErrChecker that names the module's sha256, reached within its limits.
func TestCheckerFailures(t *testing.T) {
	mod := testChecker(t)
	for _, tc := range []struct {
		name   string
		module []byte
		opts   string
		mode   string
		want   string
	}{
		{"panic", mod, "", "panic", "exited with status 2"},
		{"exit", mod, "", "exit3", "exited with status 3"},
		{"loop", mod, `,"timeout_ms":300,"fuel":10000000000`, "loop", "ran past its deadline of 300 ms"},
		{"memory", mod, `,"memory_pages":512`, "oom", "out of memory"},
		{"spam", mod, `,"output_bytes":4096`, "spam", "wrote more than its output cap of 4096 bytes"},
		{"garbage", mod, "", "garbage", "its answer is not a JSON object"},
		{"nothing", mod, "", "nothing", "it wrote no answer"},
		{"maybe", mod, "", "maybe", "its verdict is \"maybe\", not accept or reject"},
		{"twice", mod, "", "twice", "its answer is not a JSON object"},
		{"unknown mode", mod, "", "what", "exited with status 7"},
		{"trap", trapModule, "", "", "trapped: wasm error: unreachable"},
		{"trap names the case", trapModule, "", "", "case ok: trapped"},
		{"wasm loop", loopModule, `,"timeout_ms":200,"fuel":10000000000`, "", "ran past its deadline of 200 ms"},
		{"fuel export taken", fuelExportModule, "", "", "exports strictgrade.fuel, a name the judge reserves"},
		{"threads", atomicModule, "", "", "unknown opcode 0xfe"},
		{"memory too large", bigMemoryModule, "", "", "min 5000 pages (312 Mi) over limit of 1024 pages"},
		{"not wasm", []byte("#!/bin/sh\necho accept\n"), "", "", "not a usable WebAssembly module"},
		{"not for WASI", envImportModule, "", "", "could not run: "},
		{"empty", []byte{}, "", "", "not a usable WebAssembly module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := checkerFixture(tc.module, tc.opts, false,
				checkerCase{id: "ok", args: `["sorted",[1,2]]`, expected: `[1,2]`, output: `[2,1]`},
				checkerCase{id: "broken", args: `["` + tc.mode + `",[1]]`, expected: `[1]`, output: `[1]`})
			start := time.Now()
			v, err := judgeDir(t, f.write(t))
			took := time.Since(start)
			if !errors.Is(err, ErrChecker) {
				t.Fatalf("verdict %+v, error %v; want an error wrapping ErrChecker", v, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "sha256 "+sum256(tc.module)) {
				t.Errorf("error %q does not say %q and the module's sha256", err, tc.want)
			}
			if took > 20*time.Second {
				t.Errorf("took %v", took)
			}
			t.Logf("%v: %v", took, err)
		})
	}
}

// TestCheckerDeterministic: the clock and the random source a checker
// sees are the same on every run.
func TestCheckerDeterministic(t *testing.T) {
	f := checkerFixture(testChecker(t), "", false,
		checkerCase{id: "a", args: `["clock"]`, expected: `1`, output: `1`},
		checkerCase{id: "b", args: `["clock"]`, expected: `1`, output: `1`})
	f.disclosure = schema.DisclosureDetailed
	root := f.write(t)
	v1, err := judgeDir(t, root)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := judgeDir(t, root)
	if err != nil {
		t.Fatal(err)
	}
	if v1.Cases[0].Reason != v2.Cases[0].Reason || v1.Cases[0].Reason != v1.Cases[1].Reason {
		t.Errorf("reasons differ: %q, %q, %q", v1.Cases[0].Reason, v1.Cases[1].Reason, v2.Cases[0].Reason)
	}
}

func TestCheckerComparatorValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Comparator
		want string
	}{
		{Comparator{Kind: KindChecker}, "module"},
		{Comparator{Kind: KindChecker, Module: "../x.wasm"}, "module"},
		{Comparator{Kind: KindChecker, Module: "c.wasm", MemoryPages: MaxCheckerMemoryPages + 1}, "memory_pages must be 1 to 4096"},
		{Comparator{Kind: KindChecker, Module: "c.wasm", TimeoutMS: -1}, "timeout_ms must be"},
		{Comparator{Kind: KindChecker, Module: "c.wasm", OutputBytes: MaxCheckerOutputBytes + 1}, "output_bytes must be"},
		{Comparator{Kind: KindChecker, Module: "c.wasm", IgnoreCase: true}, "ignore_case does not apply"},
		{Comparator{Kind: KindJSON, Module: "c.wasm"}, "module does not apply"},
		{Comparator{Kind: KindLines, TimeoutMS: 5}, "timeout_ms does not apply"},
		{Comparator{Kind: KindChecker, Module: "c.wasm", Fuel: -1}, "fuel must be"},
		{Comparator{Kind: KindChecker, Module: "c.wasm", Fuel: MaxCheckerFuel + 1}, "fuel must be"},
		{Comparator{Kind: KindJSON, Fuel: 5}, "fuel does not apply"},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.c, err, tc.want)
		}
	}
	ok := Comparator{Kind: KindChecker, Module: "checkers/c.wasm", MemoryPages: 16, Fuel: MaxCheckerFuel, TimeoutMS: 1, OutputBytes: MaxCheckerOutputBytes}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	if _, err := LoadCases([]byte(`{"compare":{"kind":"checker","module":"c.wasm"},"cases":[{"id":"a","expected_files":{"o":"o"}}]}`), schema.KindData); err == nil {
		t.Error("a data task with a checker was accepted")
	}
	r := Compare(ok, []byte("x"), []byte("x"))
	if r.Equal {
		t.Error("Compare ran a checker without its module")
	}
}

// FuzzCheckerFrame: the input framing carries any candidate bytes and any
// case input unchanged to the checker.
func FuzzCheckerFrame(f *testing.F) {
	f.Add("a", []byte(`[1,[2]]`), []byte(`{"x":1}`), []byte("\xff\x00\"\\"))
	f.Add("case-1", []byte(`[]`), []byte(nil), []byte(strings.Repeat("[", 300)))
	f.Add("z", []byte(`["\u2028"]`), []byte(`"\ud83d\ude00"`), []byte{})
	f.Fuzz(func(t *testing.T, id string, input, expected, output []byte) {
		if !json.Valid(input) || (len(expected) > 0 && !json.Valid(expected)) {
			return
		}
		frame, err := checkerFrame(CheckerInput{ID: id, Kind: schema.KindFunction, Input: input, Expected: expected, Output: output})
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(frame) {
			t.Fatalf("frame is not JSON: %q", frame)
		}
		var back CheckerInput
		if err := json.Unmarshal(frame, &back); err != nil {
			t.Fatal(err)
		}
		if string(back.Output) != string(output) {
			t.Fatalf("output %q came back as %q", output, back.Output)
		}
		if !jsonSame(back.Input, input) || (len(expected) > 0) != (back.Expected != nil) || (len(expected) > 0 && !jsonSame(back.Expected, expected)) {
			t.Fatalf("input %q / expected %q came back as %q / %q", input, expected, back.Input, back.Expected)
		}
		// An answer parser never panics, and accepts only the two verdicts.
		if a, err := parseCheckerAnswer(output); err == nil && a.Verdict != CheckerAccept && a.Verdict != CheckerReject {
			t.Fatalf("answer %q accepted with verdict %q", output, a.Verdict)
		}
	})
}

// jsonSame reports whether two JSON documents decode to the same value.
func jsonSame(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

func TestParseCheckerAnswer(t *testing.T) {
	for in, want := range map[string]string{
		`{"verdict":"accept"}`:                           "accept",
		" {\"verdict\":\"reject\",\"message\":\"no\"}\n": "reject",
		`{"verdict":"accept","extra":1}`:                 "error",
		`{"verdict":"accept","verdict":"reject"}`:        "error",
		`{"verdict":"ACCEPT"}`:                           "error",
		`{"verdict":"accept","message":7}`:               "error",
		`{"message":"x"}`:                                "error",
		`["accept"]`:                                     "error",
		`{"verdict":"accept"}{}`:                         "error",
		"":                                               "error",
		`{"verdict":"reject","message":"` + strings.Repeat("m", maxCheckerMessage+1) + `"}`: "reject",
	} {
		a, err := parseCheckerAnswer([]byte(in))
		got := a.Verdict
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("%.60q: %s (%v), want %s", in, got, err, want)
		}
	}
}

// Issue 29, item 4: a checker's budget is fuel, not the clock. A checker
// that computes forever, or for long on a large output, fails the case
// (checker_out_of_fuel) the same way on every run, loaded or not; on
// f7459a3 both were an ERROR (the deadline) or, on a quiet machine, a
// FAIL now and then.
func TestCheckerFuelDecides(t *testing.T) {
	big := "[" + strings.TrimSuffix(strings.Repeat("0,", 510000), ",") + "]" // about 1 MiB
	args := `[4,[[0,1],[0,2],[1,3],[2,3]]]`
	for _, tc := range []struct {
		name   string
		module []byte
		cs     checkerCase
	}{
		{"a checker that loops", testChecker(t), checkerCase{id: "c", args: `["loop"]`, expected: `1`, output: `1`}},
		{"toposort on [0]*510000", toposortChecker(t), checkerCase{id: "c", args: args, expected: `[0,1,2,3]`, output: big}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := checkerFixture(tc.module, "", false, tc.cs)
			root := f.write(t)
			var reasons []string
			for range 2 {
				v, err := judgeDir(t, root)
				if err != nil {
					t.Fatalf("run %d: %v, want a FAIL", len(reasons), err)
				}
				c := v.Cases[0]
				if v.Outcome != schema.OutcomeFail || c.DecidedBy != KindChecker {
					t.Fatalf("run %d: %s decided by %s (%s), want FAIL by checker", len(reasons), v.Outcome, c.DecidedBy, c.Reason)
				}
				reasons = append(reasons, v.ReasonCode+": "+c.Reason)
			}
			if reasons[0] != reasons[1] {
				t.Errorf("the runs differ:\n%s", strings.Join(reasons, "\n"))
			}
			t.Log(reasons[0])
		})
	}
}

// TestCheckerFuelUsed: a run uses the same fuel every time; a run stopped
// by its fuel used all of it; the grade's total is shared in case order.
func TestCheckerFuelUsed(t *testing.T) {
	mod := testChecker(t)
	f := checkerFixture(mod, `,"fuel":50000000`, false,
		checkerCase{id: "small", args: `["work",1]`, expected: `1`, output: `"` + strings.Repeat("x", 1000) + `"`},
		checkerCase{id: "large", args: `["work",1000]`, expected: `1`, output: `"` + strings.Repeat("x", 100000) + `"`},
		checkerCase{id: "again", args: `["work",1]`, expected: `1`, output: `"` + strings.Repeat("x", 1000) + `"`})
	root := f.write(t)
	var runs [2][]CheckerUse
	for i := range runs {
		in, err := ReadInput(root)
		if err != nil {
			t.Fatal(err)
		}
		in.OnChecker = func(u CheckerUse) { runs[i] = append(runs[i], u) }
		v, err := Judge(in)
		if err != nil {
			t.Fatal(err)
		}
		want := []schema.Outcome{"PASS", "FAIL", "PASS"}
		for k, c := range v.Cases {
			if c.Outcome != want[k] {
				t.Errorf("case %s: %s (%s), want %s", c.ID, c.Outcome, c.Reason, want[k])
			}
		}
		if v.ReasonCode != ReasonCheckerFuel || v.Cases[1].Reason != "the checker ran out of fuel on the output: it used up its fuel of 50000000" {
			t.Errorf("reason %s: %q", v.ReasonCode, v.Cases[1].Reason)
		}
	}
	if diff := cmp.Diff(runs[0], runs[1]); diff != "" {
		t.Errorf("the fuel used differs between runs (-first +second):\n%s", diff)
	}
	if u := runs[0]; len(u) != 3 || u[0].Used != u[2].Used || u[0].Used <= 0 || !u[1].OutOfFuel || u[1].Used != 50000000 || u[0].OutOfFuel {
		t.Errorf("uses %+v", u)
	}
	t.Logf("%+v", runs[0])
}

// Issue 29, item 5: a reject whose message is longer than 4096 bytes is
// still a reject, its message cut at a character boundary; on f7459a3
// it made the grade an ERROR.
func TestCheckerLongMessage(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, d := range []schema.Disclosure{schema.DisclosureDigest, schema.DisclosureDetailed} {
		f := checkerFixture(testChecker(t), "", false,
			checkerCase{id: "quote", args: `["quote"]`, expected: `1`, output: `"` + long + `"`},
			checkerCase{id: "long", args: `["long"]`, expected: `1`, output: `2`})
		f.disclosure = d
		v, err := judgeDir(t, f.write(t))
		if err != nil {
			t.Fatalf("%s: %v, want a FAIL", d, err)
		}
		for _, c := range v.Cases {
			if c.Outcome != schema.OutcomeFail || c.DecidedBy != KindChecker || !strings.HasPrefix(c.Reason, "the checker rejected the output") {
				t.Errorf("%s: case %s: %s by %s (%s), want FAIL by checker", d, c.ID, c.Outcome, c.DecidedBy, c.Reason)
			}
		}
	}
	a, err := parseCheckerAnswer([]byte(`{"verdict":"reject","message":"` + strings.Repeat("é", 3000) + `"}`))
	if err != nil || a.Verdict != CheckerReject || len(a.Message) != maxCheckerMessage || !utf8.ValidString(a.Message) {
		t.Errorf("a 6000-byte message: %s, %d bytes (valid UTF-8 %v), %v", a.Verdict, len(a.Message), utf8.ValidString(a.Message), err)
	}
}

// Issue 29, item 6: under the digest policy a reject says that the
// checker rejected and nothing of its message, not even its length or a
// hash: two messages differ only in the hidden data they quote, and the
// reasons are the same. On f7459a3 the reason carried the message's
// length and sha256 prefix.
func TestCheckerDigestSaysOnlyRejected(t *testing.T) {
	output := `[1]`
	f := checkerFixture(testChecker(t), "", false,
		checkerCase{id: "a", args: `["quote"]`, expected: `"` + expectedValue + `"`, output: output},
		checkerCase{id: "b", args: `["quote"]`, expected: `"short"`, output: output})
	v, err := judgeDir(t, f.write(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "the checker rejected the output; output " + schema.Summary([]byte(output))
	for _, c := range v.Cases {
		if c.Outcome != schema.OutcomeFail || c.Reason != want {
			t.Errorf("case %s: %s (%q), want FAIL (%q)", c.ID, c.Outcome, c.Reason, want)
		}
	}
	f.disclosure = schema.DisclosureDetailed
	if v, err = judgeDir(t, f.write(t)); err != nil {
		t.Fatal(err)
	}
	if r := v.Cases[1].Reason; r != `the checker rejected the output: "got [1], want \"short\""` {
		t.Errorf("detailed reason %q does not quote the message", r)
	}
}

// TestCheckerTotalFuel: the runs of one grade share CheckerTotalFuel in
// case order; a run given only what is left, and stopped by it, fails its
// case saying so.
func TestCheckerTotalFuel(t *testing.T) {
	ks := newCheckers()
	defer ks.close()
	cmp := Comparator{Kind: KindChecker, Module: "checker.wasm"}
	k, err := ks.compile(cmp, map[string][]byte{"checker.wasm": testChecker(t)})
	if err != nil {
		t.Fatal(err)
	}
	var uses []CheckerUse
	ks.onRun = func(u CheckerUse) { uses = append(uses, u) }
	w := expectation{cmp: cmp, chk: k, input: []byte(`["work",1000]`), expected: []byte(`1`)}
	call := checkerCall{input: w.input, expected: w.expected, output: []byte(`"` + strings.Repeat("x", 100000) + `"`)}
	ks.fuelLeft = 30_000_000
	d := decideChecker(schema.DisclosureDigest, ks, w, schema.KindFunction, Case{ID: "a"}, call)
	want := fmt.Sprintf("the checker ran out of fuel on the output: the checkers of the grade used up their total fuel of %d", CheckerTotalFuel)
	if d.pass || d.err != nil || d.code != ReasonCheckerFuel || d.reason != want {
		t.Errorf("decision %+v, want a FAIL: %s", d, want)
	}
	if len(uses) != 1 || uses[0].Fuel != 30_000_000 || !uses[0].OutOfFuel || ks.fuelLeft != 0 {
		t.Errorf("uses %+v, %d left", uses, ks.fuelLeft)
	}
}
