package controller

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/candidate"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/internal/tarball"
	"github.com/strictgrade/strictgrade/internal/version"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandbox/docker"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// ErrCouldNotGrade is wrapped by every error Grade returns: the grade's
// verdict is ERROR and says nothing about the submission.
var ErrCouldNotGrade = errors.New("controller: could not grade")

// ErrBadRequest is returned, with no Result, for a request the caller got
// wrong (such as a malformed Submission.Nonce): nothing was graded, and it
// is neither the grader's failure nor the submission's.
var ErrBadRequest = errors.New("controller: invalid request")

// Config configures a Controller. Signer is required; the zero value of
// every other field is usable.
type Config struct {
	// Backend runs the sandboxes; nil connects to the Docker daemon named
	// by the environment (package sandbox/docker), which the controller
	// then closes in Close. A backend the caller made stays the caller's
	// to close.
	Backend sandbox.Backend
	// Signer signs verdicts. It stays in this process: nothing derived
	// from it is ever passed to a container.
	Signer *attest.Signer
	// MaxInFlight bounds concurrent grades; default 2.
	MaxInFlight int
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
	judgeCmd  []string
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
		cfg.MaxInFlight = 2
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
		b, err := docker.New(ctx, docker.Config{Logger: log})
		if err != nil {
			return nil, err
		}
		c.eng, c.closeEng = b, b.Close
	}
	c.runtime = c.eng.Runtime()
	var err error
	if c.runtimeID, err = c.image(ctx, cfg.RuntimeImage, images.Python{}); err != nil {
		c.Close()
		return nil, err
	}
	c.judgeCmd = cfg.JudgeCmd
	if len(c.judgeCmd) == 0 {
		c.judgeCmd = []string{"/bin/judge", "--root", judgeRoot}
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

// Submission is the work to grade: a workspace directory on the host or a
// tar stream. Only the task's declared artifacts are taken from it, through
// the firewall.
type Submission struct {
	Dir     string
	Archive io.Reader
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
}

// Event is one entry of a grade's log.
type Event struct {
	Time    time.Time      `json:"time"`
	RunID   string         `json:"run_id"`
	Phase   string         `json:"phase"`
	Message string         `json:"message"`
	Attrs   map[string]any `json:"attrs,omitempty"`
}

// grade is the state of one Grade call.
type grade struct {
	c    *Controller
	task *task.Task
	subm Submission
	// disclosure is the policy of this grade's reasons.
	disclosure schema.Disclosure
	// presented is the digest of the submission bytes as presented; an
	// ERROR before the canonical archive exists is bound to it.
	presented *presented
	run       string
	nonce     string
	start     time.Time
	mu        sync.Mutex
	log       []Event
	timings   schema.Timings
}

func (g *grade) event(phase, msg string, kv ...any) {
	e := Event{Time: time.Now().UTC(), RunID: g.run, Phase: phase, Message: msg}
	if len(kv) > 0 {
		e.Attrs = map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			e.Attrs[fmt.Sprint(kv[i])] = kv[i+1]
		}
	}
	g.mu.Lock()
	g.log = append(g.log, e)
	g.mu.Unlock()
	g.c.log.Info(msg, append([]any{"run", g.run, "phase", phase}, kv...)...)
	if g.c.cfg.Progress != nil {
		g.c.cfg.Progress(e)
	}
}

func newRunID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "g" + hex.EncodeToString(b[:])
}

// Grade grades sub against t. It returns a signed verdict in every case it
// can: PASS or FAIL with a nil error, or ERROR together with an error
// wrapping ErrCouldNotGrade. The Result is nil when the grade never
// started (a nil task, ctx done while waiting for a slot) or when even an
// ERROR verdict could not be signed; always check it.
func (c *Controller) Grade(ctx context.Context, t *task.Task, sub Submission) (*Result, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil task", ErrCouldNotGrade)
	}
	nonce, err := issue(sub.Nonce)
	if err != nil {
		return nil, err
	}
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	defer func() { <-c.sem }()
	g := &grade{c: c, task: t, subm: sub, run: newRunID(), nonce: nonce, start: time.Now(),
		disclosure: disclosure(c.cfg.Disclosure, t.Spec.Disclosure)}
	g.event("setup", "grade started", "task", t.Spec.ID, "task_digest", t.Digest, "disclosure", string(g.disclosure))
	v, archive, gradeErr := g.grade(ctx)
	if gradeErr != nil {
		g.event("error", "could not grade", "error", gradeErr.Error())
		v = g.errorVerdict(archive, gradeErr)
	}
	g.timings.TotalMS = time.Since(g.start).Milliseconds()
	v.Timings = g.timings
	signed, err := c.cfg.Signer.Sign(context.WithoutCancel(ctx), v, attest.SignOptions{})
	if err != nil {
		// The verdict we built does not pass the schema: never sign
		// anything else in its place.
		g.event("sign", "signing failed", "error", err.Error())
		return nil, fmt.Errorf("%w: sign: %w", ErrCouldNotGrade, errors.Join(gradeErr, err))
	}
	g.event("sign", "verdict signed", "outcome", string(v.Outcome), "key", c.cfg.Signer.Hint())
	if archive == nil && g.presented != nil {
		archive = g.presented.data // what the verdict's digest covers
	}
	res := &Result{Verdict: v, Signed: signed, Archive: archive, Log: g.log}
	if gradeErr != nil {
		return res, fmt.Errorf("%w: %w", ErrCouldNotGrade, gradeErr)
	}
	return res, nil
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

// issue returns the caller's nonce when it has the verdict's form, or a
// fresh one when the caller gave none.
func issue(nonce string) (string, error) {
	switch {
	case nonce == "":
		return schema.NewNonce(), nil
	case !schema.ValidNonce(nonce):
		return "", fmt.Errorf("%w: Submission.Nonce must be 16 to 128 characters of A-Z, a-z, 0-9, '_' and '-'", ErrBadRequest)
	}
	return nonce, nil
}

// disclosure resolves the harness's and the task's disclosure policies (see
// Config.Disclosure): digest from either wins, then detailed from either,
// then the default.
func disclosure(harness, spec schema.Disclosure) schema.Disclosure {
	switch {
	case harness == schema.DisclosureDigest || spec == schema.DisclosureDigest:
		return schema.DisclosureDigest
	case harness == schema.DisclosureDetailed || spec == schema.DisclosureDetailed:
		return schema.DisclosureDetailed
	}
	return schema.DisclosureDigest
}

// say picks the text of a reason by the grade's policy: digest must not
// quote what a candidate chose, detailed may.
func (g *grade) say(digest, detailed string) string {
	if g.disclosure == schema.DisclosureDetailed {
		return detailed
	}
	return digest
}

// skeleton returns the verdict fields the controller knows before judging.
func (g *grade) skeleton(archive []byte) *schema.Verdict {
	v := schema.New(schema.Task{ID: g.task.Spec.ID, Digest: g.task.Digest, Kind: g.task.Spec.Kind}, schema.TierStrict)
	v.RunID = g.run
	v.Nonce = g.nonce
	v.Disclosure = g.disclosure
	v.Controller = schema.Controller{Version: version.String(), Runtime: g.c.runtime}
	v.Images = schema.Images{Candidate: g.c.runtimeID, Judge: g.c.judgeID}
	v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: digest(archive), Size: int64(len(archive))}
	return v
}

func (g *grade) errorVerdict(archive []byte, cause error) *schema.Verdict {
	v := g.skeleton(archive)
	if archive == nil && g.presented != nil && g.presented.sum != "" {
		v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: g.presented.sum, Size: g.presented.n}
	}
	v.Outcome = schema.OutcomeError
	v.ReasonCode = schema.ReasonInfrastructure
	var je *judgeError
	if errors.As(cause, &je) {
		v.ReasonCode = je.code
	}
	// An error can quote a name from the submission or the task (a file
	// the engine could not copy, the judge's complaint about a hidden
	// file): under digest, only the grader's own words before it.
	msg := cause.Error()
	v.Reason = schema.Excerpt([]byte(g.say(schema.Redact(msg), msg)), 480)
	return v
}

// judgeError is a judge misbehaviour, with the verdict reason code to use.
type judgeError struct {
	code string
	err  error
}

func (e *judgeError) Error() string { return "judge: " + e.err.Error() }
func (e *judgeError) Unwrap() error { return e.err }

// failVerdict is a FAIL decided before any case ran (a rejected or
// incomplete submission): every case is recorded as not run.
func (g *grade) failVerdict(archive []byte, code, decidedBy, reason string) *schema.Verdict {
	v := g.skeleton(archive)
	v.Outcome = schema.OutcomeFail
	v.ReasonCode = code
	v.Reason = schema.Excerpt([]byte(reason), 480)
	cases := make([]schema.Case, len(g.task.Cases.Cases))
	for i, tc := range g.task.Cases.Cases {
		cases[i] = schema.Case{ID: tc.ID, Outcome: schema.OutcomeFail, DecidedBy: decidedBy, Exit: schema.ExitNotRun, Reason: "not run: " + code}
	}
	v.SetCases(cases)
	return v
}

func (g *grade) grade(ctx context.Context) (*schema.Verdict, []byte, error) {
	c := g.c
	t := g.task

	// F-IN: the submission through the firewall, declared artifacts only.
	fwStart := time.Now()
	raw := &presented{}
	g.presented = raw
	archive, man, err := g.admit(ctx, raw)
	g.timings.FirewallMS = time.Since(fwStart).Milliseconds()
	if err != nil && ctx.Err() != nil {
		// Cancelled or out of time while filtering: our problem, not the
		// submission's, whatever the firewall called it.
		return nil, nil, fmt.Errorf("admit submission: %w", errors.Join(ctx.Err(), err))
	}
	if err != nil {
		if why, ok := g.rejection(err); ok {
			// The candidate's doing: a FAIL bound to the bytes it presented.
			g.event("firewall", "submission rejected", "error", err.Error())
			// Nothing ran: no image is named, and the digest is of the
			// bytes presented, since no canonical archive exists.
			v := g.failVerdict(nil, schema.ReasonRejectedArtifact, schema.DecidedByFirewall, why)
			v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: raw.sum, Size: raw.n}
			v.Images = schema.Images{}
			return v, nil, nil
		}
		return nil, nil, err
	}
	g.event("firewall", "submission admitted", "files", len(man.Files), "bytes", man.TotalBytes, "sha256", man.ArchiveSHA256)

	// The judge's volume is prepared while the candidate runs. Cases that
	// share one process are called in an order drawn from the nonce; the
	// verdict records it.
	meta := judge.Meta{Verdict: *g.skeleton(archive), Kind: t.Spec.Kind}
	if t.Spec.Kind == schema.KindFunction && t.Spec.Isolation != task.PerCase {
		meta.Verdict.CaseOrder = candidate.CallOrder(g.nonce, len(t.Cases.Cases))
	}
	// Everything the judge's preparation makes is registered in cl as it
	// is made, and removed on every path once the preparation is over.
	cl := &sandbox.Cleanup{Timeout: cleanupTimeout}
	defer cl.Run(ctx)
	type prepared struct {
		vol       string
		container sandbox.Prepared
		err       error
	}
	judgeVol := make(chan prepared, 1)
	prepCtx, cancelPrep := context.WithCancel(ctx)
	defer cancelPrep()
	go func() {
		vol, p, err := g.prepareJudge(prepCtx, cl, meta)
		judgeVol <- prepared{vol, p, err}
	}()
	var jv prepared
	jvReceived := false
	defer func() {
		if !jvReceived {
			cancelPrep() // an early return: stop preparing the judge
			<-judgeVol
		}
	}()

	candStart := time.Now()
	g.event("candidate", "candidate phase started", "image", c.runtimeID, "cases", len(t.Cases.Cases))
	req, err := candidateRequest(t)
	if err != nil {
		return nil, archive, fmt.Errorf("candidate phase: %w", err)
	}
	req.Run, req.Image, req.Artifacts, req.Nonce = g.run, c.runtimeID, archive, g.nonce
	outs, err := candidate.Run(ctx, c.eng, req)
	g.timings.CandidateMS = time.Since(candStart).Milliseconds()
	if err != nil {
		return nil, archive, fmt.Errorf("candidate phase: %w", err)
	}
	// The candidate's volumes are removed while the judge works.
	defer outs.Wait()
	if !slices.Equal(outs.Order, meta.Verdict.CaseOrder) {
		return nil, archive, fmt.Errorf("the candidate phase called the cases in an order (%v) other than the one the verdict records", outs.Order)
	}
	for i, oc := range outs.Cases {
		g.event("candidate", "case ran", "case", t.Cases.Cases[i].ID, "exit", string(oc.Record.Exit),
			"code", oc.Record.Code, "ms", oc.Record.Duration.Milliseconds(), "stdout_bytes", len(oc.Stdout), "error", oc.Record.Refused)
	}
	if outs.ImageID != "" && outs.ImageID != c.runtimeID {
		return nil, archive, fmt.Errorf("candidate ran image %s, expected %s", outs.ImageID, c.runtimeID)
	}

	jv = <-judgeVol
	jvReceived = true
	if jv.err != nil {
		return nil, archive, fmt.Errorf("prepare judge: %w", jv.err)
	}
	judgeStart := time.Now()
	v, err := g.judge(ctx, jv.vol, jv.container, outs, meta)
	g.timings.JudgeMS = time.Since(judgeStart).Milliseconds()
	if err != nil {
		return nil, archive, err
	}
	return v, archive, nil
}

// missingError reports a declared artifact absent from the submission.
type missingError struct{ path string }

func (e *missingError) Error() string {
	return "declared artifact " + strconv.Quote(e.path) + " is missing"
}

// rejection reports whether err, from admitting the submission, is the
// submission's fault, and the reason to record under the grade's policy.
// The firewall's rejections and limits, a missing artifact, and anything
// wrong with the presented workspace (a name that is not UTF-8, a special
// file, an entry that cannot be read) are; a failure to write our own
// spool file is not. Under digest the reason names the class of the
// problem and its position, never a name the submission chose.
func (g *grade) rejection(err error) (string, bool) {
	var (
		rej  *firewall.RejectError
		miss *missingError
		walk *tarball.WalkError
	)
	switch {
	case errors.As(err, &rej):
		digest := "firewall: rejected"
		if rej.Err != nil {
			digest = rej.Err.Error()
		}
		if rej.Entry != "" {
			digest += fmt.Sprintf(": entry at byte %d", rej.Offset)
		}
		return g.say(digest, err.Error()), true
	case errors.As(err, &walk):
		// The path is the submission's to choose; the reason is ours.
		return g.say("submission: the workspace holds an entry that cannot be submitted: "+schema.Redact(walk.Reason), err.Error()), true
	case errors.Is(err, tarball.ErrWalk):
		return g.say("submission: the workspace holds an entry that cannot be submitted", err.Error()), true
	case errors.As(err, &miss):
		// The path is the task's, declared in task.json.
		return err.Error(), true
	case errors.Is(err, firewall.ErrLimit):
		return g.say(schema.Redact(err.Error()), err.Error()), true
	}
	return "", false
}

// submissionPolicy bounds a submission.
func (g *grade) submissionPolicy() firewall.Policy {
	l := g.task.Spec.Limits
	return firewall.Policy{MaxTotalBytes: l.ArtifactBytes, MaxFileBytes: l.ArtifactBytes}
}

// admit turns the submission into the canonical archive of its declared
// artifacts. A directory is walked for the declared paths only, never
// following links; a tar stream is filtered whole first, so that anything
// hostile in it rejects the submission, and then narrowed.
func (g *grade) admit(ctx context.Context, raw *presented) ([]byte, *firewall.Manifest, error) {
	sub := g.subm
	pol := g.submissionPolicy()
	var in io.Reader
	switch {
	case sub.Dir != "" && sub.Archive == nil:
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(tarball.WriteDir(pw, sub.Dir, tarball.Under(g.task.Spec.Artifacts))) }()
		defer pr.Close()
		in = pr
	case sub.Archive != nil && sub.Dir == "":
		in = sub.Archive
	default:
		return nil, nil, errors.New("submission: set exactly one of Dir and Archive")
	}
	// The presented bytes are read whole first, so that the digest a
	// rejection is bound to covers exactly what was presented, and the
	// caller gets those bytes back.
	if err := raw.read(in, 2*pol.MaxTotalBytes+(16<<20)); err != nil {
		return nil, nil, err
	}
	var src io.Reader = bytes.NewReader(raw.data)
	if sub.Archive != nil {
		var whole bytes.Buffer
		if _, err := firewall.Filter(ctx, bytes.NewReader(raw.data), &whole, pol); err != nil {
			return nil, nil, err
		}
		var narrowed bytes.Buffer
		if err := narrow(&whole, &narrowed, tarball.Under(g.task.Spec.Artifacts)); err != nil {
			return nil, nil, err
		}
		src = &narrowed
	}
	var out bytes.Buffer
	man, err := firewall.Filter(ctx, src, &out, pol)
	if err != nil {
		return nil, nil, err
	}
	have := map[string]bool{}
	for _, f := range man.Files {
		have[f.Path] = true
	}
	for _, d := range man.Dirs {
		have[d] = true
	}
	for _, a := range g.task.Spec.Artifacts {
		if !have[a] {
			return nil, nil, &missingError{a}
		}
	}
	return out.Bytes(), man, nil
}

// narrow copies the entries of a canonical archive that keep selects.
func narrow(r io.Reader, w io.Writer, keep func(string, bool) bool) error {
	return tarball.Rewrite(w, r, func(h *tar.Header) bool {
		isDir := h.Typeflag == tar.TypeDir
		return keep(strings.TrimSuffix(h.Name, "/"), isDir)
	})
}

// cleanupTimeout bounds each removal on the way out of a grade.
const cleanupTimeout = time.Minute

// judgeRoot is where the judge's input volume is mounted.
const judgeRoot = "/judge"

// prepareJudge creates the judge's volume with the meta document and the
// task's hidden directory, and creates (without starting) the judge's
// container over it.
func (g *grade) prepareJudge(ctx context.Context, cl *sandbox.Cleanup, meta judge.Meta) (string, sandbox.Prepared, error) {
	var buf bytes.Buffer
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return "", nil, err
	}
	tw := tar.NewWriter(&buf)
	if err := addFile(tw, "meta.json", metaJSON); err != nil {
		return "", nil, err
	}
	var hidden bytes.Buffer
	if err := g.task.WriteHidden(ctx, &hidden); err != nil {
		return "", nil, err
	}
	if err := tarball.Copy(tw, &hidden, nil); err != nil {
		return "", nil, err
	}
	if err := tw.Close(); err != nil {
		return "", nil, err
	}
	vol, man, err := g.c.eng.NewVolumeWith(ctx, g.run, "judge", &buf, sandbox.CopyInOptions{Policy: judgePolicy})
	cl.Volume(g.c.eng, vol)
	if err != nil {
		return "", nil, err
	}
	g.event("judge", "judge inputs loaded", "files", len(man.Files), "sha256", man.ArchiveSHA256)
	p, err := g.c.eng.Prepare(ctx, sandbox.Spec{
		Run: g.run, Phase: "judge", Image: g.c.judgeID, Cmd: g.c.judgeCmd, Env: []string{"TZ=UTC"},
		Mounts: []sandbox.Mount{{Volume: vol, Target: judgeRoot, ReadOnly: true}},
		Limits: sandbox.Limits{Wall: 2 * time.Minute, MemoryBytes: 1 << 30, StdoutBytes: schema.MaxSize, StderrBytes: 64 << 10, KillOnOutputLimit: true},
	})
	cl.Prepared(p)
	if err != nil {
		return vol, nil, fmt.Errorf("judge container: %w", err)
	}
	return vol, p, nil
}

// judgePolicy bounds the judge's input.
//
// Its shape limits are far above what a candidate's collected outputs can
// reach (those pass the firewall under the default entry, depth and name
// limits before the outputs/<i>/files/ prefix is added), so that nothing a
// candidate writes can turn its FAIL into an ERROR here. Sizes beyond what
// the judge reads become FAIL in the judge.
var judgePolicy = firewall.Policy{
	MaxTotalBytes: 4 << 30, MaxFileBytes: 256 << 20, MaxInputBytes: 5 << 30,
	MaxEntries: 1_000_000, MaxDepth: 128, MaxNameLen: 4096,
}

func addFile(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// maxResultError bounds the note result.json carries about a case, far
// below what the judge reads of a result, so that no text a candidate
// influences (a file name quoted in a firewall rejection) can make a
// trusted file too large for the judge.
const maxResultError = 4 << 10

// outputsArchive lays the candidate's outputs out as the judge reads them:
// outputs/<i>/result.json (written here, trusted), stdout, stderr and
// files/<name> (candidate bytes). Only the files keep selects go on: the
// judge reads nothing else, and the count of what a candidate may leave
// must never decide whether its outputs fit the judge's volume.
func outputsArchive(outs *candidate.Outputs, keep func(i int, name string) bool) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, oc := range outs.Cases {
		dir := "outputs/" + strconv.Itoa(i) + "/"
		res := runResult(oc.Record)
		res.Error = truncateUTF8(res.Error, maxResultError)
		rr, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		if err := addFile(tw, dir+"result.json", rr); err != nil {
			return nil, err
		}
		if err := addFile(tw, dir+"stdout", oc.Stdout); err != nil {
			return nil, err
		}
		if err := addFile(tw, dir+"stderr", oc.Stderr); err != nil {
			return nil, err
		}
		for _, name := range sortedKeys(oc.Files) {
			if !keep(i, name) {
				continue
			}
			if err := addFile(tw, dir+"files/"+name, oc.Files[name]); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// graded reports whether case i is graded on the output file name: the
// function shim's record, or a file a data case must write.
func (g *grade) graded(i int, name string) bool {
	switch g.task.Spec.Kind {
	case schema.KindFunction:
		return name == judge.ValueFile
	case schema.KindData:
		_, ok := g.task.Cases.Cases[i].ExpectedFiles[name]
		return ok
	}
	return false
}

// judge loads the outputs, runs the judge container and checks what it
// said against what it was asked.
func (g *grade) judge(ctx context.Context, vol string, prepared sandbox.Prepared, outs *candidate.Outputs, meta judge.Meta) (*schema.Verdict, error) {
	c := g.c
	data, err := outputsArchive(outs, g.graded)
	if err != nil {
		return nil, err
	}
	man, err := c.eng.CopyIn(ctx, g.run, vol, bytes.NewReader(data), sandbox.CopyInOptions{Policy: judgePolicy})
	if err != nil {
		return nil, fmt.Errorf("load candidate outputs for the judge: %w", err)
	}
	g.event("judge", "candidate outputs loaded", "files", len(man.Files), "bytes", man.TotalBytes)
	res, err := prepared.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("judge phase: %w", err)
	}
	g.event("judge", "judge exited", "exit", string(res.Exit), "code", res.Code, "ms", res.Duration.Milliseconds(), "stdout_bytes", len(res.Stdout))
	if res.Exit != sandbox.ExitExited || res.Code != 0 {
		return nil, &judgeError{schema.ReasonJudgeCrashed, fmt.Errorf("ended with %s (code %d): %s", res.Exit, res.Code, schema.Excerpt(res.Stderr, 200))}
	}
	if res.StdoutTruncated {
		return nil, &judgeError{schema.ReasonInvalidVerdict, errors.New("verdict larger than the schema allows")}
	}
	v, err := schema.Validate(res.Stdout)
	if err != nil {
		return nil, &judgeError{schema.ReasonInvalidVerdict, fmt.Errorf("verdict fails the schema: %w", err)}
	}
	if err := g.checkBinding(v, &meta.Verdict); err != nil {
		return nil, &judgeError{schema.ReasonInvalidVerdict, err}
	}
	g.event("judge", "verdict validated", "outcome", string(v.Outcome), "cases", len(v.Cases))
	return v, nil
}

// checkBinding makes sure the judge answered the question it was asked:
// the same run, task, tier, submission, images, controller, nonce,
// disclosure policy and call order, one record per case in task order, and
// an outcome that follows from them.
func (g *grade) checkBinding(v, want *schema.Verdict) error {
	switch {
	case v.Schema != want.Schema, v.RunID != want.RunID, v.Task != want.Task, v.Tier != want.Tier,
		v.Submission != want.Submission, v.Images != want.Images, v.Controller != want.Controller,
		v.Nonce != want.Nonce, v.Compat != nil:
		return errors.New("verdict does not match the run it was asked to judge")
	case v.Disclosure != want.Disclosure:
		return fmt.Errorf("verdict written under disclosure policy %q, asked for %q", v.Disclosure, want.Disclosure)
	case !slices.Equal(v.CaseOrder, want.CaseOrder):
		return errors.New("verdict records another call order than the one the candidate was called in")
	}
	cases := g.task.Cases.Cases
	if len(v.Cases) != len(cases) {
		return fmt.Errorf("verdict has %d cases, the task %d", len(v.Cases), len(cases))
	}
	allPass := len(cases) > 0
	for i, tc := range cases {
		if v.Cases[i].ID != tc.ID {
			return fmt.Errorf("case %d is %q, want %q", i, v.Cases[i].ID, tc.ID)
		}
		allPass = allPass && v.Cases[i].Outcome == schema.OutcomePass
	}
	switch v.Outcome {
	case schema.OutcomePass:
		if !allPass {
			return errors.New("PASS with a case that did not pass")
		}
	case schema.OutcomeFail:
		if allPass {
			return errors.New("FAIL although every case passed")
		}
	default:
		return fmt.Errorf("judge outcome %s", v.Outcome)
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// presented holds the submission bytes as they were presented, before any
// filtering, with their digest and size.
type presented struct {
	sum  string
	n    int64
	data []byte
}

// read reads at most limit+1 bytes of r, keeping what it read even when it
// fails, so that a verdict about them can name them and the caller can
// have them. More than limit bytes is a firewall limit error.
func (p *presented) read(r io.Reader, limit int64) error {
	var buf bytes.Buffer
	_, err := io.Copy(&buf, io.LimitReader(r, limit+1))
	p.data = buf.Bytes()
	sum := sha256.Sum256(p.data)
	p.sum, p.n = hex.EncodeToString(sum[:]), int64(len(p.data))
	if err == nil && p.n > limit {
		err = fmt.Errorf("%w: submission larger than %d bytes", firewall.ErrLimit, limit)
	}
	return err
}

func sortedKeys(m map[string][]byte) []string {
	return slices.Sorted(maps.Keys(m))
}

// truncateUTF8 shortens s to at most n bytes without splitting a
// character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
