package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
)

func init() {
	register(command{name: "images", summary: "build or list strictgrade's locally built images", run: runImages})
}

func runImages(ctx context.Context, args []string, stdio IO) int {
	if len(args) == 0 {
		fmt.Fprintln(stdio.Stderr, "usage: strictgrade images build [--only NAME[,NAME]] | images list [--json]")
		return ExitUsage
	}
	switch args[0] {
	case "build":
		return runImagesBuild(ctx, args[1:], stdio)
	case "list":
		return runImagesList(ctx, args[1:], stdio)
	default:
		fmt.Fprintf(stdio.Stderr, "strictgrade images: unknown subcommand %q\n", args[0])
		return ExitUsage
	}
}

func runImagesBuild(ctx context.Context, args []string, stdio IO) int {
	fs := newFlags("images build", stdio.Stderr)
	only := fs.String("only", "", "comma-separated image names to build (default: all)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stdio.Stderr, "strictgrade images build: takes no arguments")
		return ExitUsage
	}
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var todo []images.Image
	for _, img := range images.All() {
		if len(want) == 0 || want[img.Name()] {
			todo = append(todo, img)
		}
	}
	known := map[string]bool{}
	for _, img := range todo {
		known[img.Name()] = true
	}
	for n := range want {
		if !known[n] {
			fmt.Fprintf(stdio.Stderr, "strictgrade images build: no image named %q\n", n)
			return ExitUsage
		}
	}
	eng, err := engine.NewDocker(ctx, engine.Config{Logger: stdio.Log})
	if err != nil {
		return fail(stdio, "images build", ExitError, err)
	}
	defer eng.Close()
	for _, img := range todo {
		id, err := images.Ensure(ctx, eng, img, stdio.Stderr)
		if err != nil {
			return fail(stdio, "images build", ExitError, err)
		}
		fmt.Fprintf(stdio.Stdout, "%s\t%s\n", img.Name(), id)
	}
	return ExitOK
}

func runImagesList(ctx context.Context, args []string, stdio IO) int {
	fs := newFlags("images list", stdio.Stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	eng, err := engine.NewDocker(ctx, engine.Config{Logger: stdio.Log})
	if err != nil {
		return fail(stdio, "images list", ExitError, err)
	}
	defer eng.Close()
	list, err := eng.ListImages(ctx)
	if err != nil {
		return fail(stdio, "images list", ExitError, err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdio.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			return fail(stdio, "images list", ExitError, err)
		}
		return ExitOK
	}
	tw := tabwriter.NewWriter(stdio.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tRECIPE\tID\tSIZE\tCREATED")
	for _, im := range list {
		fmt.Fprintf(tw, "%s\t%.12s\t%s\t%d MiB\t%s\n", im.Name, im.Recipe, im.ID, im.Size>>20, im.Created.Format("2006-01-02 15:04"))
	}
	tw.Flush()
	return ExitOK
}

// newController is controller.New for the commands that grade. The runtime
// and judge images are taken from cfg, else from $STRICTGRADE_RUNTIME_IMAGE
// and $STRICTGRADE_JUDGE_IMAGE (references, best pinned by digest); the
// ones still unset are built when missing, with progress on stderr. The
// CLI is the explicit build step; the library only resolves.
func newController(ctx context.Context, stdio IO, cfg controller.Config) (*controller.Controller, error) {
	if cfg.RuntimeImage == "" {
		cfg.RuntimeImage = os.Getenv("STRICTGRADE_RUNTIME_IMAGE")
	}
	if cfg.JudgeImage == "" {
		cfg.JudgeImage = os.Getenv("STRICTGRADE_JUDGE_IMAGE")
	}
	type want struct {
		ref *string
		img images.Image
	}
	var todo []want
	if cfg.RuntimeImage == "" {
		todo = append(todo, want{&cfg.RuntimeImage, images.Python{}})
	}
	if cfg.JudgeImage == "" {
		todo = append(todo, want{&cfg.JudgeImage, images.Judge()})
	}
	if len(todo) > 0 {
		eng, err := engine.NewDocker(ctx, engine.Config{Logger: stdio.Log})
		if err != nil {
			return nil, err
		}
		defer eng.Close()
		for _, w := range todo {
			// The ID found (or built) is the one the controller runs:
			// it need not look the recipe up again.
			id, err := images.Ensure(ctx, eng, w.img, stdio.Stderr)
			if err != nil {
				return nil, err
			}
			*w.ref = id
		}
	}
	return controller.New(ctx, cfg)
}
