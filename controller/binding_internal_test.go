package controller

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/strictgrade/strictgrade/candidate"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/tarball"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

func TestDisclosureResolution(t *testing.T) {
	const (
		none     = schema.Disclosure("")
		digest   = schema.DisclosureDigest
		detailed = schema.DisclosureDetailed
	)
	for _, tt := range []struct {
		harness, spec, want schema.Disclosure
	}{
		{none, none, digest},
		{none, detailed, detailed},
		{detailed, none, detailed},
		{detailed, detailed, detailed},
		{digest, detailed, digest},
		{detailed, digest, digest},
		{digest, none, digest},
		{none, digest, digest},
	} {
		if got := disclosure(tt.harness, tt.spec); got != tt.want {
			t.Errorf("harness %q, task %q: %q, want %q", tt.harness, tt.spec, got, tt.want)
		}
	}
}

// TestCheckBindingEchoes: a judge verdict must carry back the disclosure
// policy and the call order it was given.
func TestCheckBindingEchoes(t *testing.T) {
	tk, err := task.Load(t.Context(), filepath.Join("..", "examples", "sum", "task"))
	if err != nil {
		t.Fatal(err)
	}
	g := &grade{task: tk, run: "g0123456789", nonce: schema.NewNonce(), disclosure: schema.DisclosureDigest, c: &Controller{}}
	want := g.skeleton([]byte("archive"))
	want.CaseOrder = candidate.CallOrder(g.nonce, len(tk.Cases.Cases))
	answer := func() *schema.Verdict {
		v := *want
		v.CaseOrder = append([]int(nil), want.CaseOrder...)
		var cases []schema.Case
		for _, c := range tk.Cases.Cases {
			cases = append(cases, schema.Case{ID: c.ID, Outcome: schema.OutcomePass, DecidedBy: schema.DecidedByJSON})
		}
		v.SetCases(cases)
		v.Outcome = schema.OutcomePass
		return &v
	}
	if err := g.checkBinding(answer(), want); err != nil {
		t.Fatalf("a faithful answer: %v", err)
	}
	for name, edit := range map[string]func(v *schema.Verdict){
		"another policy":  func(v *schema.Verdict) { v.Disclosure = schema.DisclosureDetailed },
		"no policy":       func(v *schema.Verdict) { v.Disclosure = "" },
		"no call order":   func(v *schema.Verdict) { v.CaseOrder = nil },
		"another order":   func(v *schema.Verdict) { v.CaseOrder[0], v.CaseOrder[1] = v.CaseOrder[1], v.CaseOrder[0] },
		"another nonce":   func(v *schema.Verdict) { v.Nonce = schema.NewNonce() },
		"a version-1 one": func(v *schema.Verdict) { v.Schema = schema.IDv1 },
	} {
		v := answer()
		edit(v)
		if err := g.checkBinding(v, want); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRejectionReasons: what the submission did wrong is its FAIL, and
// under the default policy the reason names the problem, never a name the
// submission chose.
func TestRejectionReasons(t *testing.T) {
	const chosen = "chosen-name-Zx81"
	for _, tt := range []struct {
		name   string
		err    error
		digest string // the whole reason under digest; "" means not the submission's fault
	}{
		{"firewall rejection", fmt.Errorf("filter: %w", &firewall.RejectError{Entry: "lib/" + chosen, Offset: 1536, Err: firewall.ErrSymlink, Reason: "link to " + strconv.Quote(chosen)}),
			"firewall: symlink: entry at byte 1536"},
		{"firewall rejection of the whole input", &firewall.RejectError{Err: firewall.ErrCompressed, Reason: "input starts with the gzip magic number"},
			"firewall: compressed input"},
		{"walk problem", &tarball.WalkError{Path: "lib/" + chosen + "\xff", Reason: "name is not valid UTF-8"},
			"submission: the workspace holds an entry that cannot be submitted: name is not valid UTF-8"},
		{"walk problem with a system error", &tarball.WalkError{Path: "lib/" + chosen, Reason: "unreadable", Err: fs.ErrPermission},
			"submission: the workspace holds an entry that cannot be submitted: unreadable"},
		{"missing artifact", &missingError{"solution.py"}, `declared artifact "solution.py" is missing`},
		{"too large", fmt.Errorf("%w: submission larger than %d bytes", firewall.ErrLimit, 100), "firewall: limit exceeded: submission larger than 100 bytes"},
		{"our own spool", fmt.Errorf("open /tmp/strictgrade-submission-1.tar: %w", fs.ErrPermission), ""},
		{"a cancelled pipe", io.ErrClosedPipe, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &grade{disclosure: schema.DisclosureDigest}
			got, ok := g.rejection(tt.err)
			if ok != (tt.digest != "") {
				t.Fatalf("submission's fault: %v, want %v", ok, tt.digest != "")
			}
			if got != tt.digest {
				t.Errorf("digest reason %q, want %q", got, tt.digest)
			}
			if !ok {
				return
			}
			g.disclosure = schema.DisclosureDetailed
			if got, _ := g.rejection(tt.err); got != tt.err.Error() {
				t.Errorf("detailed reason %q, want the whole error %q", got, tt.err.Error())
			}
		})
	}
}
