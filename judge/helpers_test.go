package judge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/schema"
)

// skeleton returns the verdict skeleton a controller writes into meta.json:
// every binding field filled in realistically, outcome and cases left to
// the judge.
func skeleton(kind schema.TaskKind) schema.Verdict {
	v := schema.New(schema.Task{ID: "examples/" + string(kind), Digest: strings.Repeat("a1", 32), Kind: kind}, schema.TierStrict)
	v.RunID = "run-20260101T000000-0001"
	v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: strings.Repeat("b2", 32), Size: 10240}
	v.Images = schema.Images{
		Agent:     "sha256:" + strings.Repeat("c3", 32),
		Candidate: "sha256:" + strings.Repeat("d4", 32),
		Judge:     "sha256:" + strings.Repeat("e5", 32),
	}
	v.Timings = schema.Timings{TotalMS: 2400, SetupMS: 150, FirewallMS: 12, CandidateMS: 1900}
	v.Controller = schema.Controller{Version: "0.1.0-test", Runtime: "docker/runc"}
	v.Nonce = "Zm9yLXRlc3RzLW9ubHktbm90LWEtcmVhbC1ub25jZQ"
	return *v
}

// out describes what one case left in outputs/<i>/.
type out struct {
	// result is written as result.json unless nil; raw, if set, is
	// written instead.
	result *RunResult
	raw    string
	stdout *string
	files  map[string]string
	// absent leaves outputs/<i>/ out entirely.
	absent bool
}

func exited(code int) *RunResult {
	return &RunResult{Exit: schema.ExitExited, ExitCode: code, DurationMS: 25}
}

// fixture is a judge input directory.
type fixture struct {
	kind   schema.TaskKind
	cases  string
	hidden map[string]string
	outs   []out
	// meta, if set, replaces the controller's meta.json.
	meta string
	// disclosure, if set, is the skeleton's disclosure policy.
	disclosure schema.Disclosure
}

// write lays the fixture out under a new temporary directory, the way the
// controller fills the judge's volume, and returns the directory.
func (f fixture) write(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	put := func(name, data string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	meta := f.meta
	if meta == "" {
		v := skeleton(f.kind)
		if f.disclosure != "" {
			v.Disclosure = f.disclosure
		}
		b, err := json.Marshal(Meta{Verdict: v, Kind: f.kind})
		if err != nil {
			t.Fatal(err)
		}
		meta = string(b)
	}
	put(MetaFile, meta)
	if f.cases != "" {
		put("hidden/cases.json", f.cases)
	}
	for name, data := range f.hidden {
		put("hidden/"+name, data)
	}
	for i, o := range f.outs {
		if o.absent {
			continue
		}
		dir := "outputs/" + strconv.Itoa(i) + "/"
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(dir)), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case o.raw != "":
			put(dir+ResultFile, o.raw)
		case o.result != nil:
			b, err := json.Marshal(o.result)
			if err != nil {
				t.Fatal(err)
			}
			put(dir+ResultFile, string(b))
		}
		if o.stdout != nil {
			put(dir+StdoutFile, *o.stdout)
		}
		put(dir+"stderr", "noise on stderr\n")
		for name, data := range o.files {
			put(dir+"files/"+name, data)
		}
	}
	return root
}

// judgeDir reads and judges a directory and checks the verdict against the
// schema, as the controller will.
func judgeDir(t testing.TB, root string) (*schema.Verdict, error) {
	t.Helper()
	in, err := ReadInput(root)
	if err != nil {
		return nil, err
	}
	v, err := Judge(in)
	if err != nil {
		return nil, err
	}
	mustValidate(t, v)
	return v, nil
}

// mustValidate marshals a verdict and validates it with schema.Validate.
func mustValidate(t testing.TB, v *schema.Verdict) []byte {
	t.Helper()
	data, err := schema.Marshal(v)
	if err != nil {
		t.Fatalf("the judge produced a verdict the schema refuses: %v", err)
	}
	if _, err := schema.Validate(data); err != nil {
		t.Fatalf("schema.Validate: %v", err)
	}
	return data
}

// value is a shim record holding a value.
func value(v string) map[string]string {
	return map[string]string{ValueFile: `{"ok":true,"value":` + v + `}`}
}
