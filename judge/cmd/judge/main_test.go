package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/schema"
)

// input is the committed example input of the judge package.
var input = filepath.Join("..", "..", "testdata", "input", "function")

func TestRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--root", input}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr %q", stderr.String())
	}
	out := stdout.Bytes()
	if bytes.Count(out, []byte("\n")) != 1 || !bytes.HasSuffix(out, []byte("\n")) {
		t.Errorf("want one line of JSON, got %q", out)
	}
	if _, err := schema.Validate(bytes.TrimSpace(out)); err != nil {
		t.Fatalf("verdict fails the schema: %v", err)
	}
	golden, err := os.ReadFile(input + ".verdict.json")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, golden); err != nil {
		t.Fatal(err)
	}
	if got := string(bytes.TrimSpace(out)); got != want.String() {
		t.Errorf("verdict differs from the golden file:\n got %s\nwant %s", got, want.String())
	}
}

func TestRunErrors(t *testing.T) {
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "meta.json"), []byte(`{"kind":"function","verdict":{}} trailing`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown flag", []string{"--rot", "/x"}, exitUsage, "judge: flag provided but not defined: -rot"},
		{"extra argument", []string{"--root", input, "more"}, exitUsage, `judge: unexpected argument "more"`},
		{"help", []string{"-h"}, exitUsage, "usage: judge [--root DIR]"},
		{"missing root", []string{"--root", filepath.Join(t.TempDir(), "nope")}, exitError, "judge: judge: invalid input"},
		{"broken meta", []string{"--root", broken}, exitError, "meta.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.msg) {
				t.Errorf("stderr %q, want one line containing %q", msg, tt.msg)
			}
		})
	}
}

// goTool returns the go command; the tests below need it and fail without.
func goTool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to check the judge's build: %v", err)
	}
	return path
}

// TestStaticBinary builds the judge as the image build does (CGO_ENABLED=0)
// and runs the binary on the example input.
func TestStaticBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "judge")
	cmd := exec.Command(goTool(t), "build", "-trimpath", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	run := exec.Command(bin, "--root", input)
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("judge: %v: %s", err, stderr.String())
	}
	if _, err := schema.Validate(bytes.TrimSpace(stdout.Bytes())); err != nil {
		t.Fatalf("verdict fails the schema: %v", err)
	}
}

// TestRunCheckerFailed: a checker that traps makes the judge exit with
// ExitCheckerFailed and one line naming the module's sha256, and print no
// verdict.
func TestRunCheckerFailed(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(input)); err != nil {
		t.Fatal(err)
	}
	cases, err := os.ReadFile(filepath.Join(input, "hidden", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases = bytes.Replace(cases, []byte(`{"kind": "json"}`), []byte(`{"kind": "checker", "module": "checkers/trap.wasm"}`), 1)
	// (module (memory 1) (func (export "_start") unreachable))
	trap := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x05, 0x03, 0x01, 0x00, 0x01,
		0x07, 0x13, 0x02, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
		0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b}
	for name, data := range map[string][]byte{"cases.json": cases, "checkers/trap.wasm": trap} {
		p := filepath.Join(root, "hidden", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--root", root}, strings.NewReader(""), &stdout, &stderr); code != exitChecker {
		t.Fatalf("exit %d, want %d; stderr %q", code, exitChecker, stderr.String())
	}
	msg := stderr.String()
	if stdout.Len() != 0 || strings.Count(msg, "\n") != 1 ||
		!strings.Contains(msg, "judge: checker failed: module checkers/trap.wasm sha256 ") ||
		!strings.Contains(msg, "case empty: trapped: wasm error: unreachable") {
		t.Errorf("stdout %q, stderr %q", stdout.String(), msg)
	}
}

// TestWaitStdin: with --wait-stdin the judge reads its input only after its
// standard input ends, and refuses a standard input that carries data.
func TestWaitStdin(t *testing.T) {
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() { done <- run([]string{"--root", input, "--wait-stdin"}, pr, &stdout, &stderr) }()
	select {
	case code := <-done:
		t.Fatalf("the judge ended (%d) before its standard input did", code)
	case <-time.After(200 * time.Millisecond):
	}
	pw.Close()
	if code := <-done; code != exitOK || stdout.Len() == 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}

	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"--root", input, "--wait-stdin"}, strings.NewReader("x"), &stdout, &stderr); code != exitError || stdout.Len() != 0 {
		t.Fatalf("data on standard input: exit %d, stdout %q", code, stdout.String())
	}
	if !strings.Contains(stderr.String(), "closed without data") {
		t.Fatalf("stderr %q", stderr.String())
	}
}
