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
	// GC removes leftover containers and volumes carrying the managed
	// label: by default only those whose owner process is gone or that
	// are older than a grade can live (see GCOptions).
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
	// StreamOut, when set, gives the container a writable directory with a
	// size and inode quota, and returns its content through the firewall
	// (under CollectPolicy) in Result.Collected[StreamOut.Dir]. See
	// StreamOut for how, and for what it requires of the image.
	StreamOut *StreamOut
}

// StreamOut is a writable output directory with a quota. The engine mounts a
// tmpfs at Dir with a size cap and an inode cap, owned by the sandbox user
// and charged to the container's memory limit, so that whatever the
// container writes there can neither fill the daemon's disk nor outlive the
// container.
//
// The Docker copy API cannot read a tmpfs, so the content leaves on standard
// output instead. Cmd runs under a small trusted wrapper, started as
// "python3 -I -c <script>": the image must provide python3 (3.9 or later)
// on the PATH given in Env (the runtime images do). The wrapper keeps the
// container's standard output for itself and gives the command standard
// error as its standard output; it runs the command, waits for it, kills
// every other process it is allowed to signal until none is left, so that
// nothing changes Dir any more, and then writes Dir as a tar archive on
// standard output: entries named below the base name of Dir, as a copy out
// would name them, in lexical order, without following links, with owners
// and times zeroed. Links, named pipes, devices, sockets, sparse files and
// files with more than one name are written as entries the firewall
// rejects, never skipped. The container's exit status is the command's (128
// plus the signal number when a signal ended it).
//
// The wrapper is trusted only in what it does after the command is gone;
// the command runs as the same user and may kill it or write into its
// stream, so the stream is treated as the command's output: it is capped at
// the most the wrapper can write for the two caps (beyond it the container
// is killed as ExitOutputLimit) and filtered like any collected directory. A stream the
// firewall refuses, whether malformed or holding a refused entry, makes Run
// return ErrCollect. The archive is only read when the container ended by
// itself (ExitExited); after a timeout, an OOM kill or an output-limit kill,
// Result.Collected has no entry for Dir.
//
// With StreamOut, Result.Stdout is empty and Limits.StdoutBytes and
// KillOnOutputLimit do not apply: what the command prints arrives on
// standard error, captured up to Limits.StderrBytes. The wrapper counts
// against Limits.PIDs and Limits.MemoryBytes like the command. Sessions
// (Start) take no StreamOut.
type StreamOut struct {
	// Dir is where the tmpfs is mounted: an absolute, clean path other
	// than "/" that neither contains nor lies within /tmp, a volume mount
	// or a Spec.Collect path. Required.
	Dir string
	// Bytes caps the size of the tmpfs; zero means
	// DefaultStreamOutBytes, and at most MaxStreamOutBytes.
	Bytes int64
	// Inodes caps the number of files and directories in the tmpfs,
	// its root included; zero means DefaultStreamOutInodes, and at most
	// MaxStreamOutInodes.
	Inodes int64
}

// Caps of StreamOut.
const (
	DefaultStreamOutBytes  int64 = 16 << 20
	MaxStreamOutBytes      int64 = 1 << 30
	DefaultStreamOutInodes int64 = 4096
	MaxStreamOutInodes     int64 = 1 << 16
)

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

// GCOptions select what GC removes. The zero value removes every abandoned
// managed object.
type GCOptions struct {
	Run       string        // only objects of this run; empty means all managed objects
	OlderThan time.Duration // only objects created at least this long ago
	// All removes the selected objects whatever their owner, including
	// those of grades running in other processes. By default GC removes
	// only abandoned objects: their owner process is gone (same boot and
	// pid namespace, and the pid is free or names a process started at
	// another time), or they are older than MaxAge.
	All bool
	// MaxAge is the age past which an object is abandoned whatever its
	// owner; zero means DefaultMaxAge. It is how objects made on another
	// machine, before a reboot or by an older strictgrade (without owner
	// labels) are reaped.
	MaxAge time.Duration
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
}

// GCReport lists what GC removed, or would remove with DryRun.
type GCReport struct {
	Containers []string
	Volumes    []string
	// Kept counts the selected objects left alone because their owner
	// is alive (never with All).
	Kept int
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
