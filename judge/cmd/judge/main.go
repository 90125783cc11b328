// Command judge is the strict tier's judge program. It runs in the judge
// container (a static binary on an empty root filesystem), reads its input
// from a read-only volume, and writes one verdict document to stdout:
//
//	judge [--root DIR] [--wait-stdin]
//
// DIR defaults to /judge; judge.ReadInput documents its layout. With
// --wait-stdin the judge first reads its standard input to the end and only
// then reads DIR: the controller starts the judge's container before the
// candidate's outputs are on its volume and closes the judge's standard
// input once they are, so that the container's start is off the grade's
// critical path. Anything on standard input besides its end is an error. The exit
// status is 0 when a verdict was written (whatever its outcome), 2 for a
// usage error, 3 when the input could not be judged, and 4
// (judge.ExitCheckerFailed) when the task's checker comparator failed, a
// defect of the task; with 3 and 4, one line on stderr says why. The program never executes or loads anything it
// reads; it needs no cgo, shell or interpreter.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
)

// Exit statuses.
const (
	exitOK    = 0
	exitUsage = 2
	exitError = 3
	// exitChecker: a checker failed (judge.ErrChecker).
	exitChecker = judge.ExitCheckerFailed
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// awaitEnd reads r to its end: the signal that the input is complete. Any
// byte before the end means the judge was started by something that does
// not know the handshake.
func awaitEnd(r io.Reader) error {
	n, err := io.Copy(io.Discard, io.LimitReader(r, 1))
	switch {
	case err != nil:
		return fmt.Errorf("wait for the input: %w", err)
	case n > 0:
		return errors.New("wait for the input: standard input must be closed without data")
	}
	return nil
}

// run is the whole program, with its streams passed in for tests.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("judge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	root := fs.String("root", judge.DefaultRoot, "directory holding meta.json, hidden/ and outputs/")
	wait := fs.Bool("wait-stdin", false, "read standard input to its end before reading the input directory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage: judge [--root DIR] [--wait-stdin]")
			return exitUsage
		}
		fmt.Fprintf(stderr, "judge: %v (usage: judge [--root DIR] [--wait-stdin])\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "judge: unexpected argument %q (usage: judge [--root DIR] [--wait-stdin])\n", fs.Arg(0))
		return exitUsage
	}
	if *wait {
		if err := awaitEnd(stdin); err != nil {
			fmt.Fprintln(stderr, "judge: "+oneLine(err.Error()))
			return exitError
		}
	}
	out, err := verdict(*root)
	if err != nil {
		fmt.Fprintln(stderr, "judge: "+oneLine(err.Error()))
		if errors.Is(err, judge.ErrChecker) {
			return exitChecker
		}
		return exitError
	}
	if _, err := stdout.Write(append(out, '\n')); err != nil {
		fmt.Fprintln(stderr, "judge: write verdict: "+oneLine(err.Error()))
		return exitError
	}
	return exitOK
}

// verdict reads the input, judges it and returns the verdict document,
// validated against the verdict schema: the judge emits nothing else.
func verdict(root string) ([]byte, error) {
	in, err := judge.ReadInput(root)
	if err != nil {
		return nil, err
	}
	v, err := judge.Judge(in)
	if err != nil {
		return nil, err
	}
	return schema.Marshal(v)
}

// oneLine keeps an error message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
