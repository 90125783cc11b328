// Command checker is the task tests' checker: a WASI module whose
// behaviour is chosen by the case's first argument (a function case) or
// argv[0] (a command case). The tests build it with GOOS=wasip1
// GOARCH=wasm.
package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"unicode/utf8"
)

type input struct {
	Kind     string          `json:"kind"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
	Output   []byte          `json:"output"`
}

func answer(verdict string) {
	os.Stdout.WriteString(`{"verdict":"` + verdict + `"}` + "\n")
}

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
	want := []byte(in.Expected)
	if in.Kind == "command" {
		var s string
		json.Unmarshal(in.Expected, &s)
		want = []byte(s)
	}
	switch mode {
	case "equal": // the expected output, byte for byte
		if bytes.Equal(in.Output, want) {
			answer("accept")
		} else {
			answer("reject")
		}
	case "accept": // anything at all
		answer("accept")
	case "reject": // nothing at all
		answer("reject")
	case "prefix": // anything that starts with the expected output
		if bytes.HasPrefix(in.Output, want) && len(in.Output) > 0 {
			answer("accept")
		} else {
			answer("reject")
		}
	case "utf8": // the expected output; fails on invalid UTF-8
		if !utf8.Valid(in.Output) {
			panic("not UTF-8")
		}
		if bytes.Equal(in.Output, want) {
			answer("accept")
		} else {
			answer("reject")
		}
	case "empty": // fails on an empty output (exits 3, whatever the clock)
		if len(in.Output) == 0 || string(in.Output) == "null" {
			os.Exit(3)
		}
		answer("accept")
	case "slow": // the expected output; quadratic in the output's length
		n := 0
		for range in.Output {
			for range in.Output {
				n++
			}
		}
		if n >= 0 && bytes.Equal(in.Output, want) {
			answer("accept")
		} else {
			answer("reject")
		}
	case "quote": // the expected output; a reject quotes the output whole
		if bytes.Equal(in.Output, want) {
			answer("accept")
		} else {
			msg, _ := json.Marshal("got " + string(in.Output))
			os.Stdout.WriteString(`{"verdict":"reject","message":` + string(msg) + "}\n")
		}
	default:
		os.Exit(7)
	}
}
