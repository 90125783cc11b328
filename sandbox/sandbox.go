package sandbox

import (
	"context"
	"io"

	"github.com/strictgrade/strictgrade/firewall"
)

// Runner runs one sandbox to completion: it creates it from spec, feeds
// Spec.Stdin, enforces Spec.Limits, collects Spec.Collect and the StreamOut
// directory through the firewall, and removes it on every path.
type Runner interface {
	Run(ctx context.Context, spec Spec) (*Result, error)
}

// Preparer makes a sandbox ready ahead of time, so that a phase starts the
// moment its input exists.
type Preparer interface {
	// Prepare creates the sandbox for spec, with its profile checked,
	// without starting the workload.
	Prepare(ctx context.Context, spec Spec) (Prepared, error)
}

// Prepared is a sandbox made ready by Prepare. It runs once; Close removes
// it if Run has not. Call Close on every path.
type Prepared interface {
	// Run starts the workload and behaves as Runner.Run from there on.
	// A second call is ErrSpec.
	Run(ctx context.Context) (*Result, error)
	// Close removes the sandbox if it has not run; it is safe to call more
	// than once, and removes even when ctx is cancelled.
	Close(ctx context.Context)
}

// LiveVolumes is implemented by a backend whose running sandboxes see what
// is copied into their volumes after Run began, such as Docker's, whose
// volumes are directories the container mounts. Every backend's workload
// sees what a volume held when Run began (the conformance suite checks it);
// only on such a backend may a phase start a sandbox and fill its volumes
// after, as the strict tier does to start its judge early (ADR 0010).
type LiveVolumes interface {
	LiveVolumes() bool
}

// Warmer is implemented by a backend that can start sandboxes before their
// work exists, so that a sandbox's start is off the critical path of the
// phase that uses it (the Docker backend, for specs with trees; ADR 0013).
type Warmer interface {
	// Warm starts up to n sandboxes of spec's shape — everything of spec
	// but its run, command, standard input and the content of its trees
	// — for the next Prepare or Run calls of that shape. Each is used
	// once or discarded unused; none outlives the backend's Close. It
	// reports false, doing nothing, when the backend cannot start a
	// sandbox of that shape ahead of time; then a phase is better off
	// preparing its sandbox as it always did.
	Warm(ctx context.Context, spec Spec, n int) bool
}

// Starter starts long-lived sandboxes that take commands: the agent phase.
type Starter interface {
	// Start creates and starts a session from spec. Spec.Cmd and
	// Spec.StreamOut are not used: the main process only waits, for at
	// most the wall limit, after which the backend kills the sandbox
	// whether or not anyone calls Close.
	Start(ctx context.Context, spec Spec) (Session, error)
}

// Session is a started sandbox that takes commands and files one at a
// time. Its calls are serialised. Close it on every path.
type Session interface {
	// ID is the backend's name for the sandbox.
	ID() string
	// ImageID is the image the session runs, as the backend resolved it.
	ImageID() string
	// Exec runs one command as User, with its own wall limit (killed
	// inside the sandbox at the limit: ExitTimeout) and bounded output.
	// A command that outlives its limit by a grace, or a cancelled ctx,
	// kills the whole session: ErrSessionClosed from then on.
	Exec(ctx context.Context, e ExecSpec) (*ExecResult, error)
	// CopyIn filters archive through the firewall and extracts the
	// canonical result at dir, an existing directory at or below a
	// writable mount of the session; nothing in the sandbox runs while
	// the files land.
	CopyIn(ctx context.Context, dir string, archive io.Reader, opts CopyInOptions) (*firewall.Manifest, error)
	// CopyOut returns the directory or regular file at p through the
	// firewall, with nothing running in the sandbox while it is read. A
	// link at p or on the way to it, or anything else that is not a
	// directory or regular file, is ErrCollect.
	CopyOut(ctx context.Context, p string, pol firewall.Policy) (Collected, error)
	// Stop kills every process of the session and keeps its files for
	// CopyOut; it is safe to call more than once.
	Stop(ctx context.Context) error
	// Close removes the session; it is safe to call more than once, and
	// removes even when ctx is cancelled.
	Close(ctx context.Context)
}

// Volumes are named, labelled directories that outlive a single sandbox:
// how the Docker backend lays out read-only inputs and an agent's working
// copy. Every archive goes in through the firewall.
type Volumes interface {
	// NewVolume creates an empty volume, its root owned by User, and
	// returns its name.
	NewVolume(ctx context.Context, run, phase string) (string, error)
	// NewVolumeWith creates a volume filled with archive's canonical
	// form; a rejected archive creates nothing.
	NewVolumeWith(ctx context.Context, run, phase string, archive io.Reader, opts CopyInOptions) (string, *firewall.Manifest, error)
	// CopyIn extracts archive's canonical form at the root of a volume.
	CopyIn(ctx context.Context, run, volume string, archive io.Reader, opts CopyInOptions) (*firewall.Manifest, error)
	// RemoveVolume removes a volume; a missing one is not an error.
	RemoveVolume(ctx context.Context, name string) error
}

// Images resolves image references.
type Images interface {
	// ImageID returns the ID of the image ref names, as verdicts record
	// it ("sha256:" and 64 hex digits).
	ImageID(ctx context.Context, ref string) (string, error)
}

// Reaper finds and removes what runs left behind, by label.
type Reaper interface {
	// Leftovers lists the objects labelled with run that still exist,
	// each as "kind/name" (container/…, volume/…). After a run's phases
	// have returned there should be none.
	Leftovers(ctx context.Context, run string) ([]string, error)
	// GC removes managed objects selected by opts.
	GC(ctx context.Context, opts GCOptions) (GCReport, error)
}

// Backend is everything strictgrade's phases need from a place to run
// hostile code. Package sandbox/docker returns the Docker backend;
// sandboxtest.Fake is an in-process one for tests and examples.
type Backend interface {
	Runner
	Preparer
	Starter
	Volumes
	Images
	Reaper
	// Runtime names the backend and its runtime as verdicts record it,
	// e.g. "docker/runc" or "docker/runsc".
	Runtime() string
	// Close releases the backend's connections; sandboxes it made are
	// already gone.
	Close() error
}
