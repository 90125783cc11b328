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
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
)

//go:embed shim.py
var shim []byte

// Engine is what the candidate phase needs from a sandbox backend.
type Engine interface {
	sandbox.Runner
	sandbox.Volumes
}

// Request describes one candidate phase: where to run, how to call the
// candidate, and the inputs of the cases. It holds nothing a case expects
// back, and no way to reach the task it was made from.
type Request struct {
	Run   string
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

	// Kind is the task's kind; the matching one of Function, Command and
	// Data says how the candidate is called.
	Kind     schema.TaskKind
	Function *Function
	Command  *Command
	Data     *Data
	// PerCase gives each case of a function task a fresh process; by
	// default they share one. Command and data cases always run in a
	// fresh container each.
	PerCase bool
	// Parallel is how many of the phase's containers run at once when it
	// runs more than one (a container per case); 0 or 1 runs them one
	// after another. Each case keeps its own container, limits and wall
	// clock either way; only the phase's elapsed time changes.
	Parallel int
	Limits   Limits
	// Cases are the inputs of the cases, in the task's order.
	Cases []Input
	// Hold bounds what the phase holds of each case's outputs once the
	// case has ended; the zero value holds them whole.
	Hold Hold
}

// Hold says what the phase holds of a case's outputs, so that what a grade
// holds is bounded by what its caller reads rather than by the task's
// output limit times its cases.
type Hold struct {
	// Bytes, when above 0, cuts a standard output or output file longer
	// than Bytes to its first Bytes+1 bytes: enough to know it was
	// longer.
	Bytes int
	// NoStderr drops standard error.
	NoStderr bool
}

// Function is the callable of a function task: module.name, imported from
// the artifacts.
type Function struct {
	Module string
	Name   string
}

// Command is the executable of a command task, relative to the artifacts.
type Command struct {
	Path string
}

// Data is the command line of a data task, run in the artifacts directory
// with the case's input files in InputDir and an empty OutputDir.
type Data struct {
	Argv []string
}

// Limits bound each case.
type Limits struct {
	CaseTime      time.Duration
	MemoryBytes   int64
	PIDs          int64
	OutputBytes   int64 // standard output, and a data case's output directory
	ArtifactBytes int64
}

// Input is what one case gives the candidate.
type Input struct {
	Args  json.RawMessage   // function: a JSON array of positional arguments
	Argv  []string          // command: the arguments after the executable
	Stdin []byte            // command: standard input
	Files map[string][]byte // data: the input files, by the name the candidate reads
	// NoStdout says the caller does not read the case's standard output:
	// the phase drops it (Record.StdoutBytes keeps its size).
	NoStdout bool
}

// ErrNoNonce means a Request for a shared-process function task has no
// Nonce to derive the call order from.
var ErrNoNonce = errors.New("candidate: no nonce for the call order")

// ErrRequest means a Request does not say how to call the candidate.
var ErrRequest = errors.New("candidate: invalid request")

// Case is what one case produced.
type Case struct {
	Record Record
	Stdout []byte
	Stderr []byte
	// Files holds output files by name: value.json for function tasks,
	// the files written under /output for data tasks.
	Files map[string][]byte
	// Rejection is the backend's error behind a refused output (it wraps
	// sandbox.ErrCollect and, usually, a *firewall.RejectError), kept for
	// logs and tests. It may quote names the candidate chose; the text in
	// Record.Refused does not.
	Rejection error
}

// Record is how a case ran: the part of what it produced that is not the
// candidate's bytes.
type Record struct {
	// Exit is how the process ended: exited, timeout, oom or
	// output_limit.
	Exit     schema.Exit
	Code     int // exit status
	Duration time.Duration
	// Limit says which time limit a timeout met (sandbox.LimitCPU or
	// sandbox.LimitWall); CPU is the CPU time the case used, when
	// CPUMeasured (for a case of a shared process, the shim's own count
	// of the call's CPU time, for reading only).
	Limit       sandbox.Limit
	CPU         time.Duration
	CPUMeasured bool
	// StdoutTruncated and StderrTruncated say a stream passed its cap.
	StdoutTruncated bool
	StderrTruncated bool
	// StdoutBytes is the size of the standard output as captured, before
	// Request.Hold and Input.NoStdout applied.
	StdoutBytes int
	// Refused, when not empty, says that the case's outputs were refused
	// and of what kind the refusal was, without quoting anything the
	// candidate named. The case fails on it.
	Refused string
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
func ioPolicy(l Limits) firewall.Policy {
	n := max(l.ArtifactBytes, l.OutputBytes)
	return firewall.Policy{MaxTotalBytes: n, MaxFileBytes: n}
}

// check reports whether req says how to call the candidate.
func (req *Request) check() error {
	ok := false
	switch req.Kind {
	case schema.KindFunction:
		ok = req.Function != nil
	case schema.KindCommand:
		ok = req.Command != nil
	case schema.KindData:
		ok = req.Data != nil
	default:
		return fmt.Errorf("%w: unsupported task kind %q", ErrRequest, req.Kind)
	}
	if !ok {
		return fmt.Errorf("%w: a %s task without its %s", ErrRequest, req.Kind, req.Kind)
	}
	return nil
}

// Run executes every case of the request against the artifacts. An error
// means the phase could not run (a backend failure, cancellation, a
// malformed request); everything the candidate did, including crashing or
// timing out, is reported in Outputs.
func Run(ctx context.Context, eng Engine, req Request) (out *Outputs, err error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	start := time.Now()
	// Every volume is registered as it is made. On failure they go before
	// Run returns; otherwise while the caller goes on (Outputs.Wait waits
	// for it).
	cl := &sandbox.Cleanup{}
	defer func() {
		if err != nil {
			_ = cl.Run(ctx)
			return
		}
		done := make(chan struct{})
		out.removed = done
		go func() {
			defer close(done)
			_ = cl.Run(ctx)
		}()
	}()
	ph := &phase{eng: eng, req: &req, cl: cl}
	// A backend that can start sandboxes ahead of time starts this
	// phase's now, one per container the phase will use.
	if w, ok := eng.(sandbox.Warmer); ok && len(req.Cases) > 0 {
		w.Warm(ctx, ph.shape(), ph.containers())
	}
	out = &Outputs{Cases: make([]Case, len(req.Cases))}
	switch req.Kind {
	case schema.KindFunction:
		err = ph.function(ctx, out)
	case schema.KindCommand:
		err = ph.command(ctx, out)
	case schema.KindData:
		err = ph.data(ctx, out)
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

// phase is the state of one Run.
type phase struct {
	eng Engine
	req *Request
	cl  *sandbox.Cleanup
}

// spec returns the base spec of a case container: the artifacts as a
// read-only tree, laid out before the candidate starts (ADR 0013).
func (ph *phase) spec() (sandbox.Spec, error) {
	return sandbox.Spec{
		Run: ph.req.Run, Phase: "candidate", Image: ph.req.Image, Env: env, WorkDir: ArtifactsDir,
		Trees:  []sandbox.Tree{{Dir: ArtifactsDir, Archive: ph.req.Artifacts, Policy: ioPolicy(ph.req.Limits)}},
		Limits: caseLimits(ph.req.Limits),
	}, nil
}

// shape is the spec every case container of the phase shares but for its
// standard input and the content of its trees: what a backend can start
// ahead of time. Where every case container runs the same command under
// the same wall clock (function and data tasks) the shape carries them
// too, for a backend that fixes a sandbox's command when it creates it
// (Kubernetes); a command task's argv and input differ by case.
// TestShapeMatchesCases holds it to the specs the kinds below make.
func (ph *phase) shape() sandbox.Spec {
	s, _ := ph.spec()
	switch ph.req.Kind {
	case schema.KindFunction:
		s.Trees = append(s.Trees, sandbox.Tree{Dir: InputsDir})
		s.Cmd = shimCmd()
		group := len(ph.req.Cases)
		if ph.req.PerCase {
			group = 1
		}
		s.Limits.CPU, s.Limits.Wall = groupLimits(ph.req.Limits, group)
	case schema.KindData:
		s.Trees = append(s.Trees, sandbox.Tree{Dir: InputDir, Policy: ioPolicy(ph.req.Limits)})
		s.Cmd = slices.Clone(ph.req.Data.Argv)
		s.StreamOut = outputQuota(ph.req.Limits)
		s.CollectPolicy = outputPolicy(ph.req.Limits)
	}
	return s
}

// shimCmd runs the function tasks' shim.
func shimCmd() []string { return []string{"python3", "-I", InputsDir + "/shim.py"} }

// groupLimits are the CPU budget and wall backstop of a container that
// calls n cases in one process (SharedCPU).
func groupLimits(l Limits, n int) (cpu, wall time.Duration) {
	cpu = SharedCPU(l.CaseTime, n)
	return cpu, sandbox.Backstop(cpu)
}

// SharedCPU is the CPU budget of a container that calls n cases of
// caseTime each in one process: the shim enforces each case's budget, and
// this covers them all plus the interpreter's start (a tenth of a second
// of CPU; two are allowed).
func SharedCPU(caseTime time.Duration, n int) time.Duration {
	return min(time.Duration(n)*caseTime+2*time.Second, sandbox.MaxLimits.Wall)
}

// containers is how many case containers the phase runs.
func (ph *phase) containers() int {
	if ph.req.Kind == schema.KindFunction && !ph.req.PerCase {
		return 1
	}
	return len(ph.req.Cases)
}

func caseLimits(l Limits) sandbox.Limits {
	return sandbox.Limits{
		CPU:               l.CaseTime,
		Wall:              sandbox.Backstop(l.CaseTime),
		MemoryBytes:       l.MemoryBytes,
		PIDs:              l.PIDs,
		StdoutBytes:       l.OutputBytes,
		StderrBytes:       64 << 10,
		FileBytes:         max(l.OutputBytes, 1<<20),
		TmpfsBytes:        32 << 20,
		KillOnOutputLimit: true,
	}
}

// record turns a backend result into the record of a case.
func record(r *sandbox.Result) Record {
	rec := Record{
		Code: r.Code, Duration: r.Duration, Limit: r.Limit, CPU: r.CPU, CPUMeasured: r.CPUMeasured,
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
	}
	switch r.Exit {
	case sandbox.ExitTimeout:
		rec.Exit = schema.ExitTimeout
	case sandbox.ExitOOM:
		rec.Exit = schema.ExitOOM
	case sandbox.ExitOutputLimit:
		rec.Exit = schema.ExitOutputLimit
	default:
		rec.Exit = schema.ExitExited
	}
	return rec
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

func (ph *phase) function(ctx context.Context, out *Outputs) error {
	req := ph.req
	groups := [][]int{}
	if req.PerCase {
		for i := range req.Cases {
			groups = append(groups, []int{i})
		}
	} else {
		if req.Nonce == "" {
			return ErrNoNonce
		}
		out.Order = callOrder(req.Nonce, len(req.Cases))
		groups = append(groups, out.Order)
	}
	// The shim sees a group's cases in call order and numbers its records
	// by position in that order; only the host maps a position back to
	// the case. An index of the task's own order inside the container
	// would let the candidate undo the shuffle (from its inputs, or from
	// the shim's frame).
	return ph.each(ctx, out, len(groups), func(ctx context.Context, g int) (string, error) {
		group := groups[g]
		args := make([]json.RawMessage, len(group))
		for j, i := range group {
			args[j] = req.Cases[i].Args
		}
		spec, err := json.Marshal(map[string]any{
			"module": req.Function.Module, "name": req.Function.Name,
			"case_seconds": req.Limits.CaseTime.Seconds(), "backstop_seconds": sandbox.Backstop(req.Limits.CaseTime).Seconds(),
			"stretch_seconds": sandbox.Stretched(sandbox.Backstop(req.Limits.CaseTime)).Seconds(),
			"cases":           args,
		})
		if err != nil {
			return "", err
		}
		files := map[string][]byte{"shim.py": shim, "cases.json": spec}
		s, err := ph.spec()
		if err != nil {
			return "", err
		}
		s.Trees = append(s.Trees, sandbox.Tree{Dir: InputsDir, Archive: tarFiles(files, []string{"cases.json", "shim.py"})})
		s.Cmd = shimCmd()
		s.Limits.CPU, s.Limits.Wall = groupLimits(req.Limits, len(group))
		res, err := ph.eng.Run(ctx, s)
		if err != nil {
			return "", err
		}
		records := splitRecords(res.Stdout, len(group))
		rec := record(res)
		for j, i := range group { // the j-th call was case i
			c := Case{Record: rec, Stderr: res.Stderr}
			r, ok := records[j]
			if !ok {
				out.Cases[i] = ph.kept(i, c)
				continue
			}
			if r.timed && rec.Exit == schema.ExitExited {
				// The call's own times, measured in the process the
				// candidate shares: for reading only, and never more
				// than the container's.
				c.Record.Duration = min(r.took, rec.Duration)
				c.Record.CPU, c.Record.CPUMeasured = r.cpu, true
				if rec.CPUMeasured {
					c.Record.CPU = min(r.cpu, rec.CPU)
				}
			}
			switch {
			case r.limit != "" && rec.Exit == schema.ExitExited:
				// The shim stopped the call at its limit (it stretched
				// the backstop itself while the call waited for a CPU).
				// Its word is the candidate's to forge, and the
				// container's run-queue delay is the candidate's to
				// inflate (threads of its own), so a stopped call is
				// always the case's timeout, never the grader's error.
				c.Record.Exit, c.Record.Limit = schema.ExitTimeout, r.limit
			default:
				c.Files = map[string][]byte{"value.json": r.value}
			}
			out.Cases[i] = ph.kept(i, c)
		}
		return res.ImageID, nil
	})
}

// shimRecord is one call's line of the shim's output.
type shimRecord struct {
	value []byte
	took  time.Duration
	cpu   time.Duration
	timed bool // the line carried the call's times
	// limit is set when the shim stopped the call at a time limit; value
	// is then empty.
	limit sandbox.Limit
}

// Markers the shim writes in place of a record when it stopped a call.
const (
	markCPU  = "!timeout-cpu"
	markWall = "!timeout-wall"
)

// splitRecords reads the shim's output: one line per case,
// "<index>\t<wall ms>\t<cpu ms>\t<record>", where the record is the call's
// JSON or a marker of the limit that stopped it (markCPU, markWall); a line
// "<index>\t<record>" carries no times. The bytes are the candidate's to
// shape, so nothing here trusts them: a line that does not parse is
// ignored, the first line for an index wins, and the judge parses each
// record strictly. A case without a line has no result.
func splitRecords(stdout []byte, n int) map[int]shimRecord {
	records := map[int]shimRecord{}
	for _, line := range bytes.Split(stdout, []byte{'\n'}) {
		idx, rest, ok := bytes.Cut(line, []byte{'\t'})
		i, okIdx := smallInt(idx)
		if !ok || !okIdx || i >= n {
			continue
		}
		if _, seen := records[i]; seen {
			continue
		}
		r := shimRecord{value: rest}
		if f := bytes.SplitN(rest, []byte{'\t'}, 3); len(f) == 3 {
			ms, okMS := smallInt(f[0])
			cpu, okCPU := smallInt(f[1])
			if okMS && okCPU {
				r = shimRecord{value: f[2], took: time.Duration(ms) * time.Millisecond, cpu: time.Duration(cpu) * time.Millisecond, timed: true}
				switch string(f[2]) {
				case markCPU:
					r.value, r.limit = nil, sandbox.LimitCPU
				case markWall:
					r.value, r.limit = nil, sandbox.LimitWall
				}
			}
		}
		r.value = bytes.Clone(r.value)
		records[i] = r
	}
	return records
}

// smallInt reads a non-negative decimal of at most 9 digits in canonical
// form.
func smallInt(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	i, err := strconv.Atoi(string(b))
	return i, err == nil && i >= 0 && string(b) == strconv.Itoa(i)
}

func (ph *phase) command(ctx context.Context, out *Outputs) error {
	req := ph.req
	return ph.each(ctx, out, len(req.Cases), func(ctx context.Context, i int) (string, error) {
		in := req.Cases[i]
		s, err := ph.spec()
		if err != nil {
			return "", err
		}
		s.Cmd = append([]string{ArtifactsDir + "/" + req.Command.Path}, in.Argv...)
		s.Stdin = bytes.NewReader(in.Stdin)
		res, err := ph.eng.Run(ctx, s)
		if err != nil {
			return "", err
		}
		out.Cases[i] = ph.kept(i, Case{Record: record(res), Stdout: res.Stdout, Stderr: res.Stderr})
		return res.ImageID, nil
	})
}

func (ph *phase) data(ctx context.Context, out *Outputs) error {
	req := ph.req
	return ph.each(ctx, out, len(req.Cases), func(ctx context.Context, i int) (string, error) {
		in := req.Cases[i]
		order := slices.Sorted(maps.Keys(in.Files))
		s, err := ph.spec()
		if err != nil {
			return "", err
		}
		s.Trees = append(s.Trees, sandbox.Tree{Dir: InputDir, Archive: tarFiles(in.Files, order), Policy: ioPolicy(req.Limits)})
		s.Cmd = slices.Clone(req.Data.Argv)
		s.StreamOut = outputQuota(req.Limits)
		s.CollectPolicy = outputPolicy(req.Limits)
		res, err := ph.eng.Run(ctx, s)
		if err != nil {
			if errors.Is(err, sandbox.ErrCollect) {
				out.Cases[i] = ph.kept(i, Case{Record: Record{Exit: schema.ExitExited, Refused: outputRejection(err)}, Rejection: err})
				return "", nil
			}
			return "", err
		}
		got, err := filesUnder(res.Collected[OutputDir].Archive, "output")
		if err != nil {
			return "", fmt.Errorf("candidate: read collected outputs: %w", err)
		}
		out.Cases[i] = ph.kept(i, Case{Record: record(res), Stdout: res.Stdout, Stderr: res.Stderr, Files: got})
		return res.ImageID, nil
	})
}

// kept is what the phase holds of case i's outputs c.
func (ph *phase) kept(i int, c Case) Case { return ph.req.Held(i, c) }

// Held returns what the phase holds of case i's outputs c: c under Hold
// and Cases[i].NoStdout, with Record.StdoutBytes set.
func (req *Request) Held(i int, c Case) Case {
	c.Record.StdoutBytes = len(c.Stdout)
	h := req.Hold
	cut := func(b []byte) []byte {
		if h.Bytes > 0 && len(b) > h.Bytes {
			return bytes.Clone(b[:h.Bytes+1])
		}
		return b
	}
	if req.Cases[i].NoStdout {
		c.Stdout = nil
	}
	if h.NoStderr {
		c.Stderr = nil
	}
	c.Stdout = cut(c.Stdout)
	if len(c.Files) > 0 {
		files := make(map[string][]byte, len(c.Files))
		for name, data := range c.Files {
			files[name] = cut(data)
		}
		c.Files = files
	}
	return c
}

// each runs n containers of the phase, run(ctx, k) for k = 0 … n-1, at
// most Request.Parallel at a time, and counts them in out. run writes only
// its own slots of out and returns the image its container reported ("" if
// none). The first error cancels the runs still going and is returned once
// every run has ended, so no container of the phase outlives it. When the
// containers disagree on their image, out.ImageID is one that differs from
// the first, which the caller's check against the expected image refuses.
func (ph *phase) each(ctx context.Context, out *Outputs, n int, run func(ctx context.Context, k int) (string, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	images := make([]string, n)
	errs := make([]error, n)
	var (
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, max(ph.req.Parallel, 1))
	var wg sync.WaitGroup
	for k := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			images[k], errs[k] = run(ctx, k)
			if errs[k] != nil {
				mu.Lock()
				if first == nil {
					first = errs[k]
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, id := range images {
		if id == "" {
			continue
		}
		if out.ImageID == "" {
			out.ImageID = id
		} else if id != out.ImageID {
			out.ImageID = id
			break
		}
	}
	out.Containers += n
	return nil
}
