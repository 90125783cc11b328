package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// The helpers in this file serve the subcommands that still choose their
// own exit codes (images.go) until they return errors like the others.

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("strictgrade "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and maps a parse failure with exitCode. ok is
// false when the caller should return code.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := parse(fs, args); err != nil {
		return exitCode(err), false
	}
	return 0, true
}

// fail prints a one-line error for the command and returns code.
func fail(stdio IO, cmd string, code int, err error) int {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintf(stdio.Stderr, "strictgrade %s: %s\n", cmd, msg)
	return code
}
