// Package grading holds what a grade of either tier shares, so that the
// strict pipeline (package strict) and the compat oracle (package compat)
// are written to one shape: the header the controller issues with each
// request (run id, nonce, the host's description), the grade's event log,
// and the way a grade that could not finish becomes an ERROR verdict.
//
// Nothing here runs a sandbox or signs: the tiers run, the controller
// (package controller) signs.
package grading

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/strictgrade/strictgrade/internal/version"
	"github.com/strictgrade/strictgrade/schema"
)

// ErrBadRequest is wrapped by the error a tier returns, with no outcome,
// for a request it cannot start: a malformed header, no task, no image.
// Nothing was graded; it is neither the grader's failure nor the
// submission's.
var ErrBadRequest = errors.New("invalid grade request")

// Header is what every grade request carries besides its task and
// submission. The controller fills it; a caller of a tier package directly
// may leave any field empty for a fresh or default value.
type Header struct {
	// Run is the run id: [a-z0-9-], 1 to 64 bytes. It labels every
	// container and volume of the grade and names the grade in its
	// verdict; empty means a fresh one (NewRunID).
	Run string
	// Nonce is the nonce the request was issued with, recorded in the
	// verdict so that a verifier can refuse a replay; empty means a fresh
	// one (schema.NewNonce).
	Nonce string
	// ControllerVersion and Runtime describe the host in the verdict;
	// empty ControllerVersion means this module's version.
	ControllerVersion string
	Runtime           string
	// Progress, when set, receives every event of the grade's log as it
	// is added. It is called from the grading goroutines, one call at a
	// time per grade.
	Progress func(Event)
}

// Patterns of the header fields that end up in the verdict.
var (
	runPattern     = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	runtimePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]{0,63}$`)
)

// Complete checks h and returns it with the empty fields filled. Its error
// wraps ErrBadRequest.
func (h Header) Complete() (Header, error) {
	switch {
	case h.Run != "" && !runPattern.MatchString(h.Run):
		return h, fmt.Errorf("%w: run id %q must be [a-z0-9-] of at most 64 bytes", ErrBadRequest, h.Run)
	case h.Runtime != "" && !runtimePattern.MatchString(h.Runtime):
		return h, fmt.Errorf("%w: runtime %q must match %s", ErrBadRequest, h.Runtime, runtimePattern)
	case h.Nonce != "" && !schema.ValidNonce(h.Nonce):
		return h, fmt.Errorf("%w: the nonce must be 16 to 128 characters of A-Z, a-z, 0-9, '_' and '-'", ErrBadRequest)
	case h.ControllerVersion != "" && (len(h.ControllerVersion) > 128 || !printable(h.ControllerVersion)):
		return h, fmt.Errorf("%w: the controller version must be at most 128 printable ASCII characters", ErrBadRequest)
	}
	if h.Run == "" {
		h.Run = NewRunID()
	}
	if h.Nonce == "" {
		h.Nonce = schema.NewNonce()
	}
	if h.ControllerVersion == "" {
		h.ControllerVersion = version.String()
	}
	return h, nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Controller returns the verdict's description of the host.
func (h Header) Controller() schema.Controller {
	return schema.Controller{Version: h.ControllerVersion, Runtime: h.Runtime}
}

// NewRunID returns a fresh run id: "g" and ten hex digits.
func NewRunID() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go >= 1.24)
	return "g" + hex.EncodeToString(b[:])
}

// Event is one entry of a grade's log.
type Event struct {
	Time    time.Time      `json:"time"`
	RunID   string         `json:"run_id"`
	Phase   string         `json:"phase"`
	Message string         `json:"message"`
	Attrs   map[string]any `json:"attrs,omitempty"`
}

// Log is a grade's event log. It is safe for concurrent use: the phases of
// a grade add to it from several goroutines.
type Log struct {
	run      string
	progress func(Event)
	mu       sync.Mutex
	events   []Event
}

// NewLog returns the empty log of the grade h names; every event is also
// handed to h.Progress.
func NewLog(h Header) *Log {
	return &Log{run: h.Run, progress: h.Progress}
}

// Add appends an event; kv are attribute names and values in turn.
func (l *Log) Add(phase, msg string, kv ...any) {
	e := Event{Time: time.Now().UTC(), RunID: l.run, Phase: phase, Message: msg}
	if len(kv) > 0 {
		e.Attrs = make(map[string]any, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			e.Attrs[fmt.Sprint(kv[i])] = kv[i+1]
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	if l.progress != nil {
		l.progress(e)
	}
}

// Events returns a copy of the log so far.
func (l *Log) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// Pairs turns an event's attributes back into the name, value pairs Add
// takes, in no particular order.
func (e Event) Pairs() []any {
	out := make([]any, 0, 2*len(e.Attrs))
	for k, v := range e.Attrs {
		out = append(out, k, v)
	}
	return out
}

// Errored turns v, a tier's skeleton verdict, into the ERROR verdict of a
// grade that could not finish: code is the reason code (empty means
// schema.ReasonInfrastructure) and reason the grader's own account, already
// cut and escaped the tier's way. Everything else v records (task,
// submission, run, the cases as not run) stays, so that the ERROR is bound
// to what was being graded.
func Errored(v *schema.Verdict, code, reason string) *schema.Verdict {
	if code == "" {
		code = schema.ReasonInfrastructure
	}
	v.Outcome = schema.OutcomeError
	v.ReasonCode = code
	v.Reason = reason
	return v
}
