// Command checker is the judge tests' checker: a WASI module whose
// behaviour is chosen by the case's input, the first argument of a
// function case or argv[0] of a command case. The tests build it with
// GOOS=wasip1 GOARCH=wasm.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"slices"
	"strings"
	"time"
)

type input struct {
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
	Output   []byte          `json:"output"`
}

func answer(verdict, msg string) {
	out, _ := json.Marshal(map[string]string{"verdict": verdict, "message": msg})
	os.Stdout.Write(append(out, '\n'))
}

func accept(ok bool, msg string) {
	if ok {
		answer("accept", "")
	} else {
		answer("reject", msg)
	}
}

var hoard [][]byte

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		os.Exit(5)
	}
	var in input
	if err := json.Unmarshal(data, &in); err != nil {
		os.Exit(6)
	}
	mode := ""
	var args []json.RawMessage
	var cmd struct{ Argv []string }
	if json.Unmarshal(in.Input, &args) == nil && len(args) > 0 {
		json.Unmarshal(args[0], &mode)
	} else if json.Unmarshal(in.Input, &cmd) == nil && len(cmd.Argv) > 0 {
		mode = cmd.Argv[0]
	}
	switch mode {
	case "equal": // accept the expected value, byte for byte
		var want []byte = in.Expected
		if in.Kind == "command" {
			var s string
			json.Unmarshal(in.Expected, &s)
			want = []byte(s)
		}
		got := in.Output
		if len(got) > 200 {
			got = got[:200]
		}
		accept(bytes.Equal(in.Output, want), "got "+string(got))
	case "sorted": // a permutation of args[1], in any order
		var want, got []int
		json.Unmarshal(args[1], &want)
		if json.Unmarshal(in.Output, &got) != nil {
			answer("reject", "not a list of numbers: "+string(in.Output))
			return
		}
		slices.Sort(want)
		slices.Sort(got)
		accept(slices.Equal(want, got), "not a permutation: "+string(in.Output))
	case "short": // accept outputs shorter than 100 bytes
		accept(len(in.Output) < 100, fmt.Sprintf("%d bytes is too long", len(in.Output)))
	case "clock": // reject with what the clock and random source say
		answer("reject", fmt.Sprintf("now %d random %d", time.Now().UnixNano(), rand.Int63()))
	case "panic":
		panic("the checker gave up")
	case "exit3":
		fmt.Fprintln(os.Stderr, "the case is malformed")
		os.Exit(3)
	case "quote": // reject, quoting the whole output and the expected value
		answer("reject", "got "+string(in.Output)+", want "+string(in.Expected))
	case "long": // reject with a message of 9000 bytes of two-byte characters
		answer("reject", strings.Repeat("é", 4500))
	case "loop":
		for {
		}
	case "work": // accept after args[1] passes over the output
		var passes int
		json.Unmarshal(args[1], &passes)
		sum := 0
		for range passes {
			for _, b := range in.Output {
				sum += int(b)
			}
		}
		accept(sum >= 0, "")
	case "oom":
		for {
			hoard = append(hoard, make([]byte, 8<<20))
		}
	case "spam":
		line := bytes.Repeat([]byte("y"), 1023)
		for {
			os.Stdout.Write(append(line, '\n'))
		}
	case "garbage":
		fmt.Println("hello, judge")
	case "nothing":
	case "maybe":
		answer("maybe", "")
	case "twice":
		answer("accept", "")
		answer("accept", "")
	default:
		os.Exit(7)
	}
}
