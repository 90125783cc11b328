package strict_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/strict"
	"github.com/strictgrade/strictgrade/task"
)

// copySource is a data task's solution; the fake runs copyProgram wherever
// a submission holds this text.
const copySource = "import shutil\nshutil.copy('/input/in.txt', '/output/out.txt')\n"

func copyProgram(p *sandboxtest.Proc) int {
	data, err := p.ReadFile("/input/in.txt")
	if err == nil {
		err = p.WriteFile("/output/out.txt", data, 0o644)
	}
	if err != nil {
		p.Errorf("%v", err)
		return 1
	}
	return 0
}

// setup lays out a data task and a workspace with its solution, and an
// in-process backend holding a runtime and a judge image.
func setup() (tk *task.Task, workspace string, fake *sandboxtest.Fake, cleanup func(), err error) {
	root, err := os.MkdirTemp("", "strict-example-")
	if err != nil {
		return nil, "", nil, nil, err
	}
	cleanup = func() { os.RemoveAll(root) }
	files := map[string]string{
		"task/task.json": `{"schema":"strictgrade.task/v1","id":"copy","version":"1","kind":"data","runtime":"python",
			"data":{"argv":["python3","solution.py"]},"artifacts":["solution.py"]}`,
		"task/public/README.md":  "copy /input/in.txt to /output/out.txt\n",
		"task/hidden/cases.json": `{"cases":[{"id":"a","input_files":{"in.txt":"in/a.txt"},"expected_files":{"out.txt":"want/a.txt"}}]}`,
		"task/hidden/in/a.txt":   "x\n",
		"task/hidden/want/a.txt": "x\n",
		"work/solution.py":       copySource,
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, "", nil, cleanup, err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return nil, "", nil, cleanup, err
		}
	}
	tk, err = task.Load(context.Background(), filepath.Join(root, "task"))
	if err != nil {
		return nil, "", nil, cleanup, err
	}
	fake = sandboxtest.NewFake()
	fake.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(map[string]sandboxtest.Python{copySource: {Main: copyProgram}}))
	fake.Image(sandboxtest.JudgeImage, sandboxtest.Judge)
	return tk, filepath.Join(root, "work"), fake, cleanup, nil
}

// Example runs the strict pipeline alone, as a harness that signs its
// verdicts elsewhere would: images by ID, a workspace, an unsigned verdict.
func Example() {
	ctx := context.Background()
	tk, workspace, backend, cleanup, err := setup()
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	runtimeID, _ := backend.ImageID(ctx, sandboxtest.RuntimeImage)
	judgeID, _ := backend.ImageID(ctx, sandboxtest.JudgeImage)
	out, err := strict.Grade(ctx, backend, strict.Request{
		Task: tk, Dir: workspace, Image: runtimeID, JudgeImage: judgeID,
		Header: grading.Header{Nonce: schema.NewNonce()},
	})
	switch {
	case errors.Is(err, grading.ErrBadRequest):
		fmt.Println("bad request:", err)
	case err != nil:
		fmt.Println("could not grade:", out.Verdict.Reason)
	default:
		fmt.Println(out.Verdict.Tier, out.Verdict.Outcome, len(out.Verdict.Cases), "case")
	}
	// Output: strict PASS 1 case
}

// TestGradeContract: a wrong request is refused with no outcome, and a
// grade's verdict is bound to the bytes it returns.
func TestGradeContract(t *testing.T) {
	ctx := t.Context()
	tk, workspace, backend, cleanup, err := setup()
	if cleanup != nil {
		t.Cleanup(cleanup)
	}
	if err != nil {
		t.Fatal(err)
	}
	runtimeID, _ := backend.ImageID(ctx, sandboxtest.RuntimeImage)
	judgeID, _ := backend.ImageID(ctx, sandboxtest.JudgeImage)
	good := strict.Request{Task: tk, Dir: workspace, Image: runtimeID, JudgeImage: judgeID}
	for name, edit := range map[string]func(r *strict.Request){
		"no task":             func(r *strict.Request) { r.Task = nil },
		"no image":            func(r *strict.Request) { r.Image = "" },
		"no judge image":      func(r *strict.Request) { r.JudgeImage = "" },
		"both dir and stream": func(r *strict.Request) { r.Archive = strings.NewReader("") },
		"no submission":       func(r *strict.Request) { r.Dir = "" },
		"a bad nonce":         func(r *strict.Request) { r.Nonce = "short" },
		"a bad run id":        func(r *strict.Request) { r.Run = "Run/1" },
		"a bad disclosure":    func(r *strict.Request) { r.Disclosure = "everything" },
	} {
		req := good
		edit(&req)
		if out, err := strict.Grade(ctx, backend, req); out != nil || !errors.Is(err, grading.ErrBadRequest) {
			t.Errorf("%s: %v, %v", name, out, err)
		}
	}
	if out, err := strict.Grade(ctx, nil, good); out != nil || !errors.Is(err, grading.ErrBadRequest) {
		t.Errorf("nil backend: %v, %v", out, err)
	}

	var events int
	req := good
	req.Run, req.Progress = "r-contract", func(grading.Event) { events++ }
	out, err := strict.Grade(ctx, backend, req)
	if err != nil {
		t.Fatal(err)
	}
	v := out.Verdict
	if v.Outcome != schema.OutcomePass || v.RunID != "r-contract" || events == 0 || events != len(out.Log) {
		t.Fatalf("%s run %q, %d events reported, %d logged", v.Outcome, v.RunID, events, len(out.Log))
	}
	if v.Submission.SHA256 != sha256Hex(out.Archive) || v.Images.Candidate != runtimeID || v.Images.Judge != judgeID {
		t.Fatalf("the verdict is not bound to what was graded: %+v %+v", v.Submission, v.Images)
	}
	if _, err := schema.Marshal(v); err != nil {
		t.Fatal(err)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// snapshotBackend is a backend whose workloads see a volume as it was when
// Run began, as on Kubernetes: it hides the fake's LiveVolumes (and its
// pool), and reports a copy into a volume a running sandbox mounts.
type snapshotBackend struct {
	sandbox.Backend
	mu     sync.Mutex
	frozen map[string]bool
	late   []string
}

func (b *snapshotBackend) Prepare(ctx context.Context, spec sandbox.Spec) (sandbox.Prepared, error) {
	p, err := b.Backend.Prepare(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &snapshotPrepared{Prepared: p, b: b, spec: spec}, nil
}

func (b *snapshotBackend) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	p, err := b.Prepare(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer p.Close(context.WithoutCancel(ctx))
	return p.Run(ctx)
}

func (b *snapshotBackend) CopyIn(ctx context.Context, run, vol string, archive io.Reader, opts sandbox.CopyInOptions) (*firewall.Manifest, error) {
	// A Run already asked for on another goroutine gets the time to
	// begin: a copy that races it is then seen as late. (With the
	// ordering right there is no such Run, and the pause changes
	// nothing.)
	time.Sleep(20 * time.Millisecond)
	b.mu.Lock()
	if b.frozen[vol] {
		b.late = append(b.late, vol)
	}
	b.mu.Unlock()
	return b.Backend.CopyIn(ctx, run, vol, archive, opts)
}

type snapshotPrepared struct {
	sandbox.Prepared
	b    *snapshotBackend
	spec sandbox.Spec
}

func (p *snapshotPrepared) Run(ctx context.Context) (*sandbox.Result, error) {
	p.b.mu.Lock()
	for _, m := range p.spec.Mounts {
		p.b.frozen[m.Volume] = true
	}
	p.b.mu.Unlock()
	return p.Prepared.Run(ctx)
}

// TestJudgeWaitsForItsVolume: on a backend without live volumes the judge
// starts only once the candidate's outputs are in its volume, and passes
// the honest submission.
func TestJudgeWaitsForItsVolume(t *testing.T) {
	ctx := t.Context()
	tk, workspace, fake, cleanup, err := setup()
	if cleanup != nil {
		t.Cleanup(cleanup)
	}
	if err != nil {
		t.Fatal(err)
	}
	b := &snapshotBackend{Backend: fake, frozen: map[string]bool{}}
	if _, ok := sandbox.Backend(b).(sandbox.LiveVolumes); ok {
		t.Fatal("the wrapper still has live volumes")
	}
	runtimeID, _ := b.ImageID(ctx, sandboxtest.RuntimeImage)
	judgeID, _ := b.ImageID(ctx, sandboxtest.JudgeImage)
	out, err := strict.Grade(ctx, b, strict.Request{Task: tk, Dir: workspace, Image: runtimeID, JudgeImage: judgeID,
		Header: grading.Header{Nonce: schema.NewNonce()}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict.Outcome != schema.OutcomePass || len(b.late) != 0 {
		t.Fatalf("%s (%s); copied into running sandboxes' volumes: %v", out.Verdict.Outcome, out.Verdict.Reason, b.late)
	}
}
