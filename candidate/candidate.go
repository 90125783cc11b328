package candidate

import (
	"archive/tar"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

//go:embed shim.py
var shim []byte

// Engine is what the candidate phase needs from the container engine.
type Engine interface {
	NewVolume(ctx context.Context, run, phase string) (string, error)
	NewVolumeWith(ctx context.Context, run, phase string, archive io.Reader, opts engine.CopyInOptions) (string, *firewall.Manifest, error)
	CopyIn(ctx context.Context, run, volume string, archive io.Reader, opts engine.CopyInOptions) (*firewall.Manifest, error)
	Run(ctx context.Context, spec engine.Spec) (*engine.Result, error)
	RemoveVolume(ctx context.Context, name string) error
}

// Request describes one candidate phase.
type Request struct {
	Run   string
	Task  *task.Task
	Image string // runtime image ID
	// Artifacts is the canonical archive of the submission's declared
	// artifacts, as the firewall produced it.
	Artifacts []byte
	// Nonce is the grade's host-issued nonce. A function task whose cases
	// share one process calls them in CallOrder(Nonce, n), so a candidate
	// cannot key its answers to the order of the calls; Run refuses such a
	// task (ErrNoNonce, a failure to grade) when Nonce is empty. The nonce
	// itself never enters a container.
	Nonce string
}

// ErrNoNonce means a Request for a shared-process function task has no
// Nonce to derive the call order from.
var ErrNoNonce = errors.New("candidate: no nonce for the call order")

// Case is what one case produced.
type Case struct {
	Result judge.RunResult
	Stdout []byte
	Stderr []byte
	// Files holds output files by name: value.json for function tasks,
	// the files written under /output for data tasks.
	Files map[string][]byte
	// Rejection is the engine's error behind a refused output (it wraps
	// engine.ErrCollect and, usually, a *firewall.RejectError), kept for
	// logs and tests. It may quote names the candidate chose; the text
	// that goes into Result.Error does not.
	Rejection error
}

// Outputs is what the candidate phase returns.
type Outputs struct {
	Cases []Case
	// Order is the order in which a shared process called the cases
	// (CallOrder of the request's nonce); nil when every case ran in a
	// process of its own.
	Order      []int
	ImageID    string
	Containers int
	Duration   time.Duration
	removed    chan struct{}
}

// Mount points inside the candidate container.
const (
	ArtifactsDir = "/artifacts"
	InputsDir    = "/inputs" // function tasks: shim and arguments
	InputDir     = "/input"  // data tasks: the case's input files
	OutputDir    = "/output" // data tasks: the candidate's output files
)

// env is the complete environment of a candidate process.
var env = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"LANG=C.UTF-8",
	"LC_ALL=C.UTF-8",
	"TZ=UTC",
	"HOME=/tmp",
	"PYTHONHASHSEED=0",
	"PYTHONDONTWRITEBYTECODE=1",
}

// ioPolicy bounds what crosses into and out of candidate containers.
func ioPolicy(l task.Limits) firewall.Policy {
	return firewall.Policy{MaxTotalBytes: max(l.ArtifactBytes, l.OutputBytes), MaxFileBytes: max(l.ArtifactBytes, l.OutputBytes)}
}

// Run executes every case of the task against the artifacts. An error means
// the phase could not run (engine failure, cancellation); everything the
// candidate did, including crashing or timing out, is reported in Outputs.
func Run(ctx context.Context, eng Engine, req Request) (out *Outputs, err error) {
	start := time.Now()
	t := req.Task
	vols := &volumes{eng: eng, ctx: ctx, run: req.Run}
	defer func() {
		if err != nil {
			vols.removeAll()
			return
		}
		// The volumes are no longer needed: remove them while the caller
		// goes on (Outputs.Wait waits for it).
		done := make(chan struct{})
		out.removed = done
		go func() {
			defer close(done)
			vols.removeAll()
		}()
	}()
	pol := ioPolicy(t.Spec.Limits)
	// The artifacts volume is made while the first case's volumes are.
	artifacts := startFuture(func() (string, error) {
		name, err := vols.with("artifacts", req.Artifacts, pol)
		if err != nil {
			return "", fmt.Errorf("candidate: load artifacts: %w", err)
		}
		return name, nil
	})
	defer artifacts.wait()
	out = &Outputs{Cases: make([]Case, len(t.Cases.Cases))}
	base := engine.Spec{
		Run: req.Run, Phase: "candidate", Image: req.Image, Env: env, WorkDir: ArtifactsDir,
		Limits: caseLimits(t.Spec.Limits),
	}
	withArtifacts := func(s engine.Spec) (engine.Spec, error) {
		name, err := artifacts.wait()
		if err != nil {
			return s, err
		}
		s.Mounts = append([]engine.Mount{{Volume: name, Target: ArtifactsDir, ReadOnly: true}}, s.Mounts...)
		return s, nil
	}
	switch t.Spec.Kind {
	case schema.KindFunction:
		err = runFunction(ctx, eng, req, base, withArtifacts, vols, out)
	case schema.KindCommand:
		err = runCommand(ctx, eng, req, base, withArtifacts, out)
	case schema.KindData:
		err = runData(ctx, eng, req, base, withArtifacts, vols, out)
	default:
		err = fmt.Errorf("candidate: unsupported task kind %q", t.Spec.Kind)
	}
	if err != nil {
		return nil, err
	}
	out.Duration = time.Since(start)
	return out, nil
}

// Wait blocks until the phase's volumes are removed. Call it before
// reporting the grade finished.
func (o *Outputs) Wait() {
	if o != nil && o.removed != nil {
		<-o.removed
	}
}

// future is a value computed on its own goroutine.
type future struct {
	done chan struct{}
	val  string
	err  error
}

func startFuture(f func() (string, error)) *future {
	fu := &future{done: make(chan struct{})}
	go func() {
		defer close(fu.done)
		fu.val, fu.err = f()
	}()
	return fu
}

func (f *future) wait() (string, error) {
	<-f.done
	return f.val, f.err
}

func caseLimits(l task.Limits) engine.Limits {
	return engine.Limits{
		Wall:              l.CaseTime(),
		MemoryBytes:       l.MemoryMB << 20,
		PIDs:              l.PIDs,
		StdoutBytes:       l.OutputBytes,
		StderrBytes:       64 << 10,
		FileBytes:         max(l.OutputBytes, 1<<20),
		TmpfsBytes:        32 << 20,
		KillOnOutputLimit: true,
	}
}

// runResult turns an engine result into the judge's view of it.
func runResult(r *engine.Result) judge.RunResult {
	rr := judge.RunResult{
		ExitCode: r.Code, DurationMS: r.Duration.Milliseconds(),
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
	}
	switch r.Exit {
	case engine.ExitTimeout:
		rr.Exit = schema.ExitTimeout
	case engine.ExitOOM:
		rr.Exit = schema.ExitOOM
	case engine.ExitOutputLimit:
		rr.Exit = schema.ExitOutputLimit
	default:
		rr.Exit = schema.ExitExited
	}
	return rr
}

// volumes creates the phase's volumes and removes them all, concurrently,
// on the way out.
type volumes struct {
	eng   Engine
	ctx   context.Context
	run   string
	mu    sync.Mutex
	names []string
}

func (v *volumes) add(name string) {
	v.mu.Lock()
	v.names = append(v.names, name)
	v.mu.Unlock()
}

func (v *volumes) with(phase string, archive []byte, pol firewall.Policy) (string, error) {
	name, _, err := v.eng.NewVolumeWith(v.ctx, v.run, phase, bytes.NewReader(archive), engine.CopyInOptions{Policy: pol})
	if err == nil {
		v.add(name)
	}
	return name, err
}

func (v *volumes) removeAll() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(v.ctx), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, name := range v.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = v.eng.RemoveVolume(ctx, name)
		}()
	}
	wg.Wait()
}

// tarFiles builds a small archive of named files for CopyIn.
func tarFiles(files map[string][]byte, order []string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range order {
		data := files[name]
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX})
		_, _ = tw.Write(data)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// filesUnder reads a canonical collected archive and returns its regular
// files below prefix (the collected directory's base name), by the rest of
// their path.
func filesUnder(archive []byte, prefix string) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name, ok := strings.CutPrefix(h.Name, prefix+"/")
		if !ok {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[name] = data
	}
}

func runFunction(ctx context.Context, eng Engine, req Request, base engine.Spec, withArtifacts func(engine.Spec) (engine.Spec, error), vols *volumes, out *Outputs) error {
	t := req.Task
	groups := [][]int{}
	if t.Spec.Isolation == task.PerCase {
		for i := range t.Cases.Cases {
			groups = append(groups, []int{i})
		}
	} else {
		if req.Nonce == "" {
			return ErrNoNonce
		}
		out.Order = callOrder(req.Nonce, len(t.Cases.Cases))
		groups = append(groups, out.Order)
	}
	// The shim sees a group's cases in call order and numbers its records
	// by position in that order; only the host maps a position back to
	// the case. An index of the task's own order inside the container
	// would let the candidate undo the shuffle (from cases.json, or from
	// the shim's frame).
	for _, group := range groups {
		args := make([]json.RawMessage, len(group))
		for j, i := range group {
			args[j] = t.Cases.Cases[i].Args
		}
		spec, err := json.Marshal(map[string]any{
			"module": t.Spec.Function.Module, "name": t.Spec.Function.Name,
			"case_seconds": t.Spec.Limits.CaseSeconds, "cases": args,
		})
		if err != nil {
			return err
		}
		files := map[string][]byte{"shim.py": shim, "cases.json": spec}
		inputs, err := vols.with("inputs", tarFiles(files, []string{"cases.json", "shim.py"}), firewall.Policy{})
		if err != nil {
			return fmt.Errorf("candidate: prepare inputs: %w", err)
		}
		s, err := withArtifacts(base)
		if err != nil {
			return err
		}
		s.Mounts = append(s.Mounts, engine.Mount{Volume: inputs, Target: InputsDir, ReadOnly: true})
		s.Cmd = []string{"python3", "-I", InputsDir + "/shim.py"}
		// One container for the group: the shim enforces the per-case
		// limit, the wall clock covers them all plus interpreter start.
		s.Limits.Wall = min(time.Duration(len(group))*t.Spec.Limits.CaseTime()+5*time.Second, engine.MaxLimits.Wall)
		res, err := eng.Run(ctx, s)
		if err != nil {
			return err
		}
		out.Containers++
		out.ImageID = res.ImageID
		records := splitRecords(res.Stdout, len(group))
		rr := runResult(res)
		for j, i := range group { // the j-th call was case i
			c := Case{Result: rr, Stderr: res.Stderr}
			if v, ok := records[j]; ok {
				c.Files = map[string][]byte{"value.json": v}
			}
			out.Cases[i] = c
		}
	}
	return nil
}

// splitRecords reads the shim's output: one line per case, "<index>\t<record>".
// The bytes are the candidate's to shape, so nothing here trusts them: a
// line that does not parse is ignored, the first line for an index wins,
// and the judge parses each record strictly. A case without a line has
// no result.
func splitRecords(stdout []byte, n int) map[int][]byte {
	records := map[int][]byte{}
	for _, line := range bytes.Split(stdout, []byte{'\n'}) {
		idx, rec, ok := bytes.Cut(line, []byte{'\t'})
		if !ok || len(idx) == 0 || len(idx) > 9 {
			continue
		}
		i, err := strconv.Atoi(string(idx))
		if err != nil || i < 0 || i >= n || string(idx) != strconv.Itoa(i) {
			continue
		}
		if _, seen := records[i]; !seen {
			records[i] = bytes.Clone(rec)
		}
	}
	return records
}

func runCommand(ctx context.Context, eng Engine, req Request, base engine.Spec, withArtifacts func(engine.Spec) (engine.Spec, error), out *Outputs) error {
	t := req.Task
	for i, c := range t.Cases.Cases {
		s, err := withArtifacts(base)
		if err != nil {
			return err
		}
		s.Cmd = append([]string{ArtifactsDir + "/" + t.Spec.Command.Path}, c.Argv...)
		s.Stdin = []byte(c.Stdin)
		res, err := eng.Run(ctx, s)
		if err != nil {
			return err
		}
		out.Containers++
		out.ImageID = res.ImageID
		out.Cases[i] = Case{Result: runResult(res), Stdout: res.Stdout, Stderr: res.Stderr}
	}
	return nil
}

func runData(ctx context.Context, eng Engine, req Request, base engine.Spec, withArtifacts func(engine.Spec) (engine.Spec, error), vols *volumes, out *Outputs) error {
	t := req.Task
	for i, c := range t.Cases.Cases {
		files := map[string][]byte{}
		var order []string
		for name, rel := range c.InputFiles {
			data, err := t.HiddenFile(rel)
			if err != nil {
				return fmt.Errorf("candidate: case %s input %s: %w", c.ID, name, err)
			}
			files[name] = data
			order = append(order, name)
		}
		slices.Sort(order)
		inputs, err := vols.with("input", tarFiles(files, order), ioPolicy(t.Spec.Limits))
		if err != nil {
			return fmt.Errorf("candidate: prepare volumes: %w", err)
		}
		s, err := withArtifacts(base)
		if err != nil {
			return err
		}
		s.Mounts = append(s.Mounts, engine.Mount{Volume: inputs, Target: InputDir, ReadOnly: true})
		s.Cmd = append([]string(nil), t.Spec.Data.Argv...)
		s.StreamOut = outputQuota(t.Spec.Limits)
		s.CollectPolicy = outputPolicy(t.Spec.Limits)
		res, err := eng.Run(ctx, s)
		out.Containers++
		if err != nil {
			if errors.Is(err, engine.ErrCollect) {
				out.Cases[i] = Case{Result: judge.RunResult{Exit: schema.ExitExited, Error: outputRejection(err)}, Rejection: err}
				continue
			}
			return err
		}
		out.ImageID = res.ImageID
		got, err := filesUnder(res.Collected[OutputDir].Archive, "output")
		if err != nil {
			return fmt.Errorf("candidate: read collected outputs: %w", err)
		}
		out.Cases[i] = Case{Result: runResult(res), Stdout: res.Stdout, Stderr: res.Stderr, Files: got}
	}
	return nil
}
