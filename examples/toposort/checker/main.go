// Command checker is the toposort task's checker comparator: a WASI module
// (built to ../task/hidden/checker.wasm by go generate) that the judge runs
// for every case. It reads the judge's JSON document on standard input —
// the case's arguments [n, edges], the expected order, and the candidate's
// returned value (base64 of its JSON) — and answers
// {"verdict":"accept"} when the value is a topological order of the
// graph, whichever of the many valid orders it is, and
// {"verdict":"reject","message":"..."} otherwise. A malformed case (the
// task's own input, not the candidate's) makes it exit with status 3: the
// judge then reports the task as broken rather than grading anything.
package main

//go:generate env GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= go build -trimpath -buildvcs=false "-ldflags=-s -w -buildid=" -o ../task/hidden/checker.wasm .

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
)

// input is the judge's document (judge.CheckerInput).
type input struct {
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
	Output   []byte          `json:"output"`
}

// answer is what the judge reads back (judge.CheckerAnswer).
type answer struct {
	Verdict string `json:"verdict"`
	Message string `json:"message,omitempty"`
}

// graph is a case's arguments: n nodes 0..n-1 and directed edges u→v.
type graph struct {
	n     int
	edges [][2]int
}

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		broken("read input: %v", err)
	}
	var in input
	if err := json.Unmarshal(data, &in); err != nil {
		broken("input: %v", err)
	}
	g, err := parseGraph(in.Input)
	if err != nil {
		broken("case %s: %v", in.ID, err)
	}
	// The expected order must itself be right: a task whose expected
	// value is wrong is broken, whatever the candidate did.
	if msg := Check(g, in.Expected); msg != "" {
		broken("case %s: the expected order is not valid: %s", in.ID, msg)
	}
	a := answer{Verdict: "accept"}
	if msg := Check(g, in.Output); msg != "" {
		a = answer{Verdict: "reject", Message: msg}
	}
	out, _ := json.Marshal(a)
	os.Stdout.Write(append(out, '\n'))
}

// broken reports a malformed case and exits 3.
func broken(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(3)
}

// parseGraph reads the arguments [n, [[u, v], ...]].
func parseGraph(raw json.RawMessage) (graph, error) {
	var args []json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil || len(args) != 2 {
		return graph{}, fmt.Errorf("arguments are not [n, edges]")
	}
	var g graph
	var edges [][]int
	if err := json.Unmarshal(args[0], &g.n); err != nil || g.n < 0 || g.n > 1_000_000 {
		return graph{}, fmt.Errorf("n is not a node count")
	}
	if err := json.Unmarshal(args[1], &edges); err != nil {
		return graph{}, fmt.Errorf("edges are not a list of pairs")
	}
	for _, e := range edges {
		if len(e) != 2 || e[0] < 0 || e[0] >= g.n || e[1] < 0 || e[1] >= g.n {
			return graph{}, fmt.Errorf("edge %v is not a pair of nodes", e)
		}
		g.edges = append(g.edges, [2]int{e[0], e[1]})
	}
	return g, nil
}

// Check returns why value (JSON) is not a topological order of g, or ""
// when it is one. It accepts any bytes, and reads no more of them than a
// list of g.n elements takes: a checker runs on a fuel budget, and the
// candidate chooses how long its answer is.
func Check(g graph, value []byte) string {
	// Anything but a list is refused before it is decoded: a long string
	// would cost as much to decode as it is long.
	if v := bytes.TrimLeft(value, " \t\r\n"); len(v) == 0 || v[0] != '[' {
		return "the value is not a JSON list"
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return "the value is not a JSON list"
	}
	pos := make([]int, g.n)
	for i := range pos {
		pos[i] = -1
	}
	i := 0
	for ; dec.More(); i++ {
		if i == g.n {
			return fmt.Sprintf("the list has more than %d elements (every node once)", g.n)
		}
		t, err := dec.Token()
		if err != nil {
			return "the value is not a JSON list"
		}
		num, ok := t.(json.Number)
		if !ok {
			return fmt.Sprintf("element %d is not a number", i)
		}
		f, err := num.Float64()
		if err != nil || f != math.Trunc(f) || f < 0 || f >= float64(g.n) {
			return fmt.Sprintf("element %d is not a node 0..%d", i, g.n-1)
		}
		v := int(f)
		if pos[v] >= 0 {
			return fmt.Sprintf("node %d appears twice (elements %d and %d)", v, pos[v], i)
		}
		pos[v] = i
	}
	if t, err := dec.Token(); err != nil || t != json.Delim(']') {
		return "the value is not a JSON list"
	}
	if i != g.n {
		return fmt.Sprintf("the list has %d elements, want %d (every node once)", i, g.n)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "the value is not a single JSON list"
	}
	for _, e := range g.edges {
		if pos[e[0]] > pos[e[1]] {
			return fmt.Sprintf("edge %d->%d: node %d comes after node %d", e[0], e[1], e[0], e[1])
		}
	}
	return ""
}
