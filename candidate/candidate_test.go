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
	"sync/atomic"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
)

// newFake returns a fake backend whose runtime image, named by the ID it
// also returns, runs prog for every case container.
func newFake(t *testing.T, prog sandboxtest.Program) (*sandboxtest.Fake, string) {
	t.Helper()
	f := sandboxtest.NewFake()
	t.Cleanup(func() { _ = f.Close() })
	return f, f.Image(sandboxtest.RuntimeImage, prog)
}

// seen is what one case container saw: the spec the phase asked for, its
// standard input, and every file below its mounts, by absolute path.
type seen struct {
	spec  sandbox.Spec
	stdin []byte
	files map[string][]byte
}

// recorder records what every run of its Program sees before the
// scripted candidate runs.
type recorder struct {
	mu   sync.Mutex
	runs []seen
}

// program returns a Program that records its run, then runs candidate
// with the same standard input.
func (r *recorder) program(candidate sandboxtest.Program) sandboxtest.Program {
	return func(p *sandboxtest.Proc) int {
		s := seen{spec: p.Spec(), files: map[string][]byte{}}
		s.stdin, _ = io.ReadAll(p.Stdin)
		p.Stdin = bytes.NewReader(s.stdin)
		for _, m := range s.spec.Mounts {
			readTree(p, m.Target, s.files)
		}
		r.mu.Lock()
		r.runs = append(r.runs, s)
		r.mu.Unlock()
		return candidate(p)
	}
}

// readTree reads every regular file below dir into files.
func readTree(p *sandboxtest.Proc, dir string, files map[string][]byte) {
	names, _ := p.ReadDir(dir)
	for _, n := range names {
		full := dir + "/" + n
		if _, err := p.ReadDir(full); err == nil {
			readTree(p, full, files)
		} else if data, err := p.ReadFile(full); err == nil {
			files[full] = data
		}
	}
}

// noLeftovers fails t when the fake still holds an object of run.
func noLeftovers(t *testing.T, f *sandboxtest.Fake, run string) {
	t.Helper()
	left, err := f.Leftovers(t.Context(), run)
	if err != nil || len(left) != 0 {
		t.Errorf("left after run %s: %v (%v)", run, left, err)
	}
}

func TestFunctionTaskOneContainerPerGrade(t *testing.T) {
	tk := loadExample(t, "sum")
	n := len(tk.Cases.Cases)
	rec := &recorder{}
	fake, img := newFake(t, rec.program(func(p *sandboxtest.Proc) int {
		fmt.Fprint(p.Stdout, "noise without a tab\n-1\t{}\n01\t{}\n")
		for i := 0; i < n-1; i++ { // the last case records nothing
			fmt.Fprintf(p.Stdout, "%d\t{\"ok\":true,\"value\":1}\n", i)
		}
		fmt.Fprint(p.Stdout, "0\t{\"ok\":true,\"value\":2}\n") // a second line for case 0 loses
		return 0
	}))
	out, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r1", Image: img, Artifacts: artifact(t), Nonce: "n1"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.runs) != 1 || out.Containers != 1 {
		t.Fatalf("%d runs for a per-grade function task", len(rec.runs))
	}
	if out.ImageID != img {
		t.Errorf("image %s, want %s", out.ImageID, img)
	}
	s := rec.runs[0].spec
	if want := time.Duration(n)*tk.Spec.Limits.CaseTime() + 2*time.Second; s.Limits.CPU != want || s.Limits.Wall != sandbox.Backstop(want) {
		t.Errorf("cpu %v wall %v, want %v and its backstop", s.Limits.CPU, s.Limits.Wall, want)
	}
	if s.Cmd[0] != "python3" || s.Cmd[1] != "-I" {
		t.Errorf("shim command %v is not an isolated interpreter", s.Cmd)
	}
	for _, m := range s.Mounts {
		if (m.Target == ArtifactsDir || m.Target == InputsDir) != m.ReadOnly {
			t.Errorf("mount %s read-only=%v", m.Target, m.ReadOnly)
		}
	}
	if len(rec.runs[0].files) == 0 {
		t.Fatal("the container saw no files")
	}
	for name := range rec.runs[0].files {
		if strings.Contains(name, "expected") || strings.HasSuffix(name, "hidden/cases.json") {
			t.Errorf("the container saw %s", name)
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
	noLeftovers(t, fake, "r1")
}

func TestInputsCarryNoExpectedValues(t *testing.T) {
	tk := loadExample(t, "sum")
	rec := &recorder{}
	fake, img := newFake(t, rec.program(func(*sandboxtest.Proc) int { return 0 }))
	if _, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r2", Image: img, Artifacts: artifact(t), Nonce: "n2"})); err != nil {
		t.Fatal(err)
	}
	if len(rec.runs) != 1 {
		t.Fatalf("%d runs", len(rec.runs))
	}
	inputs := rec.runs[0].files[InputsDir+"/cases.json"]
	if inputs == nil {
		t.Fatal("the shim has no cases.json")
	}
	if !bytes.Contains(inputs, []byte(`"args"`)) && !bytes.Contains(inputs, []byte(`"cases"`)) {
		t.Fatalf("unexpected inputs document %s", inputs)
	}
	if bytes.Contains(inputs, []byte("expected")) || bytes.Contains(inputs, []byte("1999999999999999999999999999999")) {
		t.Fatal("an expected value reached the candidate's inputs")
	}
}

func TestCommandTaskFreshContainerPerCase(t *testing.T) {
	tk := loadExample(t, "wordfreq")
	// The first case prints and then waits for its wall clock, which
	// kills it; the others exit at once.
	rec := &recorder{}
	var first atomic.Bool
	fake, img := newFake(t, rec.program(func(p *sandboxtest.Proc) int {
		if first.CompareAndSwap(false, true) {
			fmt.Fprint(p.Stdout, "x")
			<-p.Context().Done()
		}
		return 0
	}))
	req := forTask(t, tk, Request{Run: "r3", Image: img, Artifacts: artifact(t)})
	req.Limits.CaseTime = 100 * time.Millisecond // the timed-out case never ends by itself
	out, err := Run(t.Context(), fake, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.runs) != len(tk.Cases.Cases) || out.Containers != len(tk.Cases.Cases) {
		t.Fatalf("%d runs for %d cases", len(rec.runs), len(tk.Cases.Cases))
	}
	for i, r := range rec.runs {
		if string(r.stdin) != tk.Cases.Cases[i].Stdin || r.spec.Cmd[0] != ArtifactsDir+"/solution" {
			t.Errorf("case %d: stdin %q cmd %v", i, r.stdin, r.spec.Cmd)
		}
		if !r.spec.Limits.KillOnOutputLimit {
			t.Errorf("case %d: output cap does not kill", i)
		}
	}
	if out.Cases[0].Record.Exit != schema.ExitTimeout {
		t.Errorf("timeout reported as %s", out.Cases[0].Record.Exit)
	}
	out.Wait()
	noLeftovers(t, fake, "r3")
}

func TestRefusedOutputIsTheCandidatesFault(t *testing.T) {
	tk := loadExample(t, "csvstats")
	// The name and the link target are the candidate's: they may carry
	// hidden input.
	const entry = "output/secret-input-derived.csv"
	fake, img := newFake(t, func(p *sandboxtest.Proc) int {
		if err := p.Symlink("/hidden/secret", "/"+entry); err != nil {
			p.Errorf("%v", err)
			return 1
		}
		return 0
	})
	out, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r4", Image: img, Artifacts: artifact(t)}))
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
	if !errors.As(c.Rejection, &rej) || rej.Entry != entry {
		t.Errorf("the typed rejection is gone: %v", c.Rejection)
	}
	out.Wait()
	noLeftovers(t, fake, "r4")
	// A backend failure (here an image the backend does not have), by
	// contrast, stops the phase, and what it made is gone.
	if _, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r5", Image: "strictgrade/missing", Artifacts: artifact(t)})); err == nil {
		t.Fatal("a backend failure was swallowed")
	}
	noLeftovers(t, fake, "r5")
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
	rec := &recorder{}
	fake, img := newFake(t, rec.program(func(p *sandboxtest.Proc) int {
		if err := p.WriteFile(OutputDir+"/stats.json", []byte("{}"), 0o644); err != nil {
			p.Errorf("%v", err)
			return 1
		}
		return 0
	}))
	out, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r6", Image: img, Artifacts: artifact(t)}))
	if err != nil {
		t.Fatal(err)
	}
	out.Wait()
	if len(rec.runs) != len(tk.Cases.Cases) {
		t.Fatalf("%d runs for %d cases", len(rec.runs), len(tk.Cases.Cases))
	}
	for i, r := range rec.runs {
		s := r.spec
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
	noLeftovers(t, fake, "r6")
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
	rec := &recorder{}
	fake, img := newFake(t, rec.program(func(p *sandboxtest.Proc) int {
		// The shim numbers records by call: answer each call with its
		// position.
		for j := range n {
			fmt.Fprintf(p.Stdout, "%d\t{\"ok\":true,\"value\":%d}\n", j, j)
		}
		return 0
	}))
	const nonce = "grade-nonce"
	out, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r7", Image: img, Artifacts: artifact(t), Nonce: nonce}))
	if err != nil {
		t.Fatal(err)
	}
	out.Wait()
	if len(rec.runs) != 1 {
		t.Fatalf("%d runs", len(rec.runs))
	}
	spec := rec.runs[0].files[InputsDir+"/cases.json"]
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
	if _, err := Run(t.Context(), fake, forTask(t, tk, Request{Run: "r8", Image: img, Artifacts: artifact(t)})); !errors.Is(err, ErrNoNonce) {
		t.Errorf("no nonce: %v, want ErrNoNonce", err)
	}
	noLeftovers(t, fake, "r8")
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
			tt.req.Run, tt.req.Image = "r9", sandboxtest.RuntimeImage
			// No backend: Run must refuse the request before it asks
			// one for anything (a call on nil would panic).
			if _, err := Run(t.Context(), nil, tt.req); !errors.Is(err, ErrRequest) {
				t.Errorf("err = %v, want ErrRequest", err)
			}
		})
	}
}

func TestParallelCasesKeepTheirSlots(t *testing.T) {
	tk := loadExample(t, "wordfreq")
	n := len(tk.Cases.Cases)
	for _, parallel := range []int{0, 1, 3} {
		t.Run(strconv.Itoa(parallel), func(t *testing.T) {
			want := max(parallel, 1)
			var running, peak atomic.Int32
			full := make(chan struct{})
			var once sync.Once
			fake, img := newFake(t, func(p *sandboxtest.Proc) int {
				now := running.Add(1)
				defer running.Add(-1)
				for {
					old := peak.Load()
					if now <= old || peak.CompareAndSwap(old, now) {
						break
					}
				}
				if int(now) == want {
					once.Do(func() { close(full) })
				}
				// The first cases wait until as many run as may, so the
				// peak is reached whatever the scheduler does.
				select {
				case <-full:
				case <-time.After(5 * time.Second):
				}
				in, _ := io.ReadAll(p.Stdin)
				fmt.Fprintf(p.Stdout, "%d:%s", len(in), in)
				return 0
			})
			req := forTask(t, tk, Request{Run: "par", Image: img, Artifacts: artifact(t), Parallel: parallel})
			out, err := Run(t.Context(), fake, req)
			if err != nil {
				t.Fatal(err)
			}
			out.Wait()
			if got := int(peak.Load()); got != want {
				t.Errorf("at most %d containers ran at once, want %d", got, want)
			}
			if out.Containers != n || out.ImageID != img {
				t.Errorf("containers %d (want %d), image %q", out.Containers, n, out.ImageID)
			}
			for i, c := range tk.Cases.Cases {
				if want := fmt.Sprintf("%d:%s", len(c.Stdin), c.Stdin); string(out.Cases[i].Stdout) != want {
					t.Errorf("case %d holds %q, want %q", i, out.Cases[i].Stdout, want)
				}
			}
			noLeftovers(t, fake, "par")
		})
	}
}

func TestParallelCasesStopTogether(t *testing.T) {
	tk := loadExample(t, "wordfreq")
	var started atomic.Int32
	fake, img := newFake(t, func(p *sandboxtest.Proc) int {
		started.Add(1)
		<-p.Context().Done()
		return 0
	})
	ctx, cancel := context.WithCancel(t.Context())
	req := forTask(t, tk, Request{Run: "stop", Image: img, Artifacts: artifact(t), Parallel: 2})
	req.Limits.CaseTime = time.Minute
	go func() {
		for started.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := Run(ctx, fake, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if got := started.Load(); got != 2 {
		t.Errorf("%d cases started after the cancel, want the 2 running then", got)
	}
	noLeftovers(t, fake, "stop")
}

// TestHoldBoundsWhatThePhaseHolds: with Request.Hold and Input.NoStdout
// the phase holds of each case only what its caller reads, each output cut
// to one byte past Hold.Bytes, and records the size of standard output as
// it was.
func TestHoldBoundsWhatThePhaseHolds(t *testing.T) {
	tk := loadExample(t, "wordfreq")
	fake, img := newFake(t, func(p *sandboxtest.Proc) int {
		fmt.Fprint(p.Stdout, "output")
		fmt.Fprint(p.Stderr, "err")
		return 0
	})
	req := forTask(t, tk, Request{Run: "r-hold", Image: img, Artifacts: artifact(t), Parallel: 2})
	req.Hold = Hold{Bytes: 2, NoStderr: true}
	for i := range req.Cases {
		req.Cases[i].NoStdout = i%2 == 1
	}
	out, err := Run(t.Context(), fake, req)
	if err != nil {
		t.Fatal(err)
	}
	out.Wait()
	for i, c := range out.Cases {
		want := "out"
		if i%2 == 1 {
			want = ""
		}
		if string(c.Stdout) != want || c.Stderr != nil || c.Record.StdoutBytes != len("output") {
			t.Errorf("case %d: the phase holds stdout %q (of %d bytes), stderr %q; want %q, none", i, c.Stdout, c.Record.StdoutBytes, c.Stderr, want)
		}
	}
	noLeftovers(t, fake, "r-hold")
}
