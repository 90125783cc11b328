package task

import (
	"bytes"
	"io"
	"slices"

	"github.com/strictgrade/strictgrade/schema"
)

// Public is the part of a task the agent phase may know: what the task is,
// which artifacts it must leave, the limits its submission will run under,
// and the files of public/. It holds no case, no expected value and no way
// back to the task or its hidden files, so that whatever drives an agent —
// the agent box, a harness's model loop — can be handed it without being
// handed the answers. Make one with Task.Public; it never changes.
type Public struct {
	id        string
	kind      schema.TaskKind
	artifacts []string
	limits    Limits
	files     []byte
}

// Public returns the task's public view.
func (t *Task) Public() *Public {
	p := &Public{id: t.Spec.ID, kind: t.Spec.Kind, artifacts: slices.Clone(t.Spec.Artifacts), limits: t.Spec.Limits}
	if t.snap != nil {
		p.files = t.snap.public
	}
	return p
}

// ID returns the task's id.
func (p *Public) ID() string { return p.id }

// Kind returns the task's kind: function, command or data.
func (p *Public) Kind() schema.TaskKind { return p.kind }

// Artifacts returns the paths, relative to the submission root, that a
// submission must hold; only they are graded.
func (p *Public) Artifacts() []string { return slices.Clone(p.artifacts) }

// Limits returns the limits each case of a submission runs under.
func (p *Public) Limits() Limits { return p.limits }

// Files returns the canonical archive of the task's public/ directory as
// Load read it, with entries named relative to it: the working copy an
// agent starts from. A Public of a task that Load did not make has an
// empty archive.
func (p *Public) Files() io.Reader {
	if p.files == nil {
		return bytes.NewReader(emptyArchive)
	}
	return bytes.NewReader(p.files)
}

// emptyArchive is a tar archive without entries: its two zero blocks.
var emptyArchive = make([]byte, 1024)
