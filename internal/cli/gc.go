package cli

import (
	"context"
	"fmt"

	"github.com/strictgrade/strictgrade/internal/engine"
)

func init() {
	register(command{name: "gc", summary: "remove leftover strictgrade containers and volumes", run: runGC})
}

func runGC(ctx context.Context, args []string, stdio IO) int {
	fs := newFlags("gc", stdio.Stderr)
	run := fs.String("run", "", "only objects of this run id")
	older := fs.Duration("older-than", 0, "only objects created at least this long ago (e.g. 1h); use it while grades are running")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stdio.Stderr, "strictgrade gc: takes no arguments")
		return ExitUsage
	}
	eng, err := engine.NewDocker(ctx, engine.Config{Logger: stdio.Log})
	if err != nil {
		return fail(stdio, "gc", ExitError, err)
	}
	defer eng.Close()
	rep, err := eng.GC(ctx, engine.GCOptions{Run: *run, OlderThan: *older})
	for _, c := range rep.Containers {
		fmt.Fprintf(stdio.Stdout, "container\t%s\n", c)
	}
	for _, v := range rep.Volumes {
		fmt.Fprintf(stdio.Stdout, "volume\t%s\n", v)
	}
	if err != nil {
		return fail(stdio, "gc", ExitError, err)
	}
	fmt.Fprintf(stdio.Stderr, "gc: removed %d containers, %d volumes\n", len(rep.Containers), len(rep.Volumes))
	return ExitOK
}
