package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
)

// Label keys put on every object the engine creates.
const (
	LabelManaged = "dev.strictgrade.managed" // always "true"
	LabelRun     = "dev.strictgrade.run"     // the run id
	LabelPhase   = "dev.strictgrade.phase"   // agent, candidate, judge, oracle, loader …
	LabelRecipe  = "dev.strictgrade.recipe"  // images: hash of the build recipe
	LabelImage   = "dev.strictgrade.image"   // images: logical name, e.g. "python"
)

// SandboxUser is the numeric user and group every container runs as.
const SandboxUser = "65532:65532"

// SandboxUID is the numeric id behind SandboxUser.
const SandboxUID = 65532

// Errors returned by the engine.
var (
	// ErrPreflight means the daemon lacks something the hardened profile
	// needs (seccomp, the requested runtime, a cgroup controller).
	ErrPreflight = errors.New("engine: preflight failed")
	// ErrProfile means the daemon did not apply the hardened profile as
	// asked: a create warning, or an inspect that disagrees with the request.
	ErrProfile = errors.New("engine: hardened profile not applied")
	// ErrSpec means a Spec or Mount is malformed.
	ErrSpec = errors.New("engine: invalid spec")
	// ErrCollect means what a container left at a requested path was
	// refused: it is not a directory or regular file, or the firewall
	// rejected its content. A daemon failure is a different error.
	ErrCollect = errors.New("engine: collect failed")
	// ErrProtocol means the daemon's attach stream broke its framing.
	ErrProtocol = errors.New("engine: attach stream protocol violation")
)

// Engine is what strictgrade's phases need from a container runtime. The
// Docker implementation is returned by NewDocker; tests may use a fake.
type Engine interface {
	// NewVolume creates an empty labelled volume and returns its name.
	NewVolume(ctx context.Context, run, phase string) (string, error)
	// NewVolumeWith creates a volume filled with archive's canonical form
	// (through the firewall), in one loader container.
	NewVolumeWith(ctx context.Context, run, phase string, archive io.Reader, opts CopyInOptions) (string, *firewall.Manifest, error)
	// CopyIn passes archive through the firewall under policy and extracts
	// the canonical result into the volume at its root, using a loader
	// container that is never started.
	CopyIn(ctx context.Context, run, volume string, archive io.Reader, opts CopyInOptions) (*firewall.Manifest, error)
	// Run creates a hardened container from spec, runs it to completion
	// under its limits, collects the requested paths through the firewall,
	// and removes the container.
	Run(ctx context.Context, spec Spec) (*Result, error)
	// RemoveVolume removes a volume; a missing volume is not an error.
	RemoveVolume(ctx context.Context, name string) error
	// GC removes leftover containers and volumes carrying the managed label.
	GC(ctx context.Context, opts GCOptions) (GCReport, error)
}

// Mount attaches a volume to a container. Volumes are the only mounts the
// profile allows.
type Mount struct {
	Volume   string
	Target   string // absolute path inside the container
	ReadOnly bool
}

// Limits bound what a container may consume. Zero fields take the defaults
// in DefaultLimits; values above MaxLimits are refused.
type Limits struct {
	Wall        time.Duration // wall-clock limit, enforced with SIGKILL
	MemoryBytes int64         // memory, swap is never granted
	PIDs        int64         // process/thread count
	NanoCPUs    int64         // CPU quota in 1e-9 CPUs
	TmpfsBytes  int64         // size of the /tmp tmpfs (counts against memory)
	FileBytes   int64         // RLIMIT_FSIZE: largest file a process may write
	OpenFiles   int64         // RLIMIT_NOFILE
	StdoutBytes int64         // captured stdout cap
	StderrBytes int64         // captured stderr cap
	// KillOnOutputLimit stops the container as soon as standard output
	// exceeds its cap instead of draining and discarding the rest.
	// Standard error past its cap is always drained and dropped.
	KillOnOutputLimit bool
}

// DefaultLimits are applied to zero fields of Limits.
var DefaultLimits = Limits{
	Wall:        60 * time.Second,
	MemoryBytes: 512 << 20,
	PIDs:        128,
	NanoCPUs:    1e9,
	TmpfsBytes:  64 << 20,
	FileBytes:   64 << 20,
	OpenFiles:   1024,
	StdoutBytes: 1 << 20,
	StderrBytes: 256 << 10,
}

// MaxLimits are the largest values a Spec may ask for.
var MaxLimits = Limits{
	Wall:        2 * time.Hour,
	MemoryBytes: 16 << 30,
	PIDs:        4096,
	NanoCPUs:    16e9,
	TmpfsBytes:  4 << 30,
	FileBytes:   8 << 30,
	OpenFiles:   65536,
	StdoutBytes: 256 << 20,
	StderrBytes: 256 << 20,
}

// Spec describes one container run. It deliberately has no field for
// capabilities, privileges, networks, binds, devices or namespaces.
type Spec struct {
	Run     string // run id, recorded as a label; required
	Phase   string // phase, recorded as a label; required
	Image   string // image ID or reference; required
	Cmd     []string
	Env     []string // added to the image's own ENV; nothing comes from the host
	WorkDir string
	Stdin   []byte // fed to the process, then closed; nil means no stdin
	Mounts  []Mount
	Limits  Limits
	// Collect lists directories (mount targets or below) copied out after
	// the container has exited, each through the firewall under
	// CollectPolicy.
	Collect       []string
	CollectPolicy firewall.Policy
	// Runtime selects an OCI runtime such as "runsc"; empty is the daemon's
	// default. The preflight checks that it exists.
	Runtime string
}

// ExitKind classifies how a container stopped.
type ExitKind string

// The exit kinds, in the order of precedence used when several apply.
const (
	ExitTimeout     ExitKind = "timeout"      // killed at the wall-clock limit
	ExitOOM         ExitKind = "oom"          // killed by the memory cgroup
	ExitOutputLimit ExitKind = "output_limit" // killed after exceeding an output cap
	ExitExited      ExitKind = "exited"       // ended by itself, see Code
)

// Result is the outcome of Run.
type Result struct {
	ContainerID string
	ImageID     string
	Exit        ExitKind
	Code        int // exit status as reported by the daemon
	Stdout      []byte
	Stderr      []byte
	// StdoutTruncated and StderrTruncated report that a stream passed its
	// cap; the captured bytes are its head.
	StdoutTruncated bool
	StderrTruncated bool
	Duration        time.Duration
	// Collected holds, per Spec.Collect path, the canonical archive the
	// firewall produced and its manifest.
	Collected map[string]Collected
}

// Collected is one directory copied out through the firewall.
type Collected struct {
	Archive  []byte
	Manifest *firewall.Manifest
}

// CopyInOptions tune CopyIn.
type CopyInOptions struct {
	Policy firewall.Policy
	// Writable makes the extracted files owned by the sandbox user so that
	// a container may change them; by default they are owned by root and
	// read-only to the sandbox user.
	Writable bool
}

// GCOptions select what GC removes.
type GCOptions struct {
	Run       string        // only objects of this run; empty means all managed objects
	OlderThan time.Duration // only objects created at least this long ago
}

// GCReport lists what GC removed.
type GCReport struct {
	Containers []string
	Volumes    []string
}

// resolve fills zero limits with defaults and rejects values above the maxima.
func (l Limits) resolve() (Limits, error) {
	out := l
	type field struct {
		name     string
		v        *int64
		def, max int64
	}
	wall, defWall, maxWall := int64(out.Wall), int64(DefaultLimits.Wall), int64(MaxLimits.Wall)
	fields := []field{
		{"wall", &wall, defWall, maxWall},
		{"memory", &out.MemoryBytes, DefaultLimits.MemoryBytes, MaxLimits.MemoryBytes},
		{"pids", &out.PIDs, DefaultLimits.PIDs, MaxLimits.PIDs},
		{"cpus", &out.NanoCPUs, DefaultLimits.NanoCPUs, MaxLimits.NanoCPUs},
		{"tmpfs", &out.TmpfsBytes, DefaultLimits.TmpfsBytes, MaxLimits.TmpfsBytes},
		{"file size", &out.FileBytes, DefaultLimits.FileBytes, MaxLimits.FileBytes},
		{"open files", &out.OpenFiles, DefaultLimits.OpenFiles, MaxLimits.OpenFiles},
		{"stdout", &out.StdoutBytes, DefaultLimits.StdoutBytes, MaxLimits.StdoutBytes},
		{"stderr", &out.StderrBytes, DefaultLimits.StderrBytes, MaxLimits.StderrBytes},
	}
	for _, f := range fields {
		switch {
		case *f.v < 0:
			return Limits{}, fmt.Errorf("%w: negative %s limit", ErrSpec, f.name)
		case *f.v == 0:
			*f.v = f.def
		case *f.v > f.max:
			return Limits{}, fmt.Errorf("%w: %s limit %d above maximum %d", ErrSpec, f.name, *f.v, f.max)
		}
	}
	if out.MemoryBytes < 8<<20 {
		return Limits{}, fmt.Errorf("%w: memory limit below 8 MiB", ErrSpec)
	}
	out.Wall = time.Duration(wall)
	return out, nil
}
