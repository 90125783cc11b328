package strict_test

import (
	"container/heap"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/strict"
	"github.com/strictgrade/strictgrade/task"
)

// example is examples/toposort, graded by its checker comparator.
var example = filepath.Join("..", "examples", "toposort")

// toposortSolutions renders the example's solutions for the fake
// runtime: each source file, and what its toposort returns.
func toposortSolutions(t *testing.T) map[string]sandboxtest.Python {
	graph := func(args []json.RawMessage) (int, [][2]int) {
		var n int
		var edges [][2]int
		json.Unmarshal(args[0], &n)
		json.Unmarshal(args[1], &edges)
		return n, edges
	}
	honest := func(_ string, args []json.RawMessage) (any, error) {
		n, edges := graph(args)
		indegree, succ := make([]int, n), make([][]int, n)
		for _, e := range edges {
			succ[e[0]] = append(succ[e[0]], e[1])
			indegree[e[1]]++
		}
		ready := &intHeap{}
		for u := range n {
			if indegree[u] == 0 {
				heap.Push(ready, u)
			}
		}
		order := []int{}
		for ready.Len() > 0 {
			u := heap.Pop(ready).(int)
			order = append(order, u)
			for _, v := range succ[u] {
				if indegree[v]--; indegree[v] == 0 {
					heap.Push(ready, v)
				}
			}
		}
		return order, nil
	}
	alternative := func(_ string, args []json.RawMessage) (any, error) {
		n, edges := graph(args)
		succ, state := make([][]int, n), make([]int, n)
		for _, e := range edges {
			succ[e[0]] = append(succ[e[0]], e[1])
		}
		var post []int
		var visit func(u int)
		visit = func(u int) {
			state[u] = 1
			for _, v := range succ[u] {
				if state[v] == 0 {
					visit(v)
				}
			}
			post = append(post, u)
		}
		for u := range n {
			if state[u] == 0 {
				visit(u)
			}
		}
		order := make([]int, 0, n)
		for i := len(post) - 1; i >= 0; i-- {
			order = append(order, post[i])
		}
		return order, nil
	}
	wrong := func(_ string, args []json.RawMessage) (any, error) {
		n, _ := graph(args)
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		return order, nil
	}
	sources := map[string]sandboxtest.Python{}
	for name, call := range map[string]func(string, []json.RawMessage) (any, error){"honest": honest, "alternative": alternative, "wrong": wrong} {
		src, err := os.ReadFile(filepath.Join(example, "solutions", name, "solution.py"))
		if err != nil {
			t.Fatal(err)
		}
		sources[string(src)] = sandboxtest.Python{Call: call}
	}
	return sources
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// TestCheckerExample grades examples/toposort's solutions in process: the
// honest and the alternative order pass (the alternative fails an exact
// comparison), the wrong one fails, and a task whose checker traps is an
// ERROR with reason code checker_failed naming the module's sha256.
func TestCheckerExample(t *testing.T) {
	ctx := t.Context()
	fake := sandboxtest.NewFake()
	fake.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(toposortSolutions(t)))
	fake.Image(sandboxtest.JudgeImage, sandboxtest.Judge)
	runtimeID, _ := fake.ImageID(ctx, sandboxtest.RuntimeImage)
	judgeID, _ := fake.ImageID(ctx, sandboxtest.JudgeImage)
	tk, err := task.Load(ctx, filepath.Join(example, "task"))
	if err != nil {
		t.Fatal(err)
	}
	module, err := os.ReadFile(filepath.Join(example, "task", "hidden", "checker.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	moduleSum := sha256.Sum256(module)
	grade := func(tk *task.Task, solution string) *schema.Verdict {
		t.Helper()
		out, err := strict.Grade(ctx, fake, strict.Request{
			Task: tk, Dir: filepath.Join(example, "solutions", solution), Image: runtimeID, JudgeImage: judgeID,
			Header: grading.Header{Nonce: schema.NewNonce()}, Disclosure: schema.DisclosureDetailed,
		})
		if err != nil && out == nil {
			t.Fatalf("%s: %v", solution, err)
		}
		logged := false
		for _, e := range out.Log {
			logged = logged || (e.Message == "checker module" && e.Attrs["module"] == "checker.wasm" && e.Attrs["sha256"] == hex.EncodeToString(moduleSum[:]))
		}
		if !logged {
			t.Errorf("%s: the log does not record the checker module's sha256", solution)
		}
		return out.Verdict
	}
	for solution, want := range map[string]schema.Outcome{"honest": schema.OutcomePass, "alternative": schema.OutcomePass, "wrong": schema.OutcomeFail} {
		v := grade(tk, solution)
		if v.Outcome != want {
			t.Errorf("%s: %s %s %q, want %s", solution, v.Outcome, v.ReasonCode, v.Reason, want)
		}
		for _, c := range v.Cases {
			if c.DecidedBy != schema.DecidedByChecker && c.Outcome == schema.OutcomePass {
				t.Errorf("%s: case %s decided by %s", solution, c.ID, c.DecidedBy)
			}
		}
		if solution == "wrong" && (v.ReasonCode != schema.ReasonWrongAnswer || !strings.Contains(v.Reason, "the checker rejected the output")) {
			t.Errorf("wrong: %s %q", v.ReasonCode, v.Reason)
		}
	}

	// The same task with a checker that traps.
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(example, "task"))); err != nil {
		t.Fatal(err)
	}
	trap := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x05, 0x03, 0x01, 0x00, 0x01,
		0x07, 0x13, 0x02, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
		0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b}
	if err := os.WriteFile(filepath.Join(dir, "hidden", "checker.wasm"), trap, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(trap)
	trapSum := hex.EncodeToString(sum[:])
	broken, err := task.Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []schema.Disclosure{schema.DisclosureDetailed, schema.DisclosureDigest} {
		out, err := strict.Grade(ctx, fake, strict.Request{
			Task: broken, Dir: filepath.Join(example, "solutions", "honest"), Image: runtimeID, JudgeImage: judgeID,
			Header: grading.Header{Nonce: schema.NewNonce()}, Disclosure: d,
		})
		if out == nil {
			t.Fatalf("%s: no verdict: %v", d, err)
		}
		v := out.Verdict
		if v.Outcome != schema.OutcomeError || v.ReasonCode != schema.ReasonCheckerFailed ||
			!strings.Contains(v.Reason, "checker failed: module checker.wasm sha256 "+trapSum) {
			t.Errorf("%s: %s %s %q, want ERROR checker_failed naming the module", d, v.Outcome, v.ReasonCode, v.Reason)
		}
		t.Logf("%s: %s", d, v.Reason)
		if _, err := schema.Validate(mustMarshal(t, v)); err != nil {
			t.Error(err)
		}
	}
}

func mustMarshal(t *testing.T, v *schema.Verdict) []byte {
	t.Helper()
	b, err := schema.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckerLargeAnswer: issue 29, item 4, as a submission. A solution
// whose toposort returns [0]*510000 (about 1 MiB, inside the example's
// output limit) is graded FAIL by the checker, with the same reason every
// time, under either disclosure policy; on f7459a3 the checker took about
// 5 s of CPU against its 5 s deadline, and the grade was an ERROR in most
// runs. Under the digest policy the reason says nothing of the checker's
// message (item 6).
func TestCheckerLargeAnswer(t *testing.T) {
	ctx := t.Context()
	src := "def toposort(n, edges):\n    return [0] * 510000\n"
	sol := t.TempDir()
	if err := os.WriteFile(filepath.Join(sol, "solution.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// The fake runs every case in one process whose output the limit
	// bounds as a whole: one case returns the large list, the others an
	// empty one.
	sources := map[string]sandboxtest.Python{src: {Call: func(_ string, args []json.RawMessage) (any, error) {
		if string(args[0]) == "500" {
			return make([]int, 510000), nil
		}
		return []int{}, nil
	}}}
	fake := sandboxtest.NewFake()
	fake.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(sources))
	fake.Image(sandboxtest.JudgeImage, sandboxtest.Judge)
	runtimeID, _ := fake.ImageID(ctx, sandboxtest.RuntimeImage)
	judgeID, _ := fake.ImageID(ctx, sandboxtest.JudgeImage)
	tk, err := task.Load(ctx, filepath.Join(example, "task"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []schema.Disclosure{schema.DisclosureDigest, schema.DisclosureDigest, schema.DisclosureDetailed} {
		out, err := strict.Grade(ctx, fake, strict.Request{
			Task: tk, Dir: sol, Image: runtimeID, JudgeImage: judgeID,
			Header: grading.Header{Nonce: schema.NewNonce()}, Disclosure: d,
		})
		if err != nil && out == nil {
			t.Fatal(err)
		}
		v := out.Verdict
		if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonWrongAnswer {
			t.Fatalf("%s: %s %s %q, want FAIL wrong_answer", d, v.Outcome, v.ReasonCode, v.Reason)
		}
		large := 0
		for _, c := range v.Cases {
			if c.ID != "random-500" {
				continue
			}
			large++
			if c.Outcome != schema.OutcomeFail || c.DecidedBy != schema.DecidedByChecker {
				t.Errorf("%s: case %s: %s by %s (%s)", d, c.ID, c.Outcome, c.DecidedBy, c.Reason)
			}
			if d == schema.DisclosureDigest && strings.Contains(c.Reason, "message") {
				t.Errorf("%s: case %s: %q speaks of the checker's message", d, c.ID, c.Reason)
			}
			t.Logf("%s: case %s: %s", d, c.ID, c.Reason)
		}
		if large == 0 {
			t.Fatal("the example has no case random-500")
		}
	}
}
