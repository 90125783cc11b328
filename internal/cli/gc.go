package cli

import (
	"context"
	"fmt"

	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/sandbox"
)

func init() {
	register(command{name: "gc", summary: "remove abandoned strictgrade containers and volumes", do: runGC})
}

// runGC reaps what killed processes left. By default it removes only what
// is provably abandoned, so it is safe while grades run in other
// processes; --all removes every managed object.
func runGC(ctx context.Context, args []string, stdio IO) error {
	fs := flagSet(stdio.Stderr, "gc", "[flags]", `Removes the containers and volumes strictgrade created that are abandoned:
the process that made them is gone (same machine, boot and pid namespace,
and its pid is free or names a process started later), or they are older
than --max-age, the longest a grade is assumed to live. Objects of grades
running in other processes are left alone. --all removes every selected
object, running grades' included. Each object is printed on stdout as
"container<TAB>ID" or "volume<TAB>NAME" ("pod<TAB>NAME" and the
controller-side "volume<TAB>NAME" with --backend kubernetes, whose
namespace it reaps).`)
	var where backendArgs
	where.registerWhere(fs)
	run := fs.String("run", "", "only objects of this run id")
	older := fs.Duration("older-than", 0, "only objects created at least this long ago (e.g. 1h)")
	maxAge := fs.Duration("max-age", engine.DefaultMaxAge, "objects older than this are abandoned whatever their owner")
	all := fs.Bool("all", false, "remove every selected object, including those of running grades")
	dry := fs.Bool("dry-run", false, "list what would be removed, remove nothing")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("takes no arguments")
	}
	if *maxAge <= 0 || *older < 0 {
		return usagef("--max-age must be positive and --older-than not negative")
	}
	if err := where.check(); err != nil {
		return err
	}
	opts := sandbox.GCOptions{Run: *run, OlderThan: *older, MaxAge: *maxAge, All: *all, DryRun: *dry}
	var (
		rep   sandbox.GCReport
		gcErr error
	)
	kind := "container"
	if where.backend == backendKubernetes {
		kind = "pod"
		var cfg controller.Config
		closeBackend, err := where.configure(ctx, stdio, &cfg)
		if err != nil {
			return err
		}
		defer closeBackend()
		rep, gcErr = cfg.Backend.GC(ctx, opts)
	} else {
		if where.runtime != "" {
			return usagef("--runtime selects nothing to reap on docker: gc takes every managed object of the daemon")
		}
		eng, err := engine.NewDocker(ctx, engine.Config{Logger: stdio.Log})
		if err != nil {
			return err
		}
		defer eng.Close()
		rep, gcErr = eng.GC(ctx, opts)
	}
	for _, c := range rep.Containers {
		fmt.Fprintf(stdio.Stdout, "%s\t%s\n", kind, c)
	}
	for _, v := range rep.Volumes {
		fmt.Fprintf(stdio.Stdout, "volume\t%s\n", v)
	}
	if gcErr != nil {
		return gcErr
	}
	verb := "removed"
	if *dry {
		verb = "would remove"
	}
	fmt.Fprintf(stdio.Stderr, "gc: %s %d %ss, %d volumes; left %d objects of live processes\n",
		verb, len(rep.Containers), kind, len(rep.Volumes), rep.Kept)
	return nil
}
