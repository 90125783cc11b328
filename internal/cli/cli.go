// Package cli implements the strictgrade command line. main wires signals and
// calls Run; each subcommand lives in a file of its own and registers itself
// in the commands table. Exit codes are defined here and nowhere else.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
)

// Exit codes of the strictgrade command. They are documented in the README.
const (
	// ExitOK: the command did what was asked (a grade PASSed, an archive was
	// accepted, a verdict verified, the matrix matched its expectation).
	ExitOK = 0
	// ExitFail: a definite negative answer (a grade did not pass, an archive
	// was rejected, a signature did not verify, the matrix regressed).
	ExitFail = 1
	// ExitUsage: the command line was wrong.
	ExitUsage = 2
	// ExitError: the command could not do its job (daemon unreachable, I/O
	// failure, could not verify). Never a statement about the graded work.
	ExitError = 3
	// ExitQuarantined: the task itself is unfit to grade (compat tier
	// baseline checks).
	ExitQuarantined = 4
)

// IO bundles the standard streams a subcommand may use. Results go to Stdout,
// progress and logs to Stderr.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Log    *slog.Logger
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdio IO) int
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// Run executes the command line args (without the program name) and returns
// the process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stdio := IO{
		Stdin:  stdin,
		Stdout: stdout,
		Stderr: stderr,
		Log:    slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "strictgrade: unknown command %q\n\n", args[0])
		usage(stderr)
		return ExitUsage
	}
	return c.run(ctx, args[1:], stdio)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: strictgrade <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nexit codes: 0 ok/PASS, 1 negative answer/FAIL, 2 usage, 3 could not do the job/ERROR, 4 QUARANTINED")
}

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("strictgrade "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and maps a parse failure to ExitUsage. ok is false
// when the caller should return code.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK, false
		}
		return ExitUsage, false
	}
	return 0, true
}

// fail prints a one-line error for the command and returns code.
func fail(stdio IO, cmd string, code int, err error) int {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintf(stdio.Stderr, "strictgrade %s: %s\n", cmd, msg)
	return code
}
