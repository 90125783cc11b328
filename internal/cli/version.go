package cli

import (
	"context"
	"fmt"

	"github.com/strictgrade/strictgrade/internal/version"
)

func init() {
	register(command{name: "version", summary: "print the controller version", do: runVersion})
}

func runVersion(ctx context.Context, args []string, stdio IO) error {
	fs := flagSet(stdio.Stderr, "version", "", "Prints the controller version.")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("takes no arguments")
	}
	_, err := fmt.Fprintln(stdio.Stdout, version.String())
	return err
}
