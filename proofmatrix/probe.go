package proofmatrix

import (
	"context"
	"fmt"
	"regexp"
	"slices"
)

// Tier names the grading tier a probe runs in.
type Tier string

// The tiers.
const (
	Strict Tier = "strict"
	Compat Tier = "compat"
)

// Result is what a probe run amounts to.
type Result string

// The results. Controls expect Pass or Fail; attacks expect Blocked or,
// where a tier is known to be open, Succeeds.
const (
	Blocked  Result = "blocked"  // the attack did not get a PASS
	Succeeds Result = "succeeds" // the attack got a PASS
	Pass     Result = "pass"     // a control graded PASS
	Fail     Result = "fail"     // a control graded FAIL
	Errored  Result = "error"    // the grader could not grade: never expected
)

// Probe is one entry of the suite.
type Probe struct {
	ID       string // stable identifier, e.g. "V8.2-symlink"
	Taxonomy string // row of TAXONOMY.md, e.g. "V8.2"; "control" for controls
	Class    string // V1 … V13, or "control"
	Title    string
	Source   string // the public source of the attack (TAXONOMY.md's R-number and a short cite)
	// Control probes must grade to their expected Pass/Fail.
	Control bool
	Strict  *Case // nil: the probe does not apply to the strict tier
	Compat  *Case // nil: the probe does not apply to the compat tier
}

// Case is a probe's form in one tier.
type Case struct {
	// Task is the name of the embedded task graded against.
	Task string
	// Files are written into a fresh submission directory (strict tier);
	// a body starting with "#!" is made executable.
	Files map[string]string
	// Prepare may add to the submission directory (links, special files).
	Prepare func(dir string) error
	// Archive, when set, is submitted as a tar stream instead of a
	// directory.
	Archive func() ([]byte, error)
	// Diff is the unified diff submitted (compat tier).
	Diff string
	// Custom, when set, replaces grading the submission: it runs a
	// scripted behaviour and reports what happened.
	Custom func(ctx context.Context, env *Env) (Observation, error)
	// Expect is the result the design promises in this tier, and Layer
	// the layer that should decide it (see Observation.Layer).
	Expect Result
	Layer  string
	// Why explains the expectation in one line (shown in reports).
	Why string
}

// Observation is what running one probe in one tier showed.
type Observation struct {
	Result Result `json:"result"`
	// Layer names what decided: "judge: wrong_answer", "fw-in: symlink",
	// "limits: timeout", "verify: subject", "none" for a PASS …
	Layer   string `json:"layer"`
	Outcome string `json:"outcome,omitempty"` // verdict outcome, when a grade ran
	Reason  string `json:"reason,omitempty"`
	RunID   string `json:"run_id,omitempty"`
}

// Applies reports whether the probe has a form for tier t.
func (p *Probe) Applies(t Tier) bool { return p.caseFor(t) != nil }

func (p *Probe) caseFor(t Tier) *Case {
	switch t {
	case Strict:
		return p.Strict
	case Compat:
		return p.Compat
	}
	return nil
}

var registry []*Probe

func register(ps ...*Probe) { registry = append(registry, ps...) }

// All returns every registered probe, controls first, then by id.
func All() []*Probe {
	attachCompat()
	out := slices.Clone(registry)
	slices.SortStableFunc(out, func(a, b *Probe) int {
		if a.Control != b.Control {
			if a.Control {
				return -1
			}
			return 1
		}
		return compareIDs(a.ID, b.ID)
	})
	return out
}

var idNum = regexp.MustCompile(`^V(\d+)\.(\d+)`)

// compareIDs orders V2.1 before V10.2.
func compareIDs(a, b string) int {
	ma, mb := idNum.FindStringSubmatch(a), idNum.FindStringSubmatch(b)
	if ma != nil && mb != nil {
		var x1, y1, x2, y2 int
		fmt.Sscan(ma[1], &x1)
		fmt.Sscan(ma[2], &y1)
		fmt.Sscan(mb[1], &x2)
		fmt.Sscan(mb[2], &y2)
		if x1 != x2 {
			return x1 - x2
		}
		if y1 != y2 {
			return y1 - y2
		}
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
