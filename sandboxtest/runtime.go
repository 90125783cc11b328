package sandboxtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
)

// Image names under which examples and tests register the fake's
// renderings of strictgrade's images.
const (
	RuntimeImage = "strictgrade/python"
	JudgeImage   = "strictgrade/judge"
	ProbeImage   = "strictgrade/probe"
)

// Python stands in for one Python source file. The fake cannot run Python:
// Runtime looks a file's exact text up and runs Go in its place, so that a
// test decides what an honest, a wrong or a hostile solution does.
type Python struct {
	// Call answers the calls the candidate shim makes to the file's
	// function (function tasks): the function's name and its JSON
	// arguments; an error is an exception.
	Call func(name string, args []json.RawMessage) (any, error)
	// Main runs the file as a program (command and data tasks, and
	// "python3 FILE" in a session).
	Main Program
}

// Runtime is the fake's rendering of the Python runtime image, for the
// commands strictgrade and a scripted agent issue there:
//
//   - python3 -I /inputs/shim.py: the candidate shim's protocol for
//     function tasks, with the module's source looked up in sources;
//   - python3 FILE, and FILE itself when it is a known source: its Main;
//   - a small shell: sh -c "CMD && CMD …" (words split on blanks, single
//     quotes kept together, "CMD > FILE" redirecting standard output,
//     "CMD &" leaving a process that lives as long as the sandbox),
//     cat [FILE…], echo, ls [DIR], mkdir [-p] DIR, rm FILE…, ln -s TARGET NAME,
//     sleep SECONDS, true, false, exit N.
//
// Anything else exits 127 with "command not found" on standard error.
func Runtime(sources map[string]Python) Program {
	return func(p *Proc) int { return shell(p, sources, p.Args) }
}

func shell(p *Proc, sources map[string]Python, args []string) int {
	if len(args) > 1 && args[len(args)-1] == "&" {
		// CMD &: a process left running, as long as the sandbox lives.
		if err := p.Spawn(); err != nil {
			fmt.Fprintf(p.Stderr, "sh: fork: %v\n", err)
			return 2
		}
		return 0
	}
	if i := slices.Index(args, ">"); i > 0 && i == len(args)-2 {
		// CMD > FILE: standard output into a file.
		var buf bytes.Buffer
		out := p.Stdout
		p.Stdout = &buf
		code := shell(p, sources, args[:i])
		p.Stdout = out
		if err := p.WriteFile(args[i+1], buf.Bytes(), 0o644); err != nil {
			fmt.Fprintf(p.Stderr, "sh: %v\n", err)
			return 1
		}
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(p.Stderr, args[0]+": "+format+"\n", a...)
		return 1
	}
	switch cmd := args[0]; cmd {
	case "sh", "/bin/sh", "bash":
		if len(args) < 3 || args[1] != "-c" {
			return fail("only -c SCRIPT is known here")
		}
		code := 0
		for _, line := range strings.Split(args[2], "&&") {
			words := split(line)
			// "CMD & REST": CMD is left running, REST goes on.
			for k := slices.Index(words, "&"); k >= 0; k = slices.Index(words, "&") {
				if code = shell(p, sources, words[:k+1]); code != 0 {
					return code
				}
				words = words[k+1:]
			}
			if len(words) == 0 {
				continue
			}
			if words[0] == "exit" {
				n, _ := strconv.Atoi(valueAt(words, 1))
				return n
			}
			if code = shell(p, sources, words); code != 0 {
				return code
			}
		}
		return code
	case "true":
		return 0
	case "false":
		return 1
	case "echo":
		fmt.Fprintln(p.Stdout, strings.Join(args[1:], " "))
		return 0
	case "cat":
		if len(args) == 1 {
			if _, err := io.Copy(p.Stdout, readerOf(p)); err != nil {
				return fail("%v", err)
			}
			return 0
		}
		for _, name := range args[1:] {
			data, err := p.ReadFile(name)
			if err != nil {
				return fail("%v", err)
			}
			p.Stdout.Write(data)
		}
		return 0
	case "ls":
		names, err := p.ReadDir(valueOr(args, 1, "."))
		if err != nil {
			return fail("%v", err)
		}
		for _, n := range names {
			fmt.Fprintln(p.Stdout, n)
		}
		return 0
	case "mkdir":
		if len(args) == 3 && args[1] == "-p" {
			if err := p.MkdirAll(args[2]); err != nil {
				return fail("%v", err)
			}
			return 0
		}
		if err := p.Mkdir(valueAt(args, 1)); err != nil {
			return fail("%v", err)
		}
		return 0
	case "rm":
		for _, name := range args[1:] {
			if err := p.Remove(name); err != nil {
				return fail("%v", err)
			}
		}
		return 0
	case "ln":
		if len(args) != 4 || args[1] != "-s" {
			return fail("only ln -s TARGET NAME is known here")
		}
		if err := p.Symlink(args[2], args[3]); err != nil {
			return fail("%v", err)
		}
		return 0
	case "sleep":
		secs, err := strconv.ParseFloat(valueAt(args, 1), 64)
		if err != nil {
			return fail("invalid time interval")
		}
		sleep(p, time.Duration(secs*float64(time.Second)))
		return 0
	case "python3", "python":
		rest := args[1:]
		if len(rest) > 0 && rest[0] == "-I" {
			rest = rest[1:]
		}
		if len(rest) == 1 && rest[0] == "/inputs/shim.py" {
			return shim(p, sources)
		}
		if len(rest) == 0 {
			return fail("no script")
		}
		return runSource(p, sources, rest[0], rest)
	default:
		if strings.Contains(cmd, "/") {
			return runSource(p, sources, cmd, args)
		}
		fmt.Fprintf(p.Stderr, "%s: command not found\n", cmd)
		return 127
	}
}

func valueAt(s []string, i int) string { return valueOr(s, i, "") }

func valueOr(s []string, i int, def string) string {
	if i < len(s) {
		return s[i]
	}
	return def
}

// split cuts a shell line into words on blanks, keeping single-quoted
// text together.
func split(line string) []string {
	var words []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, have = !quoted, true
		case !quoted && (r == ' ' || r == '\t' || r == '\n'):
			if have {
				words = append(words, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		words = append(words, cur.String())
	}
	return words
}

// runSource runs a file whose text is a known source, as its Main.
func runSource(p *Proc, sources map[string]Python, file string, args []string) int {
	src, err := p.ReadFile(file)
	if err != nil {
		fmt.Fprintf(p.Stderr, "%s: %v\n", file, err)
		return 127
	}
	py, ok := sources[string(src)]
	if !ok || py.Main == nil {
		fmt.Fprintf(p.Stderr, "%s: the fake runtime does not know this program\n", file)
		return 1
	}
	old := p.Args
	p.Args = args
	defer func() { p.Args = old }()
	return py.Main(p)
}

// shim plays the candidate shim: it reads the cases, looks the module's
// source up, calls the function once per case in the order given, and
// writes one "<index>\t<record>" line per case on standard output; what
// the function prints goes to standard error.
func shim(p *Proc, sources map[string]Python) int {
	data, err := p.ReadFile("/inputs/cases.json")
	if err != nil {
		p.Errorf("shim: %v", err)
		return 1
	}
	var spec struct {
		Module string            `json:"module"`
		Name   string            `json:"name"`
		Cases  []json.RawMessage `json:"cases"`
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		p.Errorf("shim: %v", err)
		return 1
	}
	record := func(i int, rec map[string]any) {
		b, _ := json.Marshal(rec)
		fmt.Fprintf(p.Stdout, "%d\t%s\n", i, b)
	}
	src, err := p.ReadFile("/artifacts/" + strings.ReplaceAll(spec.Module, ".", "/") + ".py")
	py, known := sources[string(src)]
	if err != nil || !known || py.Call == nil {
		why := "ModuleNotFoundError: " + spec.Module
		if err == nil {
			why = "the fake runtime does not know this source"
		}
		for i := range spec.Cases {
			record(i, map[string]any{"ok": false, "error": "import failed: " + why})
		}
		return 0
	}
	for i, raw := range spec.Cases {
		var args []json.RawMessage
		if err := json.Unmarshal(raw, &args); err != nil {
			record(i, map[string]any{"ok": false, "error": "TypeError: arguments are not a list"})
			continue
		}
		v, err := py.Call(spec.Name, args)
		if err != nil {
			record(i, map[string]any{"ok": false, "error": err.Error()})
			continue
		}
		if _, err := json.Marshal(v); err != nil {
			record(i, map[string]any{"ok": false, "error": "return value is not JSON: " + err.Error()})
			continue
		}
		record(i, map[string]any{"ok": true, "value": v})
	}
	return 0
}

// Judge is the fake's rendering of the judge image: it runs strictgrade's
// real judge (package judge) in-process on the files mounted at the root
// its command names ("/bin/judge --root DIR [--wait-stdin]"), copied to a
// temporary directory of the host first, and prints the verdict as the
// judge binary does. Like the binary, it exits 3 when the input cannot be
// judged and judge.ExitCheckerFailed when a checker failed, and with
// --wait-stdin reads its standard input to the end, which must carry no
// data, before it reads the root.
func Judge(p *Proc) int {
	root := judge.DefaultRoot
	for i := 1; i < len(p.Args); i++ {
		switch {
		case p.Args[i] == "--root" && i+1 < len(p.Args):
			root = p.Args[i+1]
		case p.Args[i] == "--wait-stdin":
			if p.Stdin == nil {
				break
			}
			if n, err := io.Copy(io.Discard, io.LimitReader(p.Stdin, 1)); err != nil || n > 0 {
				p.Errorf("judge: wait for the input: standard input must be closed without data")
				return 3
			}
		}
	}
	dir, err := os.MkdirTemp("", "sandboxtest-judge-*")
	if err != nil {
		p.Errorf("judge: %v", err)
		return 3
	}
	defer os.RemoveAll(dir)
	if err := p.copyTree(root, dir); err != nil {
		p.Errorf("judge: %v", err)
		return 3
	}
	in, err := judge.ReadInput(dir)
	if err == nil {
		var v *schema.Verdict
		if v, err = judge.Judge(in); err == nil {
			var out []byte
			if out, err = schema.Marshal(v); err == nil {
				p.Stdout.Write(append(out, '\n'))
				return 0
			}
		}
	}
	p.Errorf("judge: %s", strings.Join(strings.Fields(err.Error()), " "))
	if errors.Is(err, judge.ErrChecker) {
		return judge.ExitCheckerFailed
	}
	return 3
}

// copyTree writes the directories and regular files below the sandbox
// path root into the host directory dir.
func (p *Proc) copyTree(root, dir string) error {
	p.check()
	t, rel, _, err := p.box.resolve(path.Clean(root))
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, n := range t.nodes {
		if name != rel && !strings.HasPrefix(name, rel+"/") && rel != "" {
			continue
		}
		sub := strings.TrimPrefix(strings.TrimPrefix(name, rel), "/")
		host := filepath.Join(dir, filepath.FromSlash(sub))
		switch n.kind {
		case kindDir:
			if err := os.MkdirAll(host, 0o755); err != nil {
				return err
			}
		case kindFile:
			if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(host, n.file.data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
