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
	"github.com/strictgrade/strictgrade/schema"
)

func init() {
	register(command{name: "matrix", summary: "run the proof matrix of attacks and gate on regressions", do: runMatrix})
}

// matrixArgs is a matrix run's command line.
type matrixArgs struct {
	tiers                 []proofmatrix.Tier
	filter                *regexp.Regexp
	parallel              int
	stress                int
	json, markdown, junit string
	expected              string
	update                bool
	judgeImage, judgeCmd  string
	merge                 []string
	backendArgs
}

func runMatrix(ctx context.Context, args []string, stdio IO) error {
	a, err := parseMatrix(args, stdio)
	if err != nil {
		return err
	}
	if len(a.merge) > 0 {
		return mergeMatrix(stdio, a)
	}
	exp, expPath, err := loadExpectation(a.expected, a.update)
	if err != nil {
		return badInput(err)
	}
	rep, err := a.run(ctx, stdio)
	if err != nil {
		return err
	}
	if a.update && rep.Runtime != proofmatrix.DefaultRuntime {
		return usagef("--update records the %s expectation; this run was on %s, whose differences are written by hand, each with its reason, under \"runtimes\" in %s",
			proofmatrix.DefaultRuntime, rep.Runtime, proofmatrix.ExpectedPath)
	}
	if !a.update {
		if exp, err = exp.For(rep.Runtime); err != nil {
			return badInput(err)
		}
	}
	if err := a.write(stdio, rep, exp); err != nil {
		return err
	}
	if a.update {
		if err := rep.Expectation(exp).Write(expPath); err != nil {
			return err
		}
		fmt.Fprintf(stdio.Stderr, "matrix: wrote %s; review the diff before committing it\n", expPath)
		if !rep.ControlsOK() {
			return outcome(schema.OutcomeFail, "a control failed: this run is not a valid expectation")
		}
		return nil
	}
	return judgeMatrix(stdio, rep, exp)
}

// mergeMatrix writes the side-by-side table of earlier runs' reports.
func mergeMatrix(stdio IO, a *matrixArgs) error {
	var reps []*proofmatrix.Report
	for _, p := range a.merge {
		r, err := proofmatrix.LoadReport(p)
		if err != nil {
			return badInput(err)
		}
		reps = append(reps, r)
	}
	if a.markdown == "" {
		return proofmatrix.WriteRuntimesMarkdown(stdio.Stdout, reps)
	}
	return writeFile(a.markdown, func(f *os.File) error { return proofmatrix.WriteRuntimesMarkdown(f, reps) })
}

// parseMatrix reads and checks a matrix's command line. A --run that
// selects no probe is refused: a gate that ran nothing would pass.
func parseMatrix(args []string, stdio IO) (*matrixArgs, error) {
	a := &matrixArgs{}
	fs := flagSet(stdio.Stderr, "matrix", "[flags]",
		"Runs the proof matrix of attacks against both tiers and compares the results with the expectation.")
	tier := fs.String("tier", "all", "strict, compat or all")
	runRe := fs.String("run", "", "only probes whose id or taxonomy id matches this regular expression (controls always run)")
	fs.IntVar(&a.parallel, "parallel", controller.DefaultMaxInFlight(), "probes in flight (default: the CPUs)")
	fs.IntVar(&a.stress, "stress", 0, "run this many busy loops beside the matrix, each a CPU hog of its own: the results must not change")
	fs.StringVar(&a.json, "json", "", "write the report as JSON to this file")
	fs.StringVar(&a.markdown, "markdown", "", "write the matrix as a Markdown table to this file")
	fs.StringVar(&a.junit, "junit", "", "write a JUnit XML report to this file")
	fs.StringVar(&a.expected, "expected", "", "expectation to compare with (default: "+proofmatrix.ExpectedPath+" if present, else the one built in)")
	fs.BoolVar(&a.update, "update", false, "rewrite the expectation file with this run's results instead of comparing")
	fs.StringVar(&a.judgeImage, "judge-image", "", "use this judge image instead of the built one (for testing other judges)")
	fs.StringVar(&a.judgeCmd, "judge-cmd", "", "the judge command, space-separated (with --judge-image)")
	a.backendArgs.register(fs)
	merge := fs.String("merge", "", "run nothing: write one Markdown table of these comma-separated JSON reports (--json of earlier runs on other backends), a column per runtime, to --markdown or stdout")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, usagef("takes no arguments")
	}
	if *merge != "" {
		a.merge = strings.Split(*merge, ",")
		return a, nil
	}
	if a.parallel < 1 {
		return nil, usagef("--parallel must be at least 1")
	}
	if a.stress < 0 || a.stress > 64 {
		return nil, usagef("--stress must be between 0 and 64")
	}
	if a.stress > 0 && a.update {
		return nil, usagef("--stress is a test of the expectation, not a way to record one")
	}
	switch *tier {
	case "all":
		a.tiers = []proofmatrix.Tier{proofmatrix.Strict, proofmatrix.Compat}
	case "strict", "compat":
		a.tiers = []proofmatrix.Tier{proofmatrix.Tier(*tier)}
	default:
		return nil, usagef("unknown tier %q", *tier)
	}
	if *runRe != "" {
		re, err := regexp.Compile(*runRe)
		if err != nil {
			return nil, badInput(err)
		}
		a.filter = re
		if !selects(re, a.tiers) {
			return nil, usagef("--run %q matches no probe of tier %s", *runRe, *tier)
		}
	}
	return a, nil
}

// selects reports whether re selects a probe, other than the controls
// that always run, of one of tiers.
func selects(re *regexp.Regexp, tiers []proofmatrix.Tier) bool {
	for _, p := range proofmatrix.All() {
		if p.Control || !re.MatchString(p.ID) && !re.MatchString(p.Taxonomy) {
			continue
		}
		for _, t := range tiers {
			if p.Applies(t) {
				return true
			}
		}
	}
	return false
}

// run prepares a controller with an ephemeral key and runs the probes.
func (a *matrixArgs) run(ctx context.Context, stdio IO) (*proofmatrix.Report, error) {
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		return nil, err
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		return nil, err
	}
	cfg := controller.Config{Signer: signer, MaxInFlight: a.parallel}
	if a.judgeImage != "" {
		cfg.JudgeImage = a.judgeImage
		cfg.JudgeCmd = strings.Fields(a.judgeCmd)
	}
	fmt.Fprintln(stdio.Stderr, "matrix: preparing the controller")
	ctrl, closeCtrl, err := a.open(ctx, stdio, cfg, true)
	if err != nil {
		return nil, err
	}
	defer closeCtrl()
	load, err := startBusyLoops(a.stress, stdio.Stderr)
	if err != nil {
		return nil, err
	}
	defer load.stop()
	return proofmatrix.Run(ctx, ctrl, signer, proofmatrix.Options{Tiers: a.tiers, Filter: a.filter, Parallel: a.parallel, Progress: stdio.Stderr, KeyPEM: priv})
}

// write prints the table and writes the report files asked for.
func (a *matrixArgs) write(stdio IO, rep *proofmatrix.Report, exp *proofmatrix.Expected) error {
	if err := rep.WriteTable(stdio.Stdout); err != nil {
		return err
	}
	writers := []struct {
		path  string
		write func(f *os.File) error
	}{
		{a.json, func(f *os.File) error { return rep.WriteJSON(f) }},
		{a.markdown, func(f *os.File) error { return rep.WriteMarkdown(f) }},
		{a.junit, func(f *os.File) error { return rep.WriteJUnit(f, exp) }},
	}
	for _, w := range writers {
		if w.path == "" {
			continue
		}
		if err := writeFile(w.path, w.write); err != nil {
			return err
		}
	}
	return nil
}

// judgeMatrix compares a run with the expectation: a regression or a
// failed control is a FAIL.
func judgeMatrix(stdio IO, rep *proofmatrix.Report, exp *proofmatrix.Expected) error {
	regs := proofmatrix.Compare(rep, exp)
	if !rep.ControlsOK() {
		fmt.Fprintln(stdio.Stderr, "matrix: a control failed: the run is invalid")
	}
	if len(regs) > 0 || !rep.ControlsOK() {
		for _, g := range regs {
			fmt.Fprintf(stdio.Stderr, "  REGRESSION %s\n", g)
		}
		return outcome(schema.OutcomeFail, "%d regressions against the expectation", len(regs))
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
	return nil
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
