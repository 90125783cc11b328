// Package cli implements the strictgrade command line. main wires signals and
// calls Run; each subcommand lives in a file of its own and registers itself
// in the commands table. A subcommand returns an error, or nil when it did
// what was asked; exitCode alone turns that into the documented exit code.
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

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/schema"
)

// Exit codes of the strictgrade command. They are documented in the README
// and chosen by exitCode.
const (
	// ExitOK: the command did what was asked (a grade PASSed, an archive was
	// accepted, a verdict verified, the matrix matched its expectation).
	ExitOK = 0
	// ExitFail: a definite negative answer (a grade did not pass, an archive
	// was rejected, a signature did not verify, the matrix regressed).
	ExitFail = 1
	// ExitUsage: the command line was wrong, or a task is malformed.
	ExitUsage = 2
	// ExitError: the command could not do its job (daemon unreachable, I/O
	// failure, could not verify). Never a statement about the graded work.
	ExitError = 3
	// ExitQuarantined: the task itself is unfit to grade (task check: a
	// reference solution that does not pass, a no-op that passes, a compat
	// baseline that quarantines).
	ExitQuarantined = 4
)

// exitCode is the one mapping from what a subcommand returned to the exit
// code:
//
//	nil, flag.ErrHelp                          0
//	an outcome FAIL, firewall.RejectError,
//	attest.ErrVerificationFailed               1
//	a usage error                              2
//	an outcome QUARANTINED                     4
//	anything else (an outcome ERROR included)  3
func exitCode(err error) int {
	var (
		usage *usageError
		out   *outcomeError
		rej   *firewall.RejectError
	)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &out):
		switch out.outcome {
		case schema.OutcomeFail:
			return ExitFail
		case schema.OutcomeQuarantined:
			return ExitQuarantined
		}
		return ExitError
	case errors.As(err, &rej), errors.Is(err, attest.ErrVerificationFailed):
		return ExitFail
	}
	return ExitError
}

// usageError is a wrong command line or a malformed task. shown is set when
// the flag package has already printed it.
type usageError struct {
	err   error
	shown bool
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error.
func usagef(format string, a ...any) error {
	return &usageError{err: fmt.Errorf(format, a...)}
}

// badInput marks err, about a file the user named, as a usage error.
func badInput(err error) error { return &usageError{err: err} }

// outcomeError is a definite answer other than yes: a verdict that is not
// PASS, a matrix that regressed, a verdict with an outcome not required.
type outcomeError struct {
	outcome schema.Outcome
	msg     string
}

func (e *outcomeError) Error() string { return e.msg }

// outcome returns nil for PASS and an outcomeError otherwise.
func outcome(o schema.Outcome, format string, a ...any) error {
	if o == schema.OutcomePass {
		return nil
	}
	return &outcomeError{outcome: o, msg: fmt.Sprintf(format, a...)}
}

// namedError says which nested subcommand ("firewall check") failed.
type namedError struct {
	name string
	err  error
}

func (e *namedError) Error() string { return e.err.Error() }
func (e *namedError) Unwrap() error { return e.err }

// within names the subcommand err came from.
func within(name string, err error) error {
	if err == nil {
		return nil
	}
	return &namedError{name: name, err: err}
}

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
	do      func(ctx context.Context, args []string, stdio IO) error
	// run is a subcommand that still picks its own exit code (images).
	run func(ctx context.Context, args []string, stdio IO) int
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// isHelp reports whether args asks for help.
func isHelp(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// Run executes the command line args (without the program name) and returns
// the process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stdio := IO{
		Stdin:  stdin,
		Stdout: stdout,
		Stderr: stderr,
		Log:    slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	var err error
	switch c, ok := commands[firstArg(args)]; {
	case len(args) == 0:
		usage(stderr)
		err = usagef("no command")
		err.(*usageError).shown = true
	case isHelp(args):
		usage(stderr)
	case !ok:
		err = usagef("unknown command %q", args[0])
	case c.do == nil && isHelp(args[1:]):
		c.run(ctx, nil, stdio) // prints its usage
	case c.do == nil:
		return c.run(ctx, args[1:], stdio)
	default:
		err = within(c.name, c.do(ctx, args[1:], stdio))
	}
	show(stderr, err)
	return exitCode(err)
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// show prints err as one line, "strictgrade CMD: message", unless it is a
// request for help or was shown already.
func show(w io.Writer, err error) {
	var usage *usageError
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.As(err, &usage) && usage.shown {
		return
	}
	// The innermost name is the fullest: "firewall check", not "firewall".
	prefix := "strictgrade"
	for e, n := err, (*namedError)(nil); errors.As(e, &n); e = n.err {
		prefix = "strictgrade " + n.name
	}
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if errors.As(err, &usage) {
		msg += " (" + prefix + " -h for help)"
	}
	fmt.Fprintf(w, "%s: %s\n", prefix, msg)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: strictgrade COMMAND [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\n"+exitCodesHelp)
	fmt.Fprintln(w, "\nstrictgrade COMMAND -h describes a command.")
}

// exitCodesHelp ends every help text.
const exitCodesHelp = "exit codes: 0 PASS/accepted/verified, 1 FAIL/rejected/not verified/regressed, 2 usage, 3 ERROR (could not do the job), 4 QUARANTINED"

// flagSet returns a FlagSet that reports errors instead of exiting and
// whose help has the one form every command shares:
//
//	usage: strictgrade NAME SYNOPSIS
//
//	ABOUT
//
//	flags:
//	  ...
//
//	exit codes: ...
func flagSet(stderr io.Writer, name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("strictgrade "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: strictgrade %s %s\n", name, synopsis)
		if about != "" {
			fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(about))
		}
		fmt.Fprintln(w, "\nflags:")
		fs.PrintDefaults()
		fmt.Fprintln(w, "\n"+exitCodesHelp)
	}
	return fs
}

// parse parses args. It returns flag.ErrHelp for -h and a usage error,
// already shown by the flag package, for a bad flag.
func parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &usageError{err: err, shown: true}
}
