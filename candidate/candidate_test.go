package candidate

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
)

// fakeEngine records what the candidate phase asks of the engine and
// answers each Run with a scripted result.
type fakeEngine struct {
	mu      sync.Mutex
	volumes map[string]bool
	loaded  map[string][]string // volume → file names copied in
	runs    []sandbox.Spec
	answer  func(s sandbox.Spec) (*sandbox.Result, error)
	seq     int
}

func newFake(answer func(sandbox.Spec) (*sandbox.Result, error)) *fakeEngine {
	return &fakeEngine{volumes: map[string]bool{}, loaded: map[string][]string{}, answer: answer}
}

func (f *fakeEngine) NewVolume(ctx context.Context, run, phase string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	name := fmt.Sprintf("%s-%s-%d", run, phase, f.seq)
	f.volumes[name] = true
	return name, nil
}

func (f *fakeEngine) CopyIn(ctx context.Context, run, vol string, archive io.Reader, opts sandbox.CopyInOptions) (*firewall.Manifest, error) {
	var buf bytes.Buffer
	man, err := firewall.Filter(ctx, archive, &buf, opts.Policy)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.volumes[vol] {
		return nil, errors.New("copy into a volume that does not exist")
	}
	for _, file := range man.Files {
		f.loaded[vol] = append(f.loaded[vol], file.Path)
	}
	return man, nil
}

func (f *fakeEngine) NewVolumeWith(ctx context.Context, run, phase string, archive io.Reader, opts sandbox.CopyInOptions) (string, *firewall.Manifest, error) {
	name, err := f.NewVolume(ctx, run, phase)
	if err != nil {
		return "", nil, err
	}
	man, err := f.CopyIn(ctx, run, name, archive, opts)
	if err != nil {
		_ = f.RemoveVolume(ctx, name)
		return "", nil, err
	}
	return name, man, nil
}

func (f *fakeEngine) Run(ctx context.Context, s sandbox.Spec) (*sandbox.Result, error) {
	f.mu.Lock()
	f.runs = append(f.runs, s)
	f.mu.Unlock()
	return f.answer(s)
}

func (f *fakeEngine) RemoveVolume(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.volumes, name)
	return nil
}

func collected(t *testing.T, dir string, files map[string]string) sandbox.Collected {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for name, body := range files {
		_ = tw.WriteHeader(&tar.Header{Name: dir + "/" + name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	var out bytes.Buffer
	man, err := firewall.Filter(context.Background(), &raw, &out, firewall.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	return sandbox.Collected{Archive: out.Bytes(), Manifest: man}
}

func TestFunctionTaskOneContainerPerGrade(t *testing.T) {
	tk := loadExample(t, "sum")
	n := len(tk.Cases.Cases)
	fake := newFake(func(s sandbox.Spec) (*sandbox.Result, error) {
		var stdout strings.Builder
		stdout.WriteString("noise without a tab\n-1\t{}\n01\t{}\n")
		for i := 0; i < n-1; i++ { // the last case records nothing
			fmt.Fprintf(&stdout, "%d\t{\"ok\":true,\"value\":1}\n", i)
		}
		stdout.WriteString("0\t{\"ok\":true,\"value\":2}\n") // a second line for case 0 loses
		return &sandbox.Result{Exit: sandbox.ExitExited, ImageID: "sha256:img", Duration: time.Second, Stdout: []byte(stdout.String())}, nil
	})
	out, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r1", Image: "sha256:img", Artifacts: artifact(t), Nonce: "n1"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.runs) != 1 || out.Containers != 1 {
		t.Fatalf("%d runs for a per-grade function task", len(fake.runs))
	}
	s := fake.runs[0]
	if want := time.Duration(n)*tk.Spec.Limits.CaseTime() + 5*time.Second; s.Limits.Wall != want {
		t.Errorf("wall %v, want %v", s.Limits.Wall, want)
	}
	if s.Cmd[0] != "python3" || s.Cmd[1] != "-I" {
		t.Errorf("shim command %v is not an isolated interpreter", s.Cmd)
	}
	for _, m := range s.Mounts {
		if (m.Target == ArtifactsDir || m.Target == InputsDir) != m.ReadOnly {
			t.Errorf("mount %s read-only=%v", m.Target, m.ReadOnly)
		}
	}
	for vol, files := range fake.loaded {
		for _, f := range files {
			if strings.Contains(f, "expected") || f == "hidden/cases.json" {
				t.Errorf("%s loaded into %s", f, vol)
			}
		}
	}
	out.Wait()
	// Records are numbered by call; the last call recorded nothing.
	order := CallOrder("n1", n)
	if got := out.Cases[order[n-1]].Files; got != nil {
		t.Errorf("the last call's case has files %v", got)
	}
	if string(out.Cases[order[0]].Files["value.json"]) != `{"ok":true,"value":1}` {
		t.Errorf("the first call's value %q", out.Cases[order[0]].Files["value.json"])
	}
	if len(fake.volumes) != 0 {
		t.Errorf("volumes left: %v", fake.volumes)
	}
}

func TestInputsCarryNoExpectedValues(t *testing.T) {
	tk := loadExample(t, "sum")
	var inputs []byte
	fake := newFake(func(s sandbox.Spec) (*sandbox.Result, error) {
		return &sandbox.Result{Exit: sandbox.ExitExited}, nil
	})
	// Capture the cases.json the shim receives by filtering CopyIn input.
	capture := &capturingEngine{fakeEngine: fake, onCopy: func(b []byte) {
		tr := tar.NewReader(bytes.NewReader(b))
		for {
			h, err := tr.Next()
			if err != nil {
				return
			}
			if h.Name == "cases.json" {
				inputs, _ = io.ReadAll(tr)
			}
		}
	}}
	if _, err := Run(t.Context(), capture, forTask(t, tk, Request{Run: "r2", Image: "img", Artifacts: artifact(t), Nonce: "n2"})); err != nil {
		t.Fatal(err)
	}
	if inputs == nil {
		t.Fatal("no inputs were copied")
	}
	if !bytes.Contains(inputs, []byte(`"args"`)) && !bytes.Contains(inputs, []byte(`"cases"`)) {
		t.Fatalf("unexpected inputs document %s", inputs)
	}
	if bytes.Contains(inputs, []byte("expected")) || bytes.Contains(inputs, []byte("1999999999999999999999999999999")) {
		t.Fatal("an expected value reached the candidate's inputs")
	}
}

type capturingEngine struct {
	*fakeEngine
	onCopy func([]byte)
}

func (c *capturingEngine) NewVolumeWith(ctx context.Context, run, phase string, archive io.Reader, opts sandbox.CopyInOptions) (string, *firewall.Manifest, error) {
	b, err := io.ReadAll(archive)
	if err != nil {
		return "", nil, err
	}
	c.onCopy(b)
	return c.fakeEngine.NewVolumeWith(ctx, run, phase, bytes.NewReader(b), opts)
}

func (c *capturingEngine) CopyIn(ctx context.Context, run, vol string, archive io.Reader, opts sandbox.CopyInOptions) (*firewall.Manifest, error) {
	b, err := io.ReadAll(archive)
	if err != nil {
		return nil, err
	}
	c.onCopy(b)
	return c.fakeEngine.CopyIn(ctx, run, vol, bytes.NewReader(b), opts)
}

func TestCommandTaskFreshContainerPerCase(t *testing.T) {
	tk := loadExample(t, "wordfreq")
	fake := newFake(func(s sandbox.Spec) (*sandbox.Result, error) {
		return &sandbox.Result{Exit: sandbox.ExitTimeout, Code: 137, Stdout: []byte("x")}, nil
	})
	out, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r3", Image: "img", Artifacts: artifact(t)}))
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.runs) != len(tk.Cases.Cases) {
		t.Fatalf("%d runs for %d cases", len(fake.runs), len(tk.Cases.Cases))
	}
	for i, s := range fake.runs {
		stdin, _ := io.ReadAll(s.Stdin)
		if string(stdin) != tk.Cases.Cases[i].Stdin || s.Cmd[0] != ArtifactsDir+"/solution" {
			t.Errorf("case %d: stdin %q cmd %v", i, stdin, s.Cmd)
		}
		if !s.Limits.KillOnOutputLimit {
			t.Errorf("case %d: output cap does not kill", i)
		}
	}
	if out.Cases[0].Record.Exit != schema.ExitTimeout {
		t.Errorf("timeout reported as %s", out.Cases[0].Record.Exit)
	}
}

func TestRefusedOutputIsTheCandidatesFault(t *testing.T) {
	tk := loadExample(t, "csvstats")
	// The name and the link target are the candidate's: they may carry
	// hidden input.
	refusal := &firewall.RejectError{Entry: "output/secret-input-derived.csv", Err: firewall.ErrSymlink, Reason: `symbolic link to "/hidden/secret"`}
	fake := newFake(func(s sandbox.Spec) (*sandbox.Result, error) {
		return nil, fmt.Errorf("%w: /output: %w", sandbox.ErrCollect, refusal)
	})
	out, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r4", Image: "img", Artifacts: artifact(t)}))
	if err != nil {
		t.Fatalf("a refused output became an infrastructure error: %v", err)
	}
	c := out.Cases[0]
	if want := "output rejected: firewall: symlink: an output entry is a symbolic link"; c.Record.Refused != want {
		t.Errorf("case error %q, want %q", c.Record.Refused, want)
	}
	if strings.Contains(c.Record.Refused, "secret") {
		t.Errorf("case error %q quotes a candidate-chosen name", c.Record.Refused)
	}
	var rej *firewall.RejectError
	if !errors.As(c.Rejection, &rej) || rej.Entry != refusal.Entry {
		t.Errorf("the typed rejection is gone: %v", c.Rejection)
	}
	// A daemon failure, by contrast, stops the phase.
	fake = newFake(func(s sandbox.Spec) (*sandbox.Result, error) { return nil, errors.New("daemon gone") })
	if _, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r5", Image: "img", Artifacts: artifact(t)})); err == nil {
		t.Fatal("a daemon failure was swallowed")
	}
	if len(fake.volumes) != 0 {
		t.Errorf("volumes left after failure: %v", fake.volumes)
	}
}

func artifact(t *testing.T) []byte {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	body := "def solve(n):\n    return 0\n"
	_ = tw.WriteHeader(&tar.Header{Name: "solution.py", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	var out bytes.Buffer
	if _, err := firewall.Filter(context.Background(), &raw, &out, firewall.Policy{}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestOutputRejectionNeverQuotesNames(t *testing.T) {
	const name = "output/c4ndid4te-ch0sen"
	for sentinel := range rejected {
		err := fmt.Errorf("%w: /output: %w", sandbox.ErrCollect,
			&firewall.RejectError{Entry: name, Err: sentinel, Reason: "about " + strconv.Quote(name)})
		got := outputRejection(err)
		if strings.Contains(got, "c4ndid4te") || !strings.HasPrefix(got, "output rejected: "+sentinel.Error()+": ") {
			t.Errorf("%v: %q", sentinel, got)
		}
	}
	if got := outputRejection(sandbox.ErrCollect); strings.Contains(got, "firewall") {
		t.Errorf("a refusal without a firewall class: %q", got)
	}
}

func TestDataTaskOutputIsAQuota(t *testing.T) {
	tk := loadExample(t, "csvstats")
	fake := newFake(func(s sandbox.Spec) (*sandbox.Result, error) {
		return &sandbox.Result{Exit: sandbox.ExitExited, Collected: map[string]sandbox.Collected{
			OutputDir: collected(t, "output", map[string]string{"stats.json": "{}"}),
		}}, nil
	})
	out, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r6", Image: "img", Artifacts: artifact(t)}))
	if err != nil {
		t.Fatal(err)
	}
	out.Wait()
	for i, s := range fake.runs {
		so := s.StreamOut
		if so == nil || so.Dir != OutputDir || so.Bytes != tk.Spec.Limits.OutputBytes || so.Inodes != outputInodes {
			t.Errorf("case %d: stream-out %+v", i, so)
		}
		for _, m := range s.Mounts {
			if !m.ReadOnly {
				t.Errorf("case %d: writable volume at %s", i, m.Target)
			}
		}
		if len(s.Collect) != 0 {
			t.Errorf("case %d: collects %v from a volume", i, s.Collect)
		}
	}
	if got := string(out.Cases[0].Files["stats.json"]); got != "{}" {
		t.Errorf("collected output %q", got)
	}
	if len(fake.volumes) != 0 {
		t.Errorf("volumes left: %v", fake.volumes)
	}
}

func TestCallOrder(t *testing.T) {
	// The documented construction, pinned (the value was computed by a
	// separate implementation of CallOrder's description): changing it
	// changes which order a recorded nonce stands for.
	if got, want := CallOrder("pinned", 10), []int{0, 4, 5, 3, 7, 9, 2, 8, 1, 6}; !slices.Equal(got, want) {
		t.Errorf("CallOrder(\"pinned\", 10) = %v, want %v", got, want)
	}
	for _, n := range []int{0, 1, 2, 7, 100} {
		a := CallOrder("nonce-a", n)
		if !slices.Equal(a, CallOrder("nonce-a", n)) {
			t.Errorf("n=%d: two orders for one nonce", n)
		}
		sorted := slices.Sorted(slices.Values(a))
		for i, v := range sorted {
			if v != i {
				t.Fatalf("n=%d: %v is not a permutation", n, a)
			}
		}
	}
	// Different nonces give different orders: over many nonces, every
	// position sees every case.
	const n = 6
	seen := [n][n]bool{}
	distinct := map[string]bool{}
	for i := range 200 {
		o := CallOrder(fmt.Sprintf("nonce-%d", i), n)
		distinct[fmt.Sprint(o)] = true
		for pos, c := range o {
			seen[pos][c] = true
		}
	}
	for pos := range n {
		for c := range n {
			if !seen[pos][c] {
				t.Errorf("case %d never came at call %d in 200 grades", c, pos)
			}
		}
	}
	if len(distinct) < 150 {
		t.Errorf("200 nonces gave only %d distinct orders of 6 cases", len(distinct))
	}
}

func TestFunctionTaskCallsInNonceOrder(t *testing.T) {
	tk := loadExample(t, "sum")
	n := len(tk.Cases.Cases)
	var spec []byte
	fake := newFake(func(s sandbox.Spec) (*sandbox.Result, error) {
		// The shim numbers records by call: answer each call with its
		// position.
		var stdout strings.Builder
		for j := range n {
			fmt.Fprintf(&stdout, "%d\t{\"ok\":true,\"value\":%d}\n", j, j)
		}
		return &sandbox.Result{Exit: sandbox.ExitExited, Stdout: []byte(stdout.String())}, nil
	})
	capture := &capturingEngine{fakeEngine: fake, onCopy: func(b []byte) {
		tr := tar.NewReader(bytes.NewReader(b))
		for h, err := tr.Next(); err == nil; h, err = tr.Next() {
			if h.Name == "cases.json" {
				spec, _ = io.ReadAll(tr)
			}
		}
	}}
	const nonce = "grade-nonce"
	out, err := Run(t.Context(), capture, forTask(t, tk, Request{Run: "r7", Image: "img", Artifacts: artifact(t), Nonce: nonce}))
	if err != nil {
		t.Fatal(err)
	}
	out.Wait()
	order := CallOrder(nonce, n)
	if !slices.Equal(out.Order, order) {
		t.Errorf("recorded order %v, want %v", out.Order, order)
	}
	var doc struct {
		Cases []json.RawMessage `json:"cases"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil || len(doc.Cases) != n {
		t.Fatalf("cases.json %s: %v", spec, err)
	}
	for j, i := range order {
		var args bytes.Buffer
		if err := json.Compact(&args, tk.Cases.Cases[i].Args); err != nil {
			t.Fatal(err)
		}
		if string(doc.Cases[j]) != args.String() {
			t.Errorf("call %d has arguments %s, want case %d's %s", j, doc.Cases[j], i, &args)
		}
		want := fmt.Sprintf(`{"ok":true,"value":%d}`, j)
		if got := string(out.Cases[i].Files["value.json"]); got != want {
			t.Errorf("case %d (call %d) got record %s, want %s", i, j, got, want)
		}
	}
	if bytes.Contains(spec, []byte(`"index"`)) || bytes.Contains(spec, []byte(`"id"`)) {
		t.Errorf("cases.json tells the candidate which case a call is: %s", spec)
	}

	// Without a nonce a shared process cannot be given an order.
	if _, err := Run(t.Context(), newFake(fake.answer), forTask(t, tk, Request{Run: "r8", Image: "img", Artifacts: artifact(t)})); !errors.Is(err, ErrNoNonce) {
		t.Errorf("no nonce: %v, want ErrNoNonce", err)
	}
}

// TestRequestSaysHowToCall: a request without the program of its kind is
// refused before anything is made.
func TestRequestSaysHowToCall(t *testing.T) {
	tests := []struct {
		name string
		req  Request
	}{
		{"no kind", Request{}},
		{"unknown kind", Request{Kind: "script"}},
		{"function without callable", Request{Kind: schema.KindFunction, Command: &Command{Path: "x"}}},
		{"command without path", Request{Kind: schema.KindCommand, Data: &Data{}}},
		{"data without command line", Request{Kind: schema.KindData, Function: &Function{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(func(sandbox.Spec) (*sandbox.Result, error) { return &sandbox.Result{}, nil })
			tt.req.Run, tt.req.Image = "r9", "img"
			if _, err := Run(t.Context(), fake, tt.req); !errors.Is(err, ErrRequest) {
				t.Errorf("err = %v, want ErrRequest", err)
			}
			if fake.seq != 0 || len(fake.runs) != 0 {
				t.Errorf("%d volumes and %d runs for a refused request", fake.seq, len(fake.runs))
			}
		})
	}
}
