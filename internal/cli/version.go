package cli

import (
	"context"
	"fmt"

	"github.com/strictgrade/strictgrade/internal/version"
)

func init() {
	register(command{name: "version", summary: "print the controller version", run: runVersion})
}

func runVersion(ctx context.Context, args []string, stdio IO) int {
	fs := newFlags("version", stdio.Stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stdio.Stderr, "strictgrade version: takes no arguments")
		return ExitUsage
	}
	fmt.Fprintln(stdio.Stdout, version.String())
	return ExitOK
}
