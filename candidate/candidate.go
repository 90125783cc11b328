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
}

// Case is what one case produced.
type Case struct {
	Result judge.RunResult
	Stdout []byte
	Stderr []byte
	// Files holds output files by name: value.json for function tasks,
	// the files written under /output for data tasks.
	Files map[string][]byte
}

// Outputs is what the candidate phase returns.
type Outputs struct {
	Cases      []Case
	ImageID    string
	Containers int
	Duration   time.Duration
}

// Mount points inside the candidate container.
const (
	ArtifactsDir = "/artifacts"
	InputsDir    = "/inputs" // function tasks: shim and arguments
	InputDir     = "/input"  // data tasks: the case's input files
	OutDir       = "/out"    // function tasks: the shim's records
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
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	newVolume := func(phase string) (string, error) {
		v, err := eng.NewVolume(ctx, req.Run, phase)
		if err != nil {
			return "", err
		}
		cleanups = append(cleanups, func() { _ = eng.RemoveVolume(context.WithoutCancel(ctx), v) })
		return v, nil
	}
	artifacts, err := newVolume("artifacts")
	if err != nil {
		return nil, err
	}
	pol := ioPolicy(t.Spec.Limits)
	if _, err := eng.CopyIn(ctx, req.Run, artifacts, bytes.NewReader(req.Artifacts), engine.CopyInOptions{Policy: pol}); err != nil {
		return nil, fmt.Errorf("candidate: load artifacts: %w", err)
	}
	out = &Outputs{Cases: make([]Case, len(t.Cases.Cases))}
	base := engine.Spec{
		Run: req.Run, Phase: "candidate", Image: req.Image, Env: env, WorkDir: ArtifactsDir,
		Mounts: []engine.Mount{{Volume: artifacts, Target: ArtifactsDir, ReadOnly: true}},
		Limits: caseLimits(t.Spec.Limits),
	}
	switch t.Spec.Kind {
	case schema.KindFunction:
		err = runFunction(ctx, eng, req, base, newVolume, out)
	case schema.KindCommand:
		err = runCommand(ctx, eng, req, base, out)
	case schema.KindData:
		err = runData(ctx, eng, req, base, newVolume, out)
	default:
		err = fmt.Errorf("candidate: unsupported task kind %q", t.Spec.Kind)
	}
	if err != nil {
		return nil, err
	}
	out.Duration = time.Since(start)
	return out, nil
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

func runFunction(ctx context.Context, eng Engine, req Request, base engine.Spec, newVolume func(string) (string, error), out *Outputs) error {
	t := req.Task
	perCase := t.Spec.Isolation == task.PerCase
	groups := [][]int{}
	if perCase {
		for i := range t.Cases.Cases {
			groups = append(groups, []int{i})
		}
	} else {
		all := make([]int, len(t.Cases.Cases))
		for i := range all {
			all[i] = i
		}
		groups = append(groups, all)
	}
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
		inputs, err := newVolume("inputs")
		if err != nil {
			return err
		}
		files := map[string][]byte{"shim.py": shim, "cases.json": spec}
		if _, err := eng.CopyIn(ctx, req.Run, inputs, bytes.NewReader(tarFiles(files, []string{"cases.json", "shim.py"})), engine.CopyInOptions{}); err != nil {
			return fmt.Errorf("candidate: load inputs: %w", err)
		}
		outVol, err := newVolume("out")
		if err != nil {
			return err
		}
		s := base
		s.Mounts = append(append([]engine.Mount(nil), base.Mounts...),
			engine.Mount{Volume: inputs, Target: InputsDir, ReadOnly: true},
			engine.Mount{Volume: outVol, Target: OutDir})
		s.Cmd = []string{"python3", "-I", InputsDir + "/shim.py"}
		// One container for the group: the shim enforces the per-case
		// limit, the wall clock covers them all plus interpreter start.
		s.Limits.Wall = time.Duration(len(group))*t.Spec.Limits.CaseTime() + 5*time.Second
		s.Collect = []string{OutDir}
		s.CollectPolicy = ioPolicy(t.Spec.Limits)
		res, err := eng.Run(ctx, s)
		if err != nil {
			// A refused output tree is the candidate's doing, not ours.
			if errors.Is(err, engine.ErrCollect) {
				for _, i := range group {
					out.Cases[i] = Case{Result: judge.RunResult{Exit: schema.ExitExited, Error: "output rejected: " + err.Error()}}
				}
				out.Containers++
				continue
			}
			return err
		}
		out.Containers++
		out.ImageID = res.ImageID
		records, err := filesUnder(res.Collected[OutDir].Archive, "out")
		if err != nil {
			return fmt.Errorf("candidate: read collected outputs: %w", err)
		}
		rr := runResult(res)
		for j, i := range group {
			c := Case{Result: rr, Stderr: res.Stderr}
			if j == 0 {
				c.Stdout = res.Stdout
			}
			if v, ok := records[strconv.Itoa(j)+".json"]; ok {
				c.Files = map[string][]byte{"value.json": v}
			}
			out.Cases[i] = c
		}
	}
	return nil
}

func runCommand(ctx context.Context, eng Engine, req Request, base engine.Spec, out *Outputs) error {
	t := req.Task
	for i, c := range t.Cases.Cases {
		s := base
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

func runData(ctx context.Context, eng Engine, req Request, base engine.Spec, newVolume func(string) (string, error), out *Outputs) error {
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
		inputs, err := newVolume("input")
		if err != nil {
			return err
		}
		if _, err := eng.CopyIn(ctx, req.Run, inputs, bytes.NewReader(tarFiles(files, order)), engine.CopyInOptions{}); err != nil {
			return fmt.Errorf("candidate: load inputs: %w", err)
		}
		outVol, err := newVolume("output")
		if err != nil {
			return err
		}
		s := base
		s.Mounts = append(append([]engine.Mount(nil), base.Mounts...),
			engine.Mount{Volume: inputs, Target: InputDir, ReadOnly: true},
			engine.Mount{Volume: outVol, Target: OutputDir})
		s.Cmd = append([]string(nil), t.Spec.Data.Argv...)
		s.Collect = []string{OutputDir}
		s.CollectPolicy = ioPolicy(t.Spec.Limits)
		res, err := eng.Run(ctx, s)
		out.Containers++
		if err != nil {
			if errors.Is(err, engine.ErrCollect) {
				out.Cases[i] = Case{Result: judge.RunResult{Exit: schema.ExitExited, Error: "output rejected: " + err.Error()}}
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
