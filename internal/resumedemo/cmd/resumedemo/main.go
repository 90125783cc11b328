// Command resumedemo grades a mix of honest, wrong, empty and attacking
// submissions with `strictgrade run`, kills the run with SIGKILL part way,
// resumes it, and checks that every item was graded exactly once, that
// every bundle verifies and that `strictgrade gc` leaves nothing behind
// (package resumedemo). Run it from the module root:
//
//	go run ./internal/resumedemo/cmd/resumedemo [-items 60] [-kill-after 20] [-parallel 2] [-work DIR]
//
// It prints the numbers and exits 1 if a check failed. It needs the
// Docker daemon and the project's images (strictgrade images build).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/strictgrade/strictgrade/internal/resumedemo"
)

func main() {
	var c resumedemo.Config
	flag.IntVar(&c.Items, "items", 60, "how many items to grade")
	flag.IntVar(&c.KillAfter, "kill-after", 0, "kill the first run once this many items are done (default: a third)")
	flag.IntVar(&c.Parallel, "parallel", 2, "run's --parallel")
	flag.StringVar(&c.Work, "work", "", "work directory (default: a new temporary one, kept)")
	flag.StringVar(&c.Repo, "repo", ".", "the module root")
	flag.Parse()
	if c.Work == "" {
		dir, err := os.MkdirTemp("", "resumedemo-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		c.Work = dir
	}
	c.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := resumedemo.Run(ctx, c)
	if n != nil {
		fmt.Printf("%s\nwork directory: %s (report: %s/out/report.html)\n", n, c.Work, c.Work)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
