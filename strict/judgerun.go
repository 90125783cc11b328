package strict

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/strictgrade/strictgrade/candidate"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// judgeWork bounds the judge's own work: from the moment its input is
// complete to its verdict. Its checkers alone may take
// judge.CheckerTotalTime, so it is that and a minute for the rest.
const judgeWork = judge.CheckerTotalTime + time.Minute

// startSlack is what a judge container started early may spend waiting for
// the engine on top of the candidate phase's own bound: starting and
// stopping the candidate's container on a loaded machine.
const startSlack = 2 * time.Minute

// maxEarlyWall bounds how long a judge started early may wait: a task whose
// candidate phase may take longer has its judge started when that phase
// ends, so that no judge waits for an hour holding memory.
const maxEarlyWall = 15 * time.Minute

// errAbandoned ends the handshake of a judge that will not be needed.
var errAbandoned = errors.New("the grade ended before the judge's input was complete")

// judgeRun is the judge's container. With the default judge command it
// takes the --wait-stdin handshake: it is started before its input is
// complete, blocks reading its standard input, and reads its volume once
// that input ends, which happens when the candidate's outputs are on the
// volume. For a task whose cases share one candidate container the judge is
// started as soon as it is prepared, so that its start overlaps the
// candidate phase; otherwise when the candidate phase ends, so that its
// start overlaps the loading of the outputs. A judge command of the
// caller's own (Request.JudgeCmd) knows no handshake and is started once
// its input is complete, as before.
type judgeRun struct {
	p sandbox.Prepared
	// ready is the judge's standard input; closing it says the input is
	// complete. Nil without the handshake.
	ready *io.PipeWriter
	// early says the judge starts as soon as it is prepared.
	early bool

	mu       sync.Mutex
	started  bool
	finished bool
	cancel   context.CancelFunc
	done     chan judgeResult
}

type judgeResult struct {
	res *sandbox.Result
	err error
}

// handshake reports whether the judge command is the default one, which
// takes --wait-stdin, and whether it should start as soon as it is
// prepared; wall is the container's wall-clock limit for that case.
func (g *grade) handshake() (ok, early bool, wall time.Duration) {
	if len(g.req.JudgeCmd) != 0 {
		return false, false, judgeWork
	}
	s := g.task.Spec
	if s.Isolation != task.PerCase && s.Kind == schema.KindFunction {
		// One candidate container: its phase is bounded by the wall
		// backstop of the cases' CPU time as the candidate package
		// bounds it, stretched as far as a starved sandbox's may be,
		// plus the engine.
		bound := sandbox.Stretched(sandbox.Backstop(candidate.SharedCPU(s.Limits.CaseTime(), len(g.task.Cases.Cases))))
		if wall := bound + startSlack + judgeWork; wall <= maxEarlyWall {
			return true, true, wall
		}
	}
	return true, false, startSlack + judgeWork
}

// start starts the judge's container once.
func (j *judgeRun) start(ctx context.Context) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.started {
		return
	}
	j.started = true
	rctx, cancel := context.WithCancel(ctx)
	j.cancel = cancel
	j.done = make(chan judgeResult, 1)
	go func() {
		res, err := j.p.Run(rctx)
		j.done <- judgeResult{res, err}
	}()
}

// result says the input is complete and waits for the judge's answer,
// for at most judgeWork.
func (j *judgeRun) result(ctx context.Context) (*sandbox.Result, error) {
	j.start(ctx)
	if j.ready != nil {
		j.ready.Close()
	}
	t := time.NewTimer(judgeWork)
	defer t.Stop()
	var r judgeResult
	select {
	case r = <-j.done:
	case <-t.C:
		j.cancel()
		<-j.done
		r = judgeResult{err: fmt.Errorf("no verdict %v after the input was complete", judgeWork)}
	}
	j.mu.Lock()
	j.finished = true
	j.mu.Unlock()
	return r.res, r.err
}

// stop ends a judge that was started and will not be asked, and waits for
// its run to return, which removes its container. It does nothing to a
// judge that was never started or has answered.
func (j *judgeRun) stop() {
	j.mu.Lock()
	started, finished := j.started, j.finished
	j.finished = true
	j.mu.Unlock()
	// Cancel before ending the handshake, so that a judge never reads a
	// volume whose outputs are incomplete while its run is still watched.
	if started && !finished {
		j.cancel()
	}
	if j.ready != nil {
		j.ready.CloseWithError(errAbandoned)
	}
	if started && !finished {
		<-j.done
	}
}
