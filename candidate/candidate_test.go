package candidate

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// fakeEngine records what the candidate phase asks of the engine and
// answers each Run with a scripted result.
type fakeEngine struct {
	mu      sync.Mutex
	volumes map[string]bool
	loaded  map[string][]string // volume → file names copied in
	runs    []engine.Spec
	answer  func(s engine.Spec) (*engine.Result, error)
	seq     int
}

func newFake(answer func(engine.Spec) (*engine.Result, error)) *fakeEngine {
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

func (f *fakeEngine) CopyIn(ctx context.Context, run, vol string, archive io.Reader, opts engine.CopyInOptions) (*firewall.Manifest, error) {
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

func (f *fakeEngine) NewVolumeWith(ctx context.Context, run, phase string, archive io.Reader, opts engine.CopyInOptions) (string, *firewall.Manifest, error) {
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

func (f *fakeEngine) Run(ctx context.Context, s engine.Spec) (*engine.Result, error) {
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

func collected(t *testing.T, dir string, files map[string]string) engine.Collected {
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
	return engine.Collected{Archive: out.Bytes(), Manifest: man}
}

func loadExample(t *testing.T, name string) *task.Task {
	t.Helper()
	tk, err := task.Load(t.Context(), filepath.Join("..", "examples", name, "task"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestFunctionTaskOneContainerPerGrade(t *testing.T) {
	tk := loadExample(t, "sum")
	n := len(tk.Cases.Cases)
	fake := newFake(func(s engine.Spec) (*engine.Result, error) {
		var stdout strings.Builder
		stdout.WriteString("noise without a tab\n-1\t{}\n01\t{}\n")
		for i := 0; i < n-1; i++ { // the last case records nothing
			fmt.Fprintf(&stdout, "%d\t{\"ok\":true,\"value\":1}\n", i)
		}
		stdout.WriteString("0\t{\"ok\":true,\"value\":2}\n") // a second line for case 0 loses
		return &engine.Result{Exit: engine.ExitExited, ImageID: "sha256:img", Duration: time.Second, Stdout: []byte(stdout.String())}, nil
	})
	out, err := Run(t.Context(), fake, Request{Run: "r1", Task: tk, Image: "sha256:img", Artifacts: artifact(t), Nonce: "n1"})
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
	fake := newFake(func(s engine.Spec) (*engine.Result, error) {
		return &engine.Result{Exit: engine.ExitExited}, nil
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
	if _, err := Run(t.Context(), capture, Request{Run: "r2", Task: tk, Image: "img", Artifacts: artifact(t), Nonce: "n2"}); err != nil {
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

func (c *capturingEngine) NewVolumeWith(ctx context.Context, run, phase string, archive io.Reader, opts engine.CopyInOptions) (string, *firewall.Manifest, error) {
	b, err := io.ReadAll(archive)
	if err != nil {
		return "", nil, err
	}
	c.onCopy(b)
	return c.fakeEngine.NewVolumeWith(ctx, run, phase, bytes.NewReader(b), opts)
}

func (c *capturingEngine) CopyIn(ctx context.Context, run, vol string, archive io.Reader, opts engine.CopyInOptions) (*firewall.Manifest, error) {
	b, err := io.ReadAll(archive)
	if err != nil {
		return nil, err
	}
	c.onCopy(b)
	return c.fakeEngine.CopyIn(ctx, run, vol, bytes.NewReader(b), opts)
}

func TestCommandTaskFreshContainerPerCase(t *testing.T) {
	tk := loadExample(t, "wordfreq")
	fake := newFake(func(s engine.Spec) (*engine.Result, error) {
		return &engine.Result{Exit: engine.ExitTimeout, Code: 137, Stdout: []byte("x")}, nil
	})
	out, err := Run(t.Context(), fake, Request{Run: "r3", Task: tk, Image: "img", Artifacts: artifact(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.runs) != len(tk.Cases.Cases) {
		t.Fatalf("%d runs for %d cases", len(fake.runs), len(tk.Cases.Cases))
	}
	for i, s := range fake.runs {
		if string(s.Stdin) != tk.Cases.Cases[i].Stdin || s.Cmd[0] != ArtifactsDir+"/solution" {
			t.Errorf("case %d: stdin %q cmd %v", i, s.Stdin, s.Cmd)
		}
		if !s.Limits.KillOnOutputLimit {
			t.Errorf("case %d: output cap does not kill", i)
		}
	}
	if out.Cases[0].Result.Exit != schema.ExitTimeout {
		t.Errorf("timeout reported as %s", out.Cases[0].Result.Exit)
	}
}

func TestRefusedOutputIsTheCandidatesFault(t *testing.T) {
	tk := loadExample(t, "csvstats")
	// The name and the link target are the candidate's: they may carry
	// hidden input.
	refusal := &firewall.RejectError{Entry: "output/secret-input-derived.csv", Err: firewall.ErrSymlink, Reason: `symbolic link to "/hidden/secret"`}
	fake := newFake(func(s engine.Spec) (*engine.Result, error) {
		return nil, fmt.Errorf("%w: /output: %w", engine.ErrCollect, refusal)
	})
	out, err := Run(t.Context(), fake, Request{Run: "r4", Task: tk, Image: "img", Artifacts: artifact(t)})
	if err != nil {
		t.Fatalf("a refused output became an infrastructure error: %v", err)
	}
	c := out.Cases[0]
	if want := "output rejected: firewall: symlink: an output entry is a symbolic link"; c.Result.Error != want {
		t.Errorf("case error %q, want %q", c.Result.Error, want)
	}
	if strings.Contains(c.Result.Error, "secret") {
		t.Errorf("case error %q quotes a candidate-chosen name", c.Result.Error)
	}
	var rej *firewall.RejectError
	if !errors.As(c.Rejection, &rej) || rej.Entry != refusal.Entry {
		t.Errorf("the typed rejection is gone: %v", c.Rejection)
	}
	// A daemon failure, by contrast, stops the phase.
	fake = newFake(func(s engine.Spec) (*engine.Result, error) { return nil, errors.New("daemon gone") })
	if _, err := Run(t.Context(), fake, Request{Run: "r5", Task: tk, Image: "img", Artifacts: artifact(t)}); err == nil {
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
		err := fmt.Errorf("%w: /output: %w", engine.ErrCollect,
			&firewall.RejectError{Entry: name, Err: sentinel, Reason: "about " + strconv.Quote(name)})
		got := outputRejection(err)
		if strings.Contains(got, "c4ndid4te") || !strings.HasPrefix(got, "output rejected: "+sentinel.Error()+": ") {
			t.Errorf("%v: %q", sentinel, got)
		}
	}
	if got := outputRejection(engine.ErrCollect); strings.Contains(got, "firewall") {
		t.Errorf("a refusal without a firewall class: %q", got)
	}
}

func TestDataTaskOutputIsAQuota(t *testing.T) {
	tk := loadExample(t, "csvstats")
	fake := newFake(func(s engine.Spec) (*engine.Result, error) {
		return &engine.Result{Exit: engine.ExitExited, Collected: map[string]engine.Collected{
			OutputDir: collected(t, "output", map[string]string{"stats.json": "{}"}),
		}}, nil
	})
	out, err := Run(t.Context(), fake, Request{Run: "r6", Task: tk, Image: "img", Artifacts: artifact(t)})
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
	fake := newFake(func(s engine.Spec) (*engine.Result, error) {
		// The shim numbers records by call: answer each call with its
		// position.
		var stdout strings.Builder
		for j := range n {
			fmt.Fprintf(&stdout, "%d\t{\"ok\":true,\"value\":%d}\n", j, j)
		}
		return &engine.Result{Exit: engine.ExitExited, Stdout: []byte(stdout.String())}, nil
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
	out, err := Run(t.Context(), capture, Request{Run: "r7", Task: tk, Image: "img", Artifacts: artifact(t), Nonce: nonce})
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
	if _, err := Run(t.Context(), newFake(fake.answer), Request{Run: "r8", Task: tk, Image: "img", Artifacts: artifact(t)}); !errors.Is(err, ErrNoNonce) {
		t.Errorf("no nonce: %v, want ErrNoNonce", err)
	}
}
