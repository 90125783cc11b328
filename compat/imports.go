package compat

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
)

// ReasonPackagesShadowed is the reason code of a baseline QUARANTINED
// because a top-level package of the checkout resolves, when the tests
// run, to a copy outside it: the runtime image's (Debian's pytest brings
// its dependencies onto sys.path, see the README's list) or the standard
// library's. The tests would grade that copy, not the repository's.
const ReasonPackagesShadowed = "packages_shadowed"

// importsScript finds where the checkout's packages resolve (see
// imports.py).
//
//go:embed imports.py
var importsScript string

// importsReport is imports.py's report.
type importsReport struct {
	Packages []string `json:"packages"`
	Shadowed []struct {
		Name       string `json:"name"`
		ResolvesTo string `json:"resolves_to"`
		Checkout   string `json:"checkout"`
	} `json:"shadowed"`
}

// maxImportsReport bounds imports.py's report.
const maxImportsReport = 256 << 10

// importsCmd runs imports.py with the suites' own pytest arguments, but
// collecting only and writing no JUnit report.
func importsCmd(ids []string) []string {
	args := []string{"python3", "-P", "-s", "-B", "-c", importsScript, RepoDir, OutDir + "/imports.json"}
	for _, a := range pytestCmd(ids)[6:] { // after python3 -P -s -B -m pytest
		if strings.HasPrefix(a, "--junitxml=") {
			continue
		}
		if a == "--" {
			args = append(args, "--collect-only")
		}
		args = append(args, a)
	}
	return args
}

// checkImports runs imports.py at the base (the baseline's checkout, no
// candidate code) and returns the reason the task is QUARANTINED for, or
// "" when every top-level package of the checkout resolves to the
// checkout. A probe that gives no usable report decides nothing: the log
// says why.
func (g *grader) checkImports(ctx context.Context, work string) (string, error) {
	res, err := g.eng.Run(ctx, sandbox.Spec{
		Run: g.req.Run, Phase: "oracle-imports", Image: g.req.Image,
		Cmd: runnerCmd(importsCmd(g.t.HiddenIDs)), Env: g.t.env(), WorkDir: RepoDir,
		Mounts: []sandbox.Mount{{Volume: work, Target: WorkDir, ReadOnly: true}},
		Limits: g.limits(testOutput + 4<<10), StreamOut: outDir(testOutBytes, testOutInodes), CollectPolicy: outPolicy,
	})
	if errors.Is(err, sandbox.ErrCollect) {
		g.event("imports", "output refused", "error", err.Error())
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("compat: imports run: %w", err)
	}
	if err := g.checkImage(res); err != nil {
		return "", err
	}
	data, ok, err := fileFrom(res.Collected[OutDir].Archive, "out/imports.json", maxImportsReport)
	if err != nil || !ok {
		g.event("imports", "no report", "error", errString(err), "code", res.Code, "output_tail", tail(res.Stderr, 2048))
		return "", nil
	}
	var rep importsReport
	if err := json.Unmarshal(data, &rep); err != nil {
		g.event("imports", "report unreadable", "error", err.Error())
		return "", nil
	}
	g.event("imports", "report read", "packages", rep.Packages, "shadowed", len(rep.Shadowed))
	if len(rep.Shadowed) == 0 {
		return "", nil
	}
	var parts []string
	for i, s := range rep.Shadowed {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(rep.Shadowed)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s resolves to %s, not the checkout's %s", s.Name, s.ResolvesTo, strings.TrimPrefix(s.Checkout, RepoDir+"/")))
	}
	return "the tests would grade copies outside the checkout: " + strings.Join(parts, "; ") +
		" (for a src layout, set repo.pythonpath to src; a package the runtime image holds and pytest imports first cannot be graded in it)", nil
}

// shadowed turns a baseline verdict into QUARANTINED for shadowed
// packages: whatever else the baseline found, its tests ran against the
// wrong code.
func (g *grader) shadowed(v *schema.Verdict, reason string) {
	v.Outcome, v.ReasonCode, v.Reason = schema.OutcomeQuarantined, ReasonPackagesShadowed, text(reason, 1000)
	g.event("decide", "baseline QUARANTINED", "reason_code", ReasonPackagesShadowed, "reason", reason)
}
