package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/proofmatrix"
)

func init() {
	register(command{name: "matrix", summary: "run the proof matrix of attacks and gate on regressions", run: runMatrix})
}

func runMatrix(ctx context.Context, args []string, stdio IO) int {
	fs := newFlags("matrix", stdio.Stderr)
	tier := fs.String("tier", "all", "strict, compat or all")
	runRe := fs.String("run", "", "only probes whose id or taxonomy id matches this regular expression (controls always run)")
	parallel := fs.Int("parallel", 2, "probes in flight")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	mdOut := fs.String("markdown", "", "write the matrix as a Markdown table to this file")
	junitOut := fs.String("junit", "", "write a JUnit XML report to this file")
	expectedPath := fs.String("expected", "", "expectation to compare with (default: "+proofmatrix.ExpectedPath+" if present, else the one built in)")
	update := fs.Bool("update", false, "rewrite the expectation file with this run's results instead of comparing")
	judgeImage := fs.String("judge-image", "", "use this judge image instead of the built one (for testing other judges)")
	judgeCmd := fs.String("judge-cmd", "", "the judge command, space-separated (with --judge-image)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 || *parallel < 1 {
		fmt.Fprintln(stdio.Stderr, "usage: strictgrade matrix [--tier strict|compat|all] [--run REGEX] [--parallel N] [--json F] [--markdown F] [--junit F] [--expected F] [--update]")
		return ExitUsage
	}
	var tiers []proofmatrix.Tier
	switch *tier {
	case "all":
	case "strict", "compat":
		tiers = []proofmatrix.Tier{proofmatrix.Tier(*tier)}
	default:
		fmt.Fprintf(stdio.Stderr, "strictgrade matrix: unknown tier %q\n", *tier)
		return ExitUsage
	}
	var filter *regexp.Regexp
	if *runRe != "" {
		re, err := regexp.Compile(*runRe)
		if err != nil {
			return fail(stdio, "matrix", ExitUsage, err)
		}
		filter = re
	}
	exp, expPath, err := loadExpectation(*expectedPath, *update)
	if err != nil {
		return fail(stdio, "matrix", ExitUsage, err)
	}
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		return fail(stdio, "matrix", ExitError, err)
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		return fail(stdio, "matrix", ExitError, err)
	}
	cfg := controller.Config{Signer: signer, BuildProgress: stdio.Stderr, MaxInFlight: *parallel}
	if *judgeImage != "" {
		cfg.JudgeImage = *judgeImage
		cfg.JudgeCmd = strings.Fields(*judgeCmd)
	}
	fmt.Fprintln(stdio.Stderr, "matrix: preparing the controller (images are built on first use)")
	ctrl, err := controller.New(ctx, cfg)
	if err != nil {
		return fail(stdio, "matrix", ExitError, err)
	}
	defer ctrl.Close()
	rep, err := proofmatrix.Run(ctx, ctrl, signer, proofmatrix.Options{Tiers: tiers, Filter: filter, Parallel: *parallel, Progress: stdio.Stderr, KeyPEM: priv})
	if err != nil {
		return fail(stdio, "matrix", ExitError, err)
	}
	if err := rep.WriteTable(stdio.Stdout); err != nil {
		return fail(stdio, "matrix", ExitError, err)
	}
	writers := []struct {
		path  string
		write func(f *os.File) error
	}{
		{*jsonOut, func(f *os.File) error { return rep.WriteJSON(f) }},
		{*mdOut, func(f *os.File) error { return rep.WriteMarkdown(f) }},
		{*junitOut, func(f *os.File) error { return rep.WriteJUnit(f, exp) }},
	}
	for _, w := range writers {
		if w.path == "" {
			continue
		}
		if err := writeFile(w.path, w.write); err != nil {
			return fail(stdio, "matrix", ExitError, err)
		}
	}
	if *update {
		if err := rep.Expectation(exp).Write(expPath); err != nil {
			return fail(stdio, "matrix", ExitError, err)
		}
		fmt.Fprintf(stdio.Stderr, "matrix: wrote %s; review the diff before committing it\n", expPath)
		if !rep.ControlsOK() {
			fmt.Fprintln(stdio.Stderr, "matrix: a control failed: this run is not a valid expectation")
			return ExitFail
		}
		return ExitOK
	}
	regs := proofmatrix.Compare(rep, exp)
	if !rep.ControlsOK() {
		fmt.Fprintln(stdio.Stderr, "matrix: a control failed: the run is invalid")
	}
	if len(regs) > 0 || !rep.ControlsOK() {
		fmt.Fprintf(stdio.Stderr, "matrix: %d regressions against the expectation:\n", len(regs))
		for _, g := range regs {
			fmt.Fprintf(stdio.Stderr, "  REGRESSION %s\n", g)
		}
		return ExitFail
	}
	blocked, open := 0, 0
	for _, e := range rep.Entries {
		switch e.Got.Result {
		case proofmatrix.Blocked:
			blocked++
		case proofmatrix.Succeeds:
			open++
		}
	}
	fmt.Fprintf(stdio.Stderr, "matrix: %d probe runs match the expectation (%d blocked, %d succeeding by design) in %.1fs\n",
		len(rep.Entries), blocked, open, float64(rep.Millis)/1000)
	return ExitOK
}

// loadExpectation finds the expectation: the named file, the repository's
// file, or the built-in copy. With update the file must be writable.
func loadExpectation(path string, update bool) (*proofmatrix.Expected, string, error) {
	if path == "" {
		path = proofmatrix.ExpectedPath
		if _, err := os.Stat(path); err != nil {
			if update {
				return nil, "", fmt.Errorf("--update needs %s (run from the repository root) or --expected FILE", proofmatrix.ExpectedPath)
			}
			e, err := proofmatrix.DefaultExpected()
			return e, "", err
		}
	}
	e, err := proofmatrix.LoadExpected(path)
	if err != nil && update && errors.Is(err, os.ErrNotExist) {
		return &proofmatrix.Expected{}, path, nil
	}
	return e, path, err
}

func writeFile(path string, write func(f *os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
