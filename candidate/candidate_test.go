package candidate

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
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
	out, err := Run(t.Context(), fake, Request{Run: "r1", Task: tk, Image: "sha256:img", Artifacts: artifact(t)})
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
	if got := out.Cases[n-1].Files; got != nil {
		t.Errorf("the last case has files %v", got)
	}
	if string(out.Cases[0].Files["value.json"]) != `{"ok":true,"value":1}` {
		t.Errorf("case 0 value %q", out.Cases[0].Files["value.json"])
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
	if _, err := Run(t.Context(), capture, Request{Run: "r2", Task: tk, Image: "img", Artifacts: artifact(t)}); err != nil {
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
	fake := newFake(func(s engine.Spec) (*engine.Result, error) {
		return nil, fmt.Errorf("%w: /output: %w", engine.ErrCollect, firewall.ErrSymlink)
	})
	out, err := Run(t.Context(), fake, Request{Run: "r4", Task: tk, Image: "img", Artifacts: artifact(t)})
	if err != nil {
		t.Fatalf("a refused output became an infrastructure error: %v", err)
	}
	if !strings.Contains(out.Cases[0].Result.Error, "output rejected") {
		t.Fatalf("case result %+v", out.Cases[0].Result)
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
