// Package strict is the strict tier's pipeline: a submission's declared
// artifacts through the firewall, the candidate run on the case inputs
// alone in fresh containers (package candidate), and its outputs compared
// with the hidden expectations by the judge in a container of its own
// (package judge), whose verdict is checked against the question it was
// asked. Grade has the shape of compat.Grade: a backend, a request, and an
// unsigned verdict with the grade's log. Signing is the controller's.
package strict

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strictgrade/strictgrade/candidate"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/internal/tarball"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// Request describes one strict grade.
type Request struct {
	grading.Header
	Task *task.Task
	// Dir or Archive (exactly one) is the submission: a workspace
	// directory on the host, walked for the declared artifacts only, or a
	// tar stream, filtered whole and then narrowed to them.
	Dir     string
	Archive io.Reader
	// Image is the ID of the runtime image candidates run (as
	// sandbox.Images.ImageID returns it); every candidate container must
	// report running exactly it.
	Image string
	// JudgeImage is the ID of the judge's image, JudgeCmd its command
	// (default /bin/judge --root /judge).
	JudgeImage string
	JudgeCmd   []string
	// Disclosure is the harness's side of the disclosure policy; the
	// grade's policy is resolved with the task's (see
	// controller.Config.Disclosure).
	Disclosure schema.Disclosure
	// CaseParallel is how many candidate containers of a task with a
	// container per case run at once (candidate.Request.Parallel); 0 or
	// 1 runs them one after another.
	CaseParallel int
}

// Outcome is the result of Grade.
type Outcome struct {
	// Verdict is complete, schema-valid and unsigned.
	Verdict *schema.Verdict
	// Archive is what the verdict's submission digest covers: the
	// canonical archive of the declared artifacts, or the bytes as
	// presented when the grade ended before one existed (a rejection).
	Archive []byte
	// Log says what happened, in order.
	Log []grading.Event
}

// Grade grades the submission req names against req.Task. It returns PASS
// or FAIL with a nil error; anything the submission does wrong is its FAIL.
// An error means the grade could not be decided by the grader's own fault:
// the Outcome then holds an ERROR verdict bound to what was presented. An
// error wrapping grading.ErrBadRequest, with no Outcome, means the request
// itself was wrong and nothing ran.
func Grade(ctx context.Context, b sandbox.Backend, req Request) (*Outcome, error) {
	g, err := newGrade(b, req)
	if err != nil {
		return nil, err
	}
	g.log.Add("setup", "grade started", "task", g.task.Spec.ID, "task_digest", g.task.Digest, "disclosure", string(g.disclosure))
	v, archive, gradeErr := g.grade(ctx)
	if gradeErr != nil {
		g.log.Add("error", "could not grade", "error", gradeErr.Error())
		v = g.errorVerdict(archive, gradeErr)
	}
	g.timings.TotalMS = time.Since(g.start).Milliseconds()
	v.Timings = g.timings
	if _, err := schema.Marshal(v); err != nil {
		return nil, fmt.Errorf("strict: the verdict fails its schema: %w", errors.Join(gradeErr, err))
	}
	if archive == nil && g.presented != nil {
		archive = g.presented.data // what the verdict's digest covers
	}
	return &Outcome{Verdict: v, Archive: archive, Log: g.log.Events()}, gradeErr
}

// grade is the state of one Grade call.
type grade struct {
	eng      sandbox.Backend
	req      Request
	task     *task.Task
	judgeCmd []string
	// disclosure is the policy of this grade's reasons.
	disclosure schema.Disclosure
	// presented is the digest of the submission bytes as presented; an
	// ERROR before the canonical archive exists is bound to it.
	presented *presented
	start     time.Time
	log       *grading.Log
	timings   schema.Timings
}

func newGrade(b sandbox.Backend, req Request) (*grade, error) {
	switch {
	case b == nil:
		return nil, fmt.Errorf("%w: strict: nil backend", grading.ErrBadRequest)
	case req.Task == nil:
		return nil, fmt.Errorf("%w: strict: nil task", grading.ErrBadRequest)
	case req.Image == "" || req.JudgeImage == "":
		return nil, fmt.Errorf("%w: strict: the runtime and judge images are required", grading.ErrBadRequest)
	case (req.Dir == "") == (req.Archive == nil):
		return nil, fmt.Errorf("%w: strict: set exactly one of Dir and Archive", grading.ErrBadRequest)
	case req.Disclosure != "":
		if _, err := schema.ParseDisclosure(string(req.Disclosure)); err != nil {
			return nil, fmt.Errorf("%w: strict: %w", grading.ErrBadRequest, err)
		}
	}
	h, err := req.Header.Complete()
	if err != nil {
		return nil, err
	}
	req.Header = h
	g := &grade{eng: b, req: req, task: req.Task, judgeCmd: req.JudgeCmd, start: time.Now(),
		disclosure: disclosure(req.Disclosure, req.Task.Spec.Disclosure), log: grading.NewLog(h)}
	if len(g.judgeCmd) == 0 {
		g.judgeCmd = []string{"/bin/judge", "--root", judgeRoot}
	}
	return g, nil
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

// skeleton returns the verdict fields known before judging.
func (g *grade) skeleton(archive []byte) *schema.Verdict {
	v := schema.New(schema.Task{ID: g.task.Spec.ID, Digest: g.task.Digest, Kind: g.task.Spec.Kind}, schema.TierStrict)
	v.RunID = g.req.Run
	v.Nonce = g.req.Nonce
	v.Disclosure = g.disclosure
	v.Controller = g.req.Controller()
	v.Images = schema.Images{Candidate: g.req.Image, Judge: g.req.JudgeImage}
	v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: digest(archive), Size: int64(len(archive))}
	return v
}

func (g *grade) errorVerdict(archive []byte, cause error) *schema.Verdict {
	v := g.skeleton(archive)
	if archive == nil && g.presented != nil && g.presented.sum != "" {
		v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: g.presented.sum, Size: g.presented.n}
	}
	code := ""
	var je *judgeError
	if errors.As(cause, &je) {
		code = je.code
	}
	if errors.Is(cause, sandbox.ErrOverloaded) {
		code = schema.ReasonGraderOverloaded
	}
	// An error can quote a name from the submission or the task (a file
	// the engine could not copy, the judge's complaint about a hidden
	// file): under digest, only the grader's own words before it.
	msg := cause.Error()
	return grading.Errored(v, code, schema.Excerpt([]byte(g.say(schema.Redact(msg), msg)), 480))
}

// checkerLine is the judge's line about a failed checker, without its
// "judge: " prefix, on one line and at most 400 bytes: words the digest
// policy keeps up to the first quote (schema.Redact), so that the module's
// path and sha256 and the case reach the verdict.
func checkerLine(stderr []byte) string {
	line := strings.Join(strings.Fields(strings.ToValidUTF8(string(stderr), "?")), " ")
	line = strings.TrimPrefix(line, "judge: ")
	return schema.Clip(line, 400)
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
			g.log.Add("firewall", "submission rejected", "error", err.Error())
			// Nothing ran: no image is named, and the digest is of the
			// bytes presented, since no canonical archive exists.
			v := g.failVerdict(nil, schema.ReasonRejectedArtifact, schema.DecidedByFirewall, why)
			v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: raw.sum, Size: raw.n}
			v.Images = schema.Images{}
			return v, nil, nil
		}
		return nil, nil, err
	}
	g.log.Add("firewall", "submission admitted", "files", len(man.Files), "bytes", man.TotalBytes, "sha256", man.ArchiveSHA256)

	// The judge's volume is prepared while the candidate runs. Cases that
	// share one process are called in an order drawn from the nonce; the
	// verdict records it.
	meta := judge.Meta{Verdict: *g.skeleton(archive), Kind: t.Spec.Kind}
	if t.Spec.Kind == schema.KindFunction && t.Spec.Isolation != task.PerCase {
		meta.Verdict.CaseOrder = candidate.CallOrder(g.req.Nonce, len(t.Cases.Cases))
	}
	// A backend that starts sandboxes ahead of time starts the judge's
	// now and hands it its whole input as a tree once the outputs exist
	// (ADR 0013); any other gets the judge's volume and container
	// prepared while the candidate runs.
	warmer, canWarm := g.eng.(sandbox.Warmer)
	pooledJudge := canWarm && warmer.Warm(ctx, g.judgeSpec(nil), 1)
	// The verdict's schema compiles while the sandboxes start, not after
	// the judge has answered.
	go schema.Preload()
	// Everything the judge's preparation makes is registered in cl as it
	// is made, and removed on every path once the preparation is over.
	cl := &sandbox.Cleanup{}
	defer cl.Run(ctx)
	type prepared struct {
		vol   string
		judge *judgeRun
		err   error
	}
	judgeVol := make(chan prepared, 1)
	prepCtx, cancelPrep := context.WithCancel(ctx)
	defer cancelPrep()
	if pooledJudge {
		judgeVol <- prepared{}
	} else {
		go func() {
			vol, j, err := g.prepareJudge(prepCtx, cl, meta)
			if err == nil && j.early && g.liveVolumes() {
				// Started on the grade's context: the preparation's ends
				// with the preparation.
				j.start(ctx)
			}
			judgeVol <- prepared{vol, j, err}
		}()
	}
	var jv prepared
	jvReceived := false
	defer func() {
		if !jvReceived {
			cancelPrep() // an early return: stop preparing the judge
			<-judgeVol
		}
	}()

	candStart := time.Now()
	g.log.Add("candidate", "candidate phase started", "image", g.req.Image, "cases", len(t.Cases.Cases))
	req, err := candidateRequest(t)
	if err != nil {
		return nil, archive, fmt.Errorf("candidate phase: %w", err)
	}
	req.Run, req.Image, req.Artifacts, req.Nonce = g.req.Run, g.req.Image, archive, g.req.Nonce
	req.Parallel = g.req.CaseParallel
	outs, err := candidate.Run(ctx, g.eng, req)
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
		g.log.Add("candidate", "case ran", "case", t.Cases.Cases[i].ID, "exit", string(oc.Record.Exit),
			"code", oc.Record.Code, "ms", oc.Record.Duration.Milliseconds(), "stdout_bytes", oc.Record.StdoutBytes, "error", oc.Record.Refused)
	}
	if outs.ImageID != "" && outs.ImageID != g.req.Image {
		return nil, archive, fmt.Errorf("candidate ran image %s, expected %s", outs.ImageID, g.req.Image)
	}

	jv = <-judgeVol
	jvReceived = true
	if jv.err != nil {
		return nil, archive, fmt.Errorf("prepare judge: %w", jv.err)
	}
	judgeStart := time.Now()
	var v *schema.Verdict
	if pooledJudge {
		v, err = g.judgeTree(ctx, outs, meta)
	} else {
		if jv.judge.ready != nil && g.liveVolumes() {
			jv.judge.start(ctx) // its start overlaps the loading of the outputs
		}
		v, err = g.judge(ctx, jv.vol, jv.judge, outs, meta)
	}
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
	sub := g.req
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

// liveVolumes reports whether the backend's running sandboxes see what is
// copied into their volumes later (sandbox.LiveVolumes): only then may the
// judge start before the candidate's outputs are in its volume. Elsewhere
// it starts once they are, and is prepared (scheduled, its image ready)
// while the candidate runs.
func (g *grade) liveVolumes() bool {
	lv, ok := g.eng.(sandbox.LiveVolumes)
	return ok && lv.LiveVolumes()
}

// judgeRoot is where the judge's input volume is mounted.
const judgeRoot = "/judge"

// prepareJudge creates the judge's volume with the meta document and the
// task's hidden directory, and creates (without starting) the judge's
// container over it.
func (g *grade) prepareJudge(ctx context.Context, cl *sandbox.Cleanup, meta judge.Meta) (string, *judgeRun, error) {
	input, err := g.judgeInput(meta, nil)
	if err != nil {
		return "", nil, err
	}
	vol, man, err := g.eng.NewVolumeWith(ctx, g.req.Run, "judge", bytes.NewReader(input), sandbox.CopyInOptions{Policy: judgePolicy})
	cl.Volume(g.eng, vol)
	if err != nil {
		return "", nil, err
	}
	g.log.Add("judge", "judge inputs loaded", "files", len(man.Files), "sha256", man.ArchiveSHA256)
	g.logCheckers()
	spec := g.judgeSpec(nil)
	spec.Trees = nil
	spec.Mounts = []sandbox.Mount{{Volume: vol, Target: judgeRoot, ReadOnly: true}}
	j := &judgeRun{}
	ok, early, wall := g.handshake()
	spec.Limits.Wall = wall
	if ok {
		pr, pw := io.Pipe()
		spec.Cmd = append(slices.Clone(spec.Cmd), "--wait-stdin")
		spec.Stdin, j.ready, j.early = pr, pw, early
	}
	p, err := g.eng.Prepare(ctx, spec)
	cl.Prepared(p)
	if err != nil {
		if j.ready != nil {
			j.ready.CloseWithError(errAbandoned)
		}
		return vol, nil, fmt.Errorf("judge container: %w", err)
	}
	j.p = p
	// A judge that was started and is still waiting is stopped (its run
	// then removes its container); the Prepared's own removal does
	// nothing once the run has begun.
	cl.Add(func(context.Context) error { j.stop(); return nil })
	return vol, j, nil
}

// judgeSpec is the judge's sandbox, its input the tree input (nil when
// only the shape matters).
func (g *grade) judgeSpec(input []byte) sandbox.Spec {
	return sandbox.Spec{
		Run: g.req.Run, Phase: "judge", Image: g.req.JudgeImage, Cmd: g.judgeCmd, Env: []string{"TZ=UTC"},
		Trees:  []sandbox.Tree{{Dir: judgeRoot, Archive: input, Policy: judgePolicy}},
		Limits: sandbox.Limits{MemoryBytes: g.judgeMemory(), StdoutBytes: schema.MaxSize, StderrBytes: 64 << 10, KillOnOutputLimit: true, Wall: judgeWork},
	}
}

// Sizes of the judge's sandbox.
const (
	// judgeBaseMemory holds what the judge reads, twice (its input tree
	// is a tmpfs charged to its memory, and it reads the files into its
	// own): at most judge.MaxHiddenSize of hidden files,
	// judge.MaxOutputsSize of candidate outputs (outputsArchive sends no
	// more) and meta.json and the results, with more than half of it left
	// for its work. The default file size limit (sandbox.DefaultLimits,
	// 64 MiB) is above any file it reads whole (judge.MaxFileSize).
	judgeBaseMemory = 1 << 30
	// judgeFileMemory is what one file or directory of the judge's input
	// may cost beyond its bytes: a tmpfs inode and page, its tar header
	// and the judge's record of it. A task with many cases or expected
	// files gets memory for them on top of judgeBaseMemory, in steps of
	// judgeMemoryStep so that tasks share few pool shapes.
	judgeFileMemory = 8 << 10
	judgeMemoryStep = 256 << 20
)

// judgeMemory is the judge's memory limit: judgeBaseMemory, and more for
// a task whose input tree has more entries than a step of
// judgeFileMemory each pays for. It depends on the task alone, never on
// what the candidate wrote.
func (g *grade) judgeMemory() int64 {
	cs := g.task.Cases
	entries := int64(2 + len(cs.HiddenReads())) // meta.json, cases.json
	for i := range cs.Cases {
		// outputs/<i>/, result.json, files/ and the files the judge reads.
		entries += int64(3 + len(cs.Reads(g.task.Spec.Kind, i)))
	}
	extra := entries * judgeFileMemory
	if extra <= judgeMemoryStep {
		return judgeBaseMemory
	}
	steps := (extra + judgeMemoryStep - 1) / judgeMemoryStep
	return min(judgeBaseMemory+steps*judgeMemoryStep, sandbox.MaxLimits.MemoryBytes)
}

// judgeInput is the judge's input as an archive: the meta document and the
// files of the task's hidden directory the judge reads, then, when outputs
// is not nil, the candidate's outputs as outputsArchive lays them out.
func (g *grade) judgeInput(meta judge.Meta, outputs []byte) ([]byte, error) {
	var buf bytes.Buffer
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(&buf)
	if err := addFile(tw, "meta.json", metaJSON); err != nil {
		return nil, err
	}
	// Of the hidden directory, only what the judge reads: a data task's
	// input files, say, may be larger than its sandbox holds.
	cs := g.task.Cases
	for _, rel := range append([]string{judge.CasesFile}, cs.HiddenReads()...) {
		data, err := g.task.HiddenFile(rel)
		if err != nil {
			return nil, fmt.Errorf("the judge's copy of hidden/%s: %w", rel, err)
		}
		if err := addFile(tw, judge.HiddenDir+"/"+rel, data); err != nil {
			return nil, err
		}
	}
	if outputs != nil {
		if err := tarball.Copy(tw, bytes.NewReader(outputs), nil); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// judgeTree runs the judge in a sandbox the backend started ahead of time,
// its whole input (the trusted files and the candidate's outputs, through
// the firewall under judgePolicy) laid out read-only before it starts, and
// checks what it said against what it was asked.
func (g *grade) judgeTree(ctx context.Context, outs *candidate.Outputs, meta judge.Meta) (*schema.Verdict, error) {
	outputs, err := outputsArchive(outs, g.task.Cases, g.task.Spec.Kind)
	if err != nil {
		return nil, err
	}
	input, err := g.judgeInput(meta, outputs)
	if err != nil {
		return nil, err
	}
	g.logCheckers()
	g.log.Add("judge", "judge input sent", "bytes", len(input), "sha256", digest(input))
	res, err := g.eng.Run(ctx, g.judgeSpec(input))
	if err != nil {
		return nil, fmt.Errorf("judge phase: %w", err)
	}
	return g.judged(res, meta)
}

// logCheckers records the module and sha256 of every checker comparator
// the task's cases name: the verdict has no field for them (the task
// digest covers them), the log says which module decided.
func (g *grade) logCheckers() {
	cs := g.task.Cases
	seen := map[string]bool{}
	for _, c := range cs.Cases {
		cmp := cs.Comparator(c)
		if cmp.Kind != judge.KindChecker || seen[cmp.Module] {
			continue
		}
		seen[cmp.Module] = true
		data, err := g.task.HiddenFile(cmp.Module)
		if err != nil {
			g.log.Add("judge", "checker module missing", "module", cmp.Module)
			continue
		}
		g.log.Add("judge", "checker module", "module", cmp.Module, "sha256", digest(data))
	}
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

// outputsArchive lays the candidate's outputs out as the judge reads them
// (judge.ReadInput): outputs/<i>/result.json (written here, trusted) and
// the files judge.Cases.Reads names (candidate bytes), each whole when
// the judge reads it whole (judge.OutputBudget) and otherwise left out and
// marked too large in result.json, which fails its case (output_limit) as
// reading it would have. Nothing else goes on: what the judge does not
// read (stderr, a standard output not graded, files no case expects) must
// never decide whether the outputs fit the judge's sandbox, and so the
// candidate bytes sent are at most judge.MaxOutputsSize, whatever the
// task's limits let the candidate write.
func outputsArchive(outs *candidate.Outputs, cs *judge.Cases, kind schema.TaskKind) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	budget := judge.NewOutputBudget()
	for i, oc := range outs.Cases {
		dir := "outputs/" + strconv.Itoa(i) + "/"
		res := runResult(oc.Record)
		res.Error = schema.Clip(res.Error, maxResultError)
		type file struct {
			name string
			data []byte
		}
		var sent []file
		for k, rel := range cs.Reads(kind, i) {
			data, ok := oc.Stdout, true
			if rel != judge.StdoutFile {
				data, ok = oc.Files[strings.TrimPrefix(rel, judge.FilesDir+"/")]
			}
			switch {
			case !ok: // missing: the judge finds it missing
			case budget.Take(int64(len(data))):
				sent = append(sent, file{rel, data})
			default:
				res.TooLarge = append(res.TooLarge, k)
			}
		}
		rr, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		if err := addFile(tw, dir+judge.ResultFile, rr); err != nil {
			return nil, err
		}
		for _, f := range sent {
			if err := addFile(tw, dir+f.name, f.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// judge loads the outputs, runs the judge container and checks what it
// said against what it was asked.
func (g *grade) judge(ctx context.Context, vol string, jr *judgeRun, outs *candidate.Outputs, meta judge.Meta) (*schema.Verdict, error) {
	data, err := outputsArchive(outs, g.task.Cases, g.task.Spec.Kind)
	if err != nil {
		return nil, err
	}
	man, err := g.eng.CopyIn(ctx, g.req.Run, vol, bytes.NewReader(data), sandbox.CopyInOptions{Policy: judgePolicy})
	if err != nil {
		return nil, fmt.Errorf("load candidate outputs for the judge: %w", err)
	}
	g.log.Add("judge", "candidate outputs loaded", "files", len(man.Files), "bytes", man.TotalBytes)
	res, err := jr.result(ctx)
	if err != nil {
		return nil, fmt.Errorf("judge phase: %w", err)
	}
	return g.judged(res, meta)
}

// judged checks the judge's result: how it ended, and its verdict against
// the question it was asked.
func (g *grade) judged(res *sandbox.Result, meta judge.Meta) (*schema.Verdict, error) {
	g.log.Add("judge", "judge exited", "exit", string(res.Exit), "code", res.Code, "ms", res.Duration.Milliseconds(), "stdout_bytes", len(res.Stdout))
	if res.Exit == sandbox.ExitExited && res.Code == judge.ExitCheckerFailed {
		// The task's checker failed: a task defect, never the
		// candidate's FAIL. The judge's line names the module and its
		// sha256.
		return nil, &judgeError{schema.ReasonCheckerFailed, fmt.Errorf("the checker of the task failed: %s", checkerLine(res.Stderr))}
	}
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
	g.log.Add("judge", "verdict validated", "outcome", string(v.Outcome), "cases", len(v.Cases))
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
