package strict

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/strictgrade/strictgrade/candidate"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/internal/tarball"
	"github.com/strictgrade/strictgrade/judge"
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
	g := &grade{task: tk, req: Request{Header: grading.Header{Run: "g0123456789", Nonce: schema.NewNonce()}}, disclosure: schema.DisclosureDigest}
	want := g.skeleton([]byte("archive"))
	want.CaseOrder = candidate.CallOrder(g.req.Nonce, len(tk.Cases.Cases))
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

// TestOutputsArchiveKeepsGradedFiles: whatever a candidate leaves beyond the
// files it is graded on never reaches the judge, so the number of files a
// candidate writes cannot push the judge's volume past its limits.
func TestOutputsArchiveKeepsGradedFiles(t *testing.T) {
	cases := make([]judge.Case, 120)
	outs := &candidate.Outputs{Cases: make([]candidate.Case, len(cases))}
	for i := range cases {
		cases[i] = judge.Case{ID: "c" + strconv.Itoa(i), ExpectedFiles: map[string]string{"out.txt": "e.txt"}}
		files := map[string][]byte{"out.txt": []byte("answer")}
		for j := range 9000 {
			files["junk-"+strconv.Itoa(j)] = nil
		}
		outs.Cases[i] = candidate.Case{Record: candidate.Record{Exit: schema.ExitExited}, Files: files, Stdout: []byte("out"), Stderr: []byte("err")}
	}
	data, err := outputsArchive(outs, &judge.Cases{Cases: cases}, schema.KindData)
	if err != nil {
		t.Fatal(err)
	}
	man, err := firewall.Filter(t.Context(), bytes.NewReader(data), io.Discard, judgePolicy)
	if err != nil {
		t.Fatalf("the judge's volume refuses the outputs: %v", err)
	}
	// Per case: its directory, files/, result.json, out.txt.
	if want := len(cases) * 4; len(man.Files)+len(man.Dirs) > want+1 {
		t.Errorf("%d entries reach the judge, want at most %d", len(man.Files)+len(man.Dirs), want+1)
	}

	// Of each kind, what reaches the judge: what it reads, and nothing
	// else (neither stderr nor an ungraded stdout).
	for _, tt := range []struct {
		kind schema.TaskKind
		c    judge.Case
		want []string
	}{
		{schema.KindFunction, judge.Case{ID: "f"}, []string{"outputs/0/files/value.json", "outputs/0/result.json"}},
		{schema.KindData, judge.Case{ID: "d", ExpectedFiles: map[string]string{"out.txt": "e"}}, []string{"outputs/0/files/out.txt", "outputs/0/result.json"}},
		{schema.KindCommand, judge.Case{ID: "c", ExpectedStdout: new("out")}, []string{"outputs/0/result.json", "outputs/0/stdout"}},
		{schema.KindCommand, judge.Case{ID: "e", ExpectedExit: new(0)}, []string{"outputs/0/result.json"}},
	} {
		outs := &candidate.Outputs{Cases: []candidate.Case{{Record: candidate.Record{Exit: schema.ExitExited}, Stdout: []byte("out"), Stderr: []byte("err"),
			Files: map[string][]byte{judge.ValueFile: []byte(`{"ok":true,"value":1}`), "out.txt": []byte("x"), "other": nil}}}}
		data, err := outputsArchive(outs, &judge.Cases{Cases: []judge.Case{tt.c}}, tt.kind)
		if err != nil {
			t.Fatal(err)
		}
		man, err := firewall.Filter(t.Context(), bytes.NewReader(data), io.Discard, judgePolicy)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range man.Files {
			got = append(got, f.Path)
		}
		if slices.Sort(got); !slices.Equal(got, tt.want) {
			t.Errorf("%s case %s: %v reach the judge, want %v", tt.kind, tt.c.ID, got, tt.want)
		}
	}
}
