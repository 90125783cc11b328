package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandbox/docker"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/strict"
	"github.com/strictgrade/strictgrade/task"
)

// ErrCouldNotGrade is wrapped by every error Grade returns: the grade's
// verdict is ERROR and says nothing about the submission.
var ErrCouldNotGrade = errors.New("controller: could not grade")

// ErrBadRequest is returned, with no Result, for a request the caller got
// wrong (a malformed Submission.Nonce, a submission of the wrong form for
// the task's tier, no task): nothing was graded, and it is neither the
// grader's failure nor the submission's. It is grading.ErrBadRequest, which
// the tier packages return for the same reason.
var ErrBadRequest = grading.ErrBadRequest

// Config configures a Controller. Signer is required; the zero value of
// every other field is usable.
type Config struct {
	// Backend runs the sandboxes; nil connects to the Docker daemon named
	// by the environment (package sandbox/docker), which the controller
	// then closes in Close. A backend the caller made stays the caller's
	// to close.
	Backend sandbox.Backend
	// Runtime selects the OCI runtime of the default Docker backend, e.g.
	// "runsc" for gVisor; empty is the daemon's default runtime. New fails
	// when the daemon does not list it. With Backend set, Runtime must be
	// empty or name the runtime that backend already uses.
	Runtime string
	// Signer signs verdicts. It stays in this process: nothing derived
	// from it is ever passed to a container.
	Signer *attest.Signer
	// MaxInFlight bounds concurrent grades; a grade past it waits for a
	// slot (Result.Queued) rather than starting into a busy host. Default:
	// the machine's CPUs (DefaultMaxInFlight).
	MaxInFlight int
	// CaseParallel is how many candidate containers one grade runs at
	// once for a task with a container per case (command and data tasks,
	// function tasks with "isolation": "case"); 1 runs
	// them one after another. Every case keeps its own fresh container,
	// limits and wall clock: this changes how long a grade takes, not
	// what it checks. So up to MaxInFlight × CaseParallel candidate
	// containers run at a time. Default: half the machine's CPUs, at
	// least 2 (DefaultCaseParallel).
	CaseParallel int
	// Pool is how many started, never-used sandboxes the default Docker
	// backend keeps ready per shape (ADR 0013); zero means MaxInFlight,
	// negative keeps none beyond what each grade warms for itself (right
	// for a process that grades once). Ignored with Backend set.
	Pool int
	// RuntimeImage is the image candidates, compat oracles and agents run:
	// an image ID or a reference the backend holds, best pinned by digest
	// (repo@sha256:…). By default it is the Python runtime image with the
	// recipe this build of strictgrade expects, found by that recipe and
	// never built here (BuildImages builds it). A backend that finds no
	// images by recipe (one that is not the Docker backend) needs it set.
	RuntimeImage string
	// JudgeImage and JudgeCmd override the judge image (as RuntimeImage)
	// and its command; by default the judge image with the expected
	// recipe, running /bin/judge.
	JudgeImage string
	JudgeCmd   []string
	// Progress, when set, receives every log event as it happens.
	Progress func(Event)
	// Logger receives the same events; nil discards them.
	Logger *slog.Logger
	// Disclosure is the harness's say in how much verdict reasons may
	// reveal (schema.Disclosure); the task has one too (its spec's
	// disclosure field). "digest" from either side wins: the default
	// policy, which quotes no candidate text and nothing expected. Else
	// "detailed" from either side, for human debugging, quotes the
	// candidate's output; else, both unset, digest. So a harness can
	// always make a grade stricter, and can loosen it only for tasks that
	// do not insist on digest. Never show a detailed verdict to the
	// agent being graded. Every strict verdict records the policy it was
	// written under.
	Disclosure schema.Disclosure
}

// Controller grades submissions. It is safe for concurrent use.
type Controller struct {
	cfg       Config
	eng       sandbox.Backend
	closeEng  func() error
	log       *slog.Logger
	sem       chan struct{}
	runtimeID string // Python runtime image
	judgeID   string
	runtime   string
}

// New validates cfg, connects to the engine and resolves the runtime and
// judge images to the IDs verdicts record. It builds nothing and runs no
// program on the host: a missing image is an error wrapping
// ErrImageMissing that names how to build it.
func New(ctx context.Context, cfg Config) (*Controller, error) {
	if cfg.Signer == nil {
		return nil, errors.New("controller: Config.Signer is required")
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight()
	}
	if cfg.CaseParallel <= 0 {
		cfg.CaseParallel = DefaultCaseParallel()
	}
	if cfg.Disclosure != "" {
		if _, err := schema.ParseDisclosure(string(cfg.Disclosure)); err != nil {
			return nil, fmt.Errorf("controller: Config.Disclosure: %w", err)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Controller{cfg: cfg, eng: cfg.Backend, log: log, sem: make(chan struct{}, cfg.MaxInFlight)}
	if c.eng == nil {
		pool := cfg.Pool
		if pool == 0 {
			pool = cfg.MaxInFlight
		}
		b, err := docker.New(ctx, docker.Config{Runtime: cfg.Runtime, Logger: log, Pool: max(pool, 0)})
		if err != nil {
			return nil, err
		}
		c.eng, c.closeEng = b, b.Close
	}
	c.runtime = c.eng.Runtime()
	if cfg.Runtime != "" && !strings.HasSuffix(c.runtime, "/"+cfg.Runtime) {
		c.Close()
		return nil, fmt.Errorf("controller: Config.Runtime %q, but the backend runs %s", cfg.Runtime, c.runtime)
	}
	var err error
	if c.runtimeID, err = c.image(ctx, cfg.RuntimeImage, images.Python{}); err != nil {
		c.Close()
		return nil, err
	}
	if c.judgeID, err = c.image(ctx, cfg.JudgeImage, images.Judge()); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// image resolves ref to the ID verdicts record (never a name) or, when ref
// is empty, finds img by the recipe this build expects.
func (c *Controller) image(ctx context.Context, ref string, img images.Image) (string, error) {
	if ref != "" {
		return c.eng.ImageID(ctx, ref)
	}
	f, ok := c.eng.(images.Finder)
	if !ok {
		return "", fmt.Errorf("controller: the %s backend finds no images by recipe: set the %s image in Config", c.runtime, img.Name())
	}
	id, err := images.Resolve(ctx, f, img)
	if errors.Is(err, images.ErrMissing) {
		return "", fmt.Errorf("%w: %v; build it with `strictgrade images build` or controller.BuildImages, or name one in Config", ErrImageMissing, err)
	}
	return id, err
}

// RuntimeImage returns the ID of the image candidates and compat oracles
// run, which is also the image for agentbox.Config.Image: an agent works in
// the same runtime its submission is graded in.
func (c *Controller) RuntimeImage() string { return c.runtimeID }

// JudgeImage returns the ID of the judge's image.
func (c *Controller) JudgeImage() string { return c.judgeID }

// Backend returns the backend the controller runs sandboxes on, so that an
// agent box can share it.
func (c *Controller) Backend() sandbox.Backend { return c.eng }

// Close releases the backend the controller opened itself.
func (c *Controller) Close() error {
	if c.closeEng != nil {
		return c.closeEng()
	}
	return nil
}

// Task is a task of either tier: a *task.Task (strict tier) or a
// *compat.Task (compat tier, a repository task). LoadTask loads either.
type Task interface {
	Tier() schema.Tier
}

// Submission is the work to grade. A strict task takes a workspace
// directory on the host (Dir) or a tar stream (Archive), of which only the
// task's declared artifacts pass, through the firewall; a compat task
// takes a unified diff (Diff) through the diff gate.
type Submission struct {
	Dir     string
	Archive io.Reader
	// Diff is a compat submission; an empty, non-nil diff grades the
	// repository's base.
	Diff []byte
	// Baseline is a compat task's baseline outcome when the caller knows
	// it (from CheckCompat): the verdict records it and whether the
	// submission flipped it.
	Baseline schema.Outcome
	// Nonce is the nonce the request was issued with, so that a verifier
	// can refuse a replayed verdict; empty asks the controller for a fresh
	// one. It must be 16 to 128 characters of A-Z, a-z, 0-9, '_' and '-'
	// (schema.NewNonce makes one).
	Nonce string
}

// Result is the outcome of a grade.
type Result struct {
	Verdict *schema.Verdict
	// Signed holds the signed statement, DSSE envelope and Sigstore bundle.
	Signed *attest.Signed
	// Archive is the exact bytes graded — the canonical archive (strict
	// tier) or the diff (compat tier); its sha256 is the verdict's
	// submission digest, the subject of the statement. When the grade
	// ended before a canonical archive existed (the firewall rejected the
	// submission, or an ERROR while admitting it) it is the bytes as
	// presented, which the digest then covers.
	Archive []byte
	// Log lists what happened, in order.
	Log []Event
	// Queued is how long the grade waited for a slot (MaxInFlight)
	// before it started.
	Queued time.Duration
}

// DefaultMaxInFlight is Config.MaxInFlight's default: one grade per CPU
// the process may use. Each grade's containers are limited to a CPU and
// spend much of a grade's time starting and stopping, so a grade per CPU
// keeps the machine busy without queueing on it.
func DefaultMaxInFlight() int { return max(runtime.GOMAXPROCS(0), 1) }

// DefaultCaseParallel is Config.CaseParallel's default: half the CPUs, at
// least 2. A candidate container spends much of its life starting and
// stopping, so two at once per grade keep a small machine's CPUs busy; as
// time limits count CPU time, more at once changes how long grades take,
// never their verdicts.
func DefaultCaseParallel() int { return max(runtime.GOMAXPROCS(0)/2, 2) }

// Event is one entry of a grade's log.
type Event = grading.Event

// Grade grades sub against t, a task of either tier, in that tier's
// pipeline (package strict or package compat), and signs the verdict. It
// returns a signed verdict in every case it can: PASS or FAIL with a nil
// error, or ERROR together with an error wrapping ErrCouldNotGrade. The
// Result is nil, with an error wrapping ErrBadRequest, when the request
// was wrong (no task, a submission of the other tier's form, a malformed
// nonce), and nil with ErrCouldNotGrade when the grade never started (ctx
// done while waiting for a slot) or even an ERROR verdict could not be
// signed; always check it.
func (c *Controller) Grade(ctx context.Context, t Task, sub Submission) (*Result, error) {
	switch tt := t.(type) {
	case *task.Task:
		if tt == nil || sub.Diff != nil || sub.Baseline != "" {
			return nil, fmt.Errorf("%w: a strict task takes a workspace or an archive, not a diff", ErrBadRequest)
		}
		return c.run(ctx, sub.Nonce, func(ctx context.Context, h grading.Header) (*outcome, error) {
			out, err := strict.Grade(ctx, c.eng, strict.Request{Header: h, Task: tt, Dir: sub.Dir, Archive: sub.Archive,
				Image: c.runtimeID, JudgeImage: c.judgeID, JudgeCmd: c.cfg.JudgeCmd, Disclosure: c.cfg.Disclosure, CaseParallel: c.cfg.CaseParallel})
			if out == nil {
				return nil, err
			}
			return &outcome{out.Verdict, out.Archive, out.Log, tt.Digest, schema.TierStrict}, err
		})
	case *compat.Task:
		if tt == nil || sub.Diff == nil || sub.Dir != "" || sub.Archive != nil {
			return nil, fmt.Errorf("%w: a compat task takes a diff", ErrBadRequest)
		}
		return c.run(ctx, sub.Nonce, func(ctx context.Context, h grading.Header) (*outcome, error) {
			out, err := compat.Grade(ctx, c.eng, compat.Request{Header: h, Task: tt, Image: c.runtimeID,
				Diff: sub.Diff, BaselineOutcome: sub.Baseline})
			return compatOutcome(tt, sub.Diff, out, err)
		})
	case nil:
		return nil, fmt.Errorf("%w: nil task", ErrBadRequest)
	}
	return nil, fmt.Errorf("%w: a task of type %T: want *task.Task or *compat.Task", ErrBadRequest, t)
}

// CheckCompat runs a compat task's baseline (no diff): the verdict is FAIL
// when the task is fit and QUARANTINED, with the reason, when it is not.
// Results and errors follow Grade.
func (c *Controller) CheckCompat(ctx context.Context, t *compat.Task) (*Result, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil task", ErrBadRequest)
	}
	return c.run(ctx, "", func(ctx context.Context, h grading.Header) (*outcome, error) {
		out, err := compat.Check(ctx, c.eng, compat.Request{Header: h, Task: t, Image: c.runtimeID})
		return compatOutcome(t, nil, out, err)
	})
}

// outcome is what a tier's pipeline returned, in the one form the
// controller checks and signs, with what the verdict must be bound to.
type outcome struct {
	verdict *schema.Verdict
	archive []byte // what the submission digest covers
	log     []Event
	task    string // the task's digest
	tier    schema.Tier
}

func compatOutcome(t *compat.Task, diff []byte, out *compat.Outcome, err error) (*outcome, error) {
	if out == nil {
		return nil, err
	}
	return &outcome{out.Verdict, diff, out.Log, t.Digest, schema.TierCompat}, err
}

// run is what every grade shares: a checked nonce and a fresh run id, a
// slot, the tier's pipeline, the binding check and the signature.
func (c *Controller) run(ctx context.Context, nonce string, tier func(context.Context, grading.Header) (*outcome, error)) (*Result, error) {
	h, err := grading.Header{Nonce: nonce, Runtime: c.runtime, Progress: c.progress}.Complete()
	if err != nil {
		return nil, err
	}
	queued := time.Now()
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	defer func() { <-c.sem }()
	wait := time.Since(queued)
	out, gradeErr := tier(ctx, h)
	if out == nil || out.verdict == nil {
		if errors.Is(gradeErr, ErrBadRequest) {
			return nil, gradeErr
		}
		return nil, fmt.Errorf("%w: %w", ErrCouldNotGrade, errors.Join(gradeErr, errors.New("the tier returned no verdict")))
	}
	log := grading.NewLog(h)
	v := out.verdict
	if err := bound(v, h, out, gradeErr); err != nil {
		// A verdict about something else is never signed.
		log.Add("sign", "verdict refused", "error", err.Error())
		return nil, fmt.Errorf("%w: %w", ErrCouldNotGrade, errors.Join(gradeErr, err))
	}
	signed, err := c.cfg.Signer.Sign(context.WithoutCancel(ctx), v, attest.SignOptions{})
	if err != nil {
		// The verdict does not pass the schema: never sign anything else
		// in its place.
		log.Add("sign", "signing failed", "error", err.Error())
		return nil, fmt.Errorf("%w: sign: %w", ErrCouldNotGrade, errors.Join(gradeErr, err))
	}
	log.Add("sign", "verdict signed", "outcome", string(v.Outcome), "key", c.cfg.Signer.Hint())
	res := &Result{Verdict: v, Signed: signed, Archive: out.archive, Log: append(out.log, log.Events()...), Queued: wait}
	if gradeErr != nil {
		return res, fmt.Errorf("%w: %w", ErrCouldNotGrade, gradeErr)
	}
	return res, nil
}

// bound checks that a tier's verdict is about this grade: its run, nonce,
// tier, task and the bytes the caller gets back, and that an ERROR comes
// with an error and only with one, so that no failure of the grader is
// ever signed as a PASS or a FAIL.
func bound(v *schema.Verdict, h grading.Header, out *outcome, gradeErr error) error {
	sum := sha256.Sum256(out.archive)
	switch {
	case (gradeErr != nil) != (v.Outcome == schema.OutcomeError):
		return fmt.Errorf("the tier returned %s with error %v", v.Outcome, gradeErr)
	case v.RunID != h.Run || v.Nonce != h.Nonce:
		return errors.New("the verdict names another run")
	case v.Tier != out.tier:
		return fmt.Errorf("the verdict is of tier %s, the task of tier %s", v.Tier, out.tier)
	case v.Task.Digest != out.task:
		return errors.New("the verdict names another task")
	case v.Submission.SHA256 != hex.EncodeToString(sum[:]) || v.Submission.Size != int64(len(out.archive)):
		return errors.New("the verdict's submission digest does not cover the bytes returned with it")
	case v.Controller != h.Controller():
		return errors.New("the verdict describes another controller")
	}
	return nil
}

// progress reports a grade's event to the logger and Config.Progress.
func (c *Controller) progress(e Event) {
	c.log.Info(e.Message, append([]any{"run", e.RunID, "phase", e.Phase}, e.Pairs()...)...)
	if c.cfg.Progress != nil {
		c.cfg.Progress(e)
	}
}

// acquire takes a grading slot. A Controller not made by New has none and
// fails at once instead of waiting forever.
func (c *Controller) acquire(ctx context.Context) error {
	if c.sem == nil {
		return fmt.Errorf("%w: the Controller was not made by New", ErrCouldNotGrade)
	}
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrCouldNotGrade, ctx.Err())
	}
}
