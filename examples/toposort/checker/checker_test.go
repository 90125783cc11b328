package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// generate is the go:generate line of main.go; the test rebuilds the
// module with the same command.
const generate = `//go:generate env GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= go build -trimpath -buildvcs=false "-ldflags=-s -w -buildid=" -o ../task/hidden/checker.wasm .`

const module = "../task/hidden/checker.wasm"

// TestModuleReproducible rebuilds the checker and compares it with the
// checked-in module, byte for byte: the module the judge runs is the one
// this source makes. A module built by another Go release differs by
// its version string; the test then says to run go generate.
func TestModuleReproducible(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "\n"+generate+"\n") {
		t.Fatalf("main.go's go:generate line is not\n%s", generate)
	}
	want, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(want, []byte(runtime.Version())) {
		t.Skipf("%s was not built by %s: run go generate ./examples/toposort/checker", module, runtime.Version())
	}
	out := filepath.Join(t.TempDir(), "checker.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if sum(got) != sum(want) {
		t.Errorf("a rebuild has sha256 %s, the checked-in module %s: run go generate ./examples/toposort/checker", sum(got), sum(want))
	}
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestExpectedOrders: every expected value of the task is an order the
// checker accepts.
func TestExpectedOrders(t *testing.T) {
	data, err := os.ReadFile("../task/hidden/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs struct {
		Cases []struct {
			ID       string          `json:"id"`
			Args     json.RawMessage `json:"args"`
			Expected json.RawMessage `json:"expected"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &cs); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Cases {
		g, err := parseGraph(c.Args)
		if err != nil {
			t.Fatalf("case %s: %v", c.ID, err)
		}
		if msg := Check(g, c.Expected); msg != "" {
			t.Errorf("case %s: %s", c.ID, msg)
		}
	}
}

func TestCheck(t *testing.T) {
	g, err := parseGraph(json.RawMessage(`[4,[[0,1],[0,2],[1,3],[2,3]]]`))
	if err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]string{
		`[0,1,2,3]`:                            "",
		`[0,2,1,3]`:                            "",
		` [0, 2.0, 1, 3] `:                     "",
		`[3,2,1,0]`:                            "edge 0->1: node 0 comes after node 1",
		`[0,1,2]`:                              "the list has 3 elements, want 4 (every node once)",
		`[0,1,2,3,0]`:                          "the list has more than 4 elements (every node once)",
		`[0,0,0,0,0,0]`:                        "node 0 appears twice (elements 0 and 1)",
		`[0,1,2,3`:                             "the value is not a JSON list",
		`[[0],1,2,3]`:                          "element 0 is not a number",
		`"` + strings.Repeat("x", 1<<20) + `"`: "the value is not a JSON list",
		"":                                     "the value is not a JSON list",
		`[0,1,1,3]`:                            "node 1 appears twice (elements 1 and 2)",
		`[0,1,2,4]`:                            "element 3 is not a node 0..3",
		`[0,1,2,"3"]`:                          "element 3 is not a number",
		`[0,1,2,3.5]`:                          "element 3 is not a node 0..3",
		`[0,1,2,3][]`:                          "the value is not a single JSON list",
		`{"a":1}`:                              "the value is not a JSON list",
		"\xff":                                 "the value is not a JSON list",
		strings.Repeat("[", 20000):             "element 0 is not a number",
	} {
		if got := Check(g, []byte(value)); got != want {
			t.Errorf("Check(%.40q) = %q, want %q", value, got, want)
		}
	}
}
