package proofmatrix

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

//go:embed tasks
var tasksFS embed.FS

// Env is what a probe run may use.
type Env struct {
	Controller *controller.Controller
	Signer     *attest.Signer
	// tasks holds the embedded tasks of both tiers by name; it is
	// written only before the probes start.
	tasks     map[string]controller.Task
	tmp       string
	keyMarker string
}

// Task returns the embedded task of the given name, of either tier.
func (e *Env) Task(name string) (controller.Task, error) {
	t, ok := e.tasks[name]
	if !ok {
		return nil, fmt.Errorf("proofmatrix: no task %q", name)
	}
	return t, nil
}

// Grade grades a submission against the embedded task of the given name.
func (e *Env) Grade(ctx context.Context, taskName string, sub controller.Submission) (*controller.Result, error) {
	t, err := e.Task(taskName)
	if err != nil {
		return nil, err
	}
	return e.Controller.Grade(ctx, t, sub)
}

// TempDir returns a fresh directory, removed when the run ends.
func (e *Env) TempDir() (string, error) { return os.MkdirTemp(e.tmp, "probe-") }

// Options configure Run.
type Options struct {
	// Tiers to run; empty means every tier that has a runner.
	Tiers []Tier
	// Filter selects probes by id or taxonomy id; controls always run.
	Filter *regexp.Regexp
	// Parallel bounds probes in flight; default 2.
	Parallel int
	// Progress receives one line per finished probe; nil discards.
	Progress io.Writer
	// KeyPEM is the private key PEM behind the controller's signer. The
	// key-theft probe searches candidate containers for a piece of it;
	// the key itself never leaves this process.
	KeyPEM []byte
}

// Entry is one probe in one tier in a report.
type Entry struct {
	ID       string      `json:"id"`
	Taxonomy string      `json:"taxonomy"`
	Class    string      `json:"class"`
	Title    string      `json:"title"`
	Tier     Tier        `json:"tier"`
	Control  bool        `json:"control,omitempty"`
	Expect   Result      `json:"expect"`
	Layer    string      `json:"expected_layer"`
	Got      Observation `json:"got"`
	Millis   int64       `json:"duration_ms"`
	Error    string      `json:"error,omitempty"`
}

// Report is the outcome of a run.
type Report struct {
	Started time.Time `json:"started"`
	Millis  int64     `json:"duration_ms"`
	// Runtime is the backend and runtime the probes ran on, as verdicts
	// record it ("docker/runc", "docker/runsc", …).
	Runtime string  `json:"runtime"`
	Entries []Entry `json:"entries"`
}

// Run runs the selected probes in each tier with ctrl. Compat-tier probes
// run only when the compat tier's runner is registered (compat_run.go
// registers it from init).
func Run(ctx context.Context, ctrl *controller.Controller, signer *attest.Signer, opts Options) (*Report, error) {
	if opts.Parallel <= 0 {
		opts.Parallel = 2
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	tiers := opts.Tiers
	if len(tiers) == 0 {
		tiers = []Tier{Strict, Compat}
	}
	tmp, err := os.MkdirTemp("", "strictgrade-matrix-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	env := &Env{Controller: ctrl, Signer: signer, tasks: map[string]controller.Task{}, tmp: tmp, keyMarker: keyMarker(opts.KeyPEM)}
	if err := env.loadTasks(ctx); err != nil {
		return nil, err
	}
	type job struct {
		p *Probe
		t Tier
	}
	var jobs []job
	for _, p := range All() {
		if !p.Control && opts.Filter != nil && !opts.Filter.MatchString(p.ID) && !opts.Filter.MatchString(p.Taxonomy) {
			continue
		}
		for _, t := range tiers {
			if p.Applies(t) {
				jobs = append(jobs, job{p, t})
			}
		}
	}
	rep := &Report{Started: time.Now().UTC(), Runtime: ctrl.Backend().Runtime(), Entries: make([]Entry, len(jobs))}
	sem := make(chan struct{}, opts.Parallel)
	// Resource-exhaustion probes (class V9) run alone: each fills memory,
	// processes, disk or output up to a limit, some of which are measured
	// on the wall clock, so another probe's load beside one could decide
	// its stopping layer (seen under gVisor: V9.3's strict run ending on
	// its time limit while its compat run filled files beside it).
	var alone sync.RWMutex
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				rep.Entries[i] = entryFor(j.p, j.t)
				rep.Entries[i].Error = ctx.Err().Error()
				rep.Entries[i].Got = Observation{Result: Errored, Layer: "cancelled"}
				return
			}
			defer func() { <-sem }()
			if j.p.Class == "V9" {
				alone.Lock()
				defer alone.Unlock()
			} else {
				alone.RLock()
				defer alone.RUnlock()
			}
			e := runOne(ctx, env, j.p, j.t)
			rep.Entries[i] = e
			mu.Lock()
			done++
			fmt.Fprintf(progress, "matrix: [%d/%d] %-7s %-34s %-9s %s (%.1fs)\n", done, len(jobs), j.t, j.p.ID, e.Got.Result, e.Got.Layer, float64(e.Millis)/1000)
			mu.Unlock()
		}()
	}
	wg.Wait()
	rep.Millis = time.Since(rep.Started).Milliseconds()
	return rep, ctx.Err()
}

func entryFor(p *Probe, t Tier) Entry {
	c := p.caseFor(t)
	return Entry{ID: p.ID, Taxonomy: p.Taxonomy, Class: p.Class, Title: p.Title, Tier: t, Control: p.Control, Expect: c.Expect, Layer: c.Layer}
}

func runOne(ctx context.Context, env *Env, p *Probe, t Tier) Entry {
	e := entryFor(p, t)
	start := time.Now()
	obs, err := observe(ctx, env, p, p.caseFor(t), t)
	e.Millis = time.Since(start).Milliseconds()
	if err != nil {
		e.Error = err.Error()
		if obs.Result == "" {
			obs = Observation{Result: Errored, Layer: "error"}
		}
	}
	e.Got = obs
	return e
}

func observe(ctx context.Context, env *Env, p *Probe, c *Case, t Tier) (Observation, error) {
	if c.Custom != nil {
		return c.Custom(ctx, env)
	}
	var sub controller.Submission
	switch {
	case t == Compat:
		sub.Diff = []byte(c.Diff)
	case c.Archive != nil:
		data, err := c.Archive()
		if err != nil {
			return Observation{}, err
		}
		sub.Archive = strings.NewReader(string(data))
	default:
		dir, err := env.TempDir()
		if err != nil {
			return Observation{}, err
		}
		if err := writeFiles(dir, c.Files); err != nil {
			return Observation{}, err
		}
		if c.Prepare != nil {
			if err := c.Prepare(dir); err != nil {
				return Observation{}, err
			}
		}
		sub.Dir = dir
	}
	res, err := env.Grade(ctx, c.Task, sub)
	if res == nil {
		return Observation{}, err
	}
	obs := Classify(res.Verdict, p.Control)
	return obs, err
}

func writeFiles(dir string, files map[string]string) error {
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(body, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			return err
		}
	}
	return nil
}

// Classify names the result and deciding layer of a verdict.
func Classify(v *schema.Verdict, control bool) Observation {
	o := Observation{Outcome: string(v.Outcome), Reason: v.Reason, RunID: v.RunID}
	switch v.Outcome {
	case schema.OutcomePass:
		o.Result, o.Layer = Succeeds, "none"
		if control {
			o.Result = Pass
		}
		return o
	case schema.OutcomeFail:
		o.Result = Blocked
		if control {
			o.Result = Fail
		}
	default:
		o.Result, o.Layer = Errored, "error: "+v.ReasonCode
		return o
	}
	o.Layer = failLayer(v)
	return o
}

var firewallReason = regexp.MustCompile(`firewall: ([a-z/ -]+?)(:|"|$)`)

// failLayer names the layer behind a FAIL verdict.
func failLayer(v *schema.Verdict) string {
	// The first failing case says what decided.
	var first *schema.Case
	for i := range v.Cases {
		if v.Cases[i].Outcome == schema.OutcomeFail {
			first = &v.Cases[i]
			break
		}
	}
	switch {
	case v.Tier == schema.TierCompat:
		return compatLayer(v)
	case v.ReasonCode == schema.ReasonRejectedArtifact && first != nil && first.Exit == schema.ExitNotRun:
		if m := firewallReason.FindStringSubmatch(v.Reason); m != nil {
			return "fw-in: " + m[1]
		}
		if strings.Contains(v.Reason, "missing") {
			return "fw-in: missing artifact"
		}
		return "fw-in"
	case first != nil && first.DecidedBy == schema.DecidedByFirewall:
		if m := firewallReason.FindStringSubmatch(first.Reason); m != nil {
			return "fw-out: " + m[1]
		}
		return "fw-out"
	case v.ReasonCode == schema.ReasonTimeout, v.ReasonCode == schema.ReasonMemoryLimit, v.ReasonCode == schema.ReasonOutputLimit:
		return "limits: " + v.ReasonCode
	default:
		return "judge: " + v.ReasonCode
	}
}

// keyMarker picks 24 characters from the middle of a PEM body.
func keyMarker(pem []byte) string {
	var body strings.Builder
	for _, line := range strings.Split(string(pem), "\n") {
		if !strings.HasPrefix(line, "-----") {
			body.WriteString(strings.TrimSpace(line))
		}
	}
	b := body.String()
	if len(b) < 48 {
		return ""
	}
	mid := len(b) / 2
	return b[mid-12 : mid+12]
}

// loadTasks copies the embedded tasks to disk and loads them.
func (e *Env) loadTasks(ctx context.Context) error {
	entries, err := fs.ReadDir(tasksFS, "tasks")
	if err != nil {
		return err
	}
	for _, d := range entries {
		if !d.IsDir() {
			continue
		}
		sub, err := fs.Sub(tasksFS, "tasks/"+d.Name())
		if err != nil {
			return err
		}
		dir := filepath.Join(e.tmp, "task-"+d.Name())
		if err := os.CopyFS(dir, sub); err != nil {
			return err
		}
		t, err := controller.LoadTask(ctx, dir)
		if err != nil {
			return fmt.Errorf("proofmatrix: task %s: %w", d.Name(), err)
		}
		e.tasks[d.Name()] = t
	}
	return nil
}
