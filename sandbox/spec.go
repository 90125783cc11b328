package sandbox

import (
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
)

// Label keys every backend puts on the objects it creates.
const (
	LabelManaged = "dev.strictgrade.managed" // always "true"
	LabelRun     = "dev.strictgrade.run"     // the run id
	LabelPhase   = "dev.strictgrade.phase"   // agent, candidate, judge, oracle, loader …
	LabelRecipe  = "dev.strictgrade.recipe"  // images: hash of the build recipe
	LabelImage   = "dev.strictgrade.image"   // images: logical name, e.g. "python"
)

// User is the numeric user and group every workload runs as, and UID the
// number behind it.
const (
	User = "65532:65532"
	UID  = 65532
)

// ValidName reports whether s may be a run id or a phase: 1 to 64 bytes of
// [a-z0-9-], so that it fits a label value and an object name on every
// backend.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// Mount attaches a volume to a sandbox. Volumes are the only mounts a spec
// can ask for.
type Mount struct {
	Volume   string
	Target   string // absolute path inside the sandbox
	ReadOnly bool
	// Policy bounds what a writable mount holds when its workload has
	// ended, on a backend that keeps volumes outside the sandbox and so
	// carries a writable mount's content back out through the firewall
	// (Kubernetes): a tree the firewall refuses under it is ErrCollect.
	// The zero value is the firewall's default. Docker's volumes stay
	// where they are and never cross the firewall on the way out; a
	// read-only mount ignores Policy.
	Policy firewall.Policy
}

// Limits bound what a sandbox may consume. Zero fields take DefaultLimits;
// values above MaxLimits are refused.
type Limits struct {
	// CPU, when above zero, is a CPU-time budget: the CPU time of every
	// process in the sandbox together, as the sandbox's own accounting
	// measures it (the container's cgroup; under gVisor, the user-space
	// kernel's work as well), enforced with SIGKILL (ExitTimeout,
	// Result.Limit LimitCPU). Wall is then a backstop, by default
	// Backstop(CPU), for a workload that sleeps or blocks, stretched up
	// to Stretched(Wall) while the host starves the sandbox. A backend that
	// cannot measure CPU time enforces a wall-clock limit of Unmetered(CPU)
	// instead (Result.CPUMeasured false).
	CPU         time.Duration
	Wall        time.Duration // wall-clock limit, enforced with SIGKILL
	MemoryBytes int64         // memory; swap is never granted
	PIDs        int64         // process/thread count
	NanoCPUs    int64         // CPU quota in 1e-9 CPUs
	TmpfsBytes  int64         // size of the /tmp tmpfs (counts against memory)
	FileBytes   int64         // RLIMIT_FSIZE: largest file a process may write
	OpenFiles   int64         // RLIMIT_NOFILE
	StdoutBytes int64         // captured stdout cap
	StderrBytes int64         // captured stderr cap
	// KillOnOutputLimit stops the sandbox as soon as standard output
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

// BackstopFactor and BackstopSlack make the wall-clock backstop of a
// CPU-time budget (Backstop). A workload that gets at least half a CPU
// spends its budget within twice the budget's time, so the backstop is
// reached only by one that sleeps, blocks, or gets less than half a CPU
// while it wants more. The last is the host's doing, and the sandbox's own
// accounting tells it apart: a thread of it then waited for a CPU at least
// StarvedShare of the run while the CPUs it may use were idle less than
// that share of one CPU (Starved; a workload's own threads cannot make one
// of them wait that long without spending the budget first). A backend that measures CPU time then
// stretches the backstop, a backstop at a time, up to StretchFactor times
// it, so that a starved workload still spends its budget and meets the
// verdict it would meet on a quiet host; one still starved at the end of
// the stretch is ErrOverloaded, never a timeout. A workload that sleeps or
// blocks is not starved and meets the backstop (ExitTimeout, LimitWall).
const (
	BackstopFactor = 2
	BackstopSlack  = 2 * time.Second
	StretchFactor  = 20
)

// StarvedShare is the share of a run's wall time one of the sandbox's
// threads must have spent waiting for a CPU (its run-queue delay) to count
// as starved by the host.
const StarvedShare = 0.5

// Backstop is the wall-clock backstop of a CPU-time budget: BackstopFactor
// times it plus BackstopSlack, at most MaxLimits.Wall.
func Backstop(cpu time.Duration) time.Duration {
	return min(BackstopFactor*cpu+BackstopSlack, MaxLimits.Wall)
}

// Unmetered is the wall-clock limit that stands in for a CPU-time budget
// on a backend that cannot measure CPU time: the budget plus BackstopSlack
// (for the engine's own start and stop), at most MaxLimits.Wall.
func Unmetered(cpu time.Duration) time.Duration {
	return min(cpu+BackstopSlack, MaxLimits.Wall)
}

// Stretched is the longest a run with wall-clock backstop wall may last
// while the host starves it: StretchFactor times wall, at most
// MaxLimits.Wall.
func Stretched(wall time.Duration) time.Duration {
	return min(StretchFactor*wall, MaxLimits.Wall)
}

// MinMemoryBytes is the smallest memory limit a spec may ask for.
const MinMemoryBytes = 8 << 20

// Resolve fills zero limits with DefaultLimits and refuses negative values
// and values above MaxLimits (ErrSpec).
func (l Limits) Resolve() (Limits, error) {
	out := l
	if out.CPU < 0 {
		return Limits{}, fmt.Errorf("%w: negative cpu limit", ErrSpec)
	}
	if out.CPU > MaxLimits.Wall {
		return Limits{}, fmt.Errorf("%w: cpu limit %v above maximum %v", ErrSpec, out.CPU, MaxLimits.Wall)
	}
	if out.CPU > 0 && out.Wall == 0 {
		out.Wall = Backstop(out.CPU)
	}
	wall, defWall, maxWall := int64(out.Wall), int64(DefaultLimits.Wall), int64(MaxLimits.Wall)
	fields := []struct {
		name     string
		v        *int64
		def, max int64
	}{
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
	if out.MemoryBytes < MinMemoryBytes {
		return Limits{}, fmt.Errorf("%w: memory limit below 8 MiB", ErrSpec)
	}
	out.Wall = time.Duration(wall)
	return out, nil
}

// Spec describes one sandboxed run. It deliberately has no field for
// capabilities, privileges, networks, host paths, devices or namespaces.
type Spec struct {
	Run     string // run id, recorded as a label; required, see ValidName
	Phase   string // phase, recorded as a label; required, see ValidName
	Image   string // image ID or reference; required
	Cmd     []string
	Env     []string // the complete environment added to the image's own; nothing comes from the host
	WorkDir string
	// Stdin is streamed to the workload's standard input, which is then
	// closed; nil means no standard input. It is read once, from the
	// moment the sandbox starts, so a prepared sandbox may be handed a
	// pipe whose writer has not written yet.
	Stdin  io.Reader
	Mounts []Mount
	// Trees are read-only directories laid out before the workload
	// starts (see Tree); their content is charged to the sandbox's memory
	// where the backend keeps them in a tmpfs.
	Trees  []Tree
	Limits Limits
	// Collect lists directories (mount targets or below) copied out after
	// the workload has exited, each through the firewall under
	// CollectPolicy, into Result.Collected.
	Collect       []string
	CollectPolicy firewall.Policy
	// Runtime selects an OCI runtime such as "runsc"; empty is the
	// backend's default. A backend refuses one it does not have.
	Runtime string
	// StreamOut, when set, gives the workload a writable directory with a
	// size and inode quota whose content leaves through the firewall
	// (under CollectPolicy) in Result.Collected[StreamOut.Dir].
	StreamOut *StreamOut
}

// StreamOut is a writable output directory with a quota: a tmpfs (or
// equivalent) at Dir capped in bytes and inodes, owned by User, charged to
// the sandbox's memory and gone with it, so what a workload writes there
// can neither fill the host's disk nor outlive the run.
//
// Its content leaves as an archive in the firewall's canonical layout,
// entries named below the base name of Dir (as a copy out would name
// them), read only after every process of the workload is gone. Links,
// pipes, devices, sockets, sparse files and files with several names are
// written as entries the firewall rejects, never skipped. The archive is
// the workload's to forge, so CollectPolicy, not the tmpfs, is what bounds
// it: an archive the firewall refuses is ErrCollect. It is read only when
// the workload ended by itself (ExitExited); after a timeout, an OOM kill
// or an output kill, Result.Collected has no entry for Dir.
//
// With StreamOut, Result.Stdout is empty and Limits.StdoutBytes and
// KillOnOutputLimit do not apply: what the command prints arrives on
// standard error. The Docker backend needs python3 (3.9 or later) in the
// image to write the archive. Sessions take no StreamOut.
type StreamOut struct {
	// Dir is where the directory is mounted: an absolute, clean path
	// other than "/" that neither contains nor lies within /tmp, a volume
	// mount or a Spec.Collect path. Required.
	Dir string
	// Bytes caps its size; zero means DefaultStreamOutBytes, at most
	// MaxStreamOutBytes.
	Bytes int64
	// Inodes caps its files and directories, its root included; zero
	// means DefaultStreamOutInodes, at most MaxStreamOutInodes.
	Inodes int64
}

// Caps of StreamOut.
const (
	DefaultStreamOutBytes  int64 = 16 << 20
	MaxStreamOutBytes      int64 = 1 << 30
	DefaultStreamOutInodes int64 = 4096
	MaxStreamOutInodes     int64 = 1 << 16
)

// Resolve fills zero caps with their defaults and refuses values outside
// their bounds (ErrSpec).
func (so StreamOut) Resolve() (StreamOut, error) {
	switch {
	case so.Bytes < 0 || so.Bytes > MaxStreamOutBytes:
		return so, fmt.Errorf("%w: stream-out size cap %d outside [0, %d]", ErrSpec, so.Bytes, MaxStreamOutBytes)
	case so.Inodes < 0 || so.Inodes > MaxStreamOutInodes:
		return so, fmt.Errorf("%w: stream-out inode cap %d outside [0, %d]", ErrSpec, so.Inodes, MaxStreamOutInodes)
	}
	if so.Bytes == 0 {
		so.Bytes = DefaultStreamOutBytes
	}
	if so.Inodes == 0 {
		so.Inodes = DefaultStreamOutInodes
	}
	// Its root and at least one entry.
	so.Inodes = max(so.Inodes, 2)
	return so, nil
}

// Validate checks what a backend would otherwise interpret loosely: the
// required fields, label-safe names, clean absolute mount and collect
// paths, one mount per target, KEY=VALUE environment entries and where a
// StreamOut directory may go. Limits are checked by Limits.Resolve.
func (s Spec) Validate() error {
	if s.Run == "" || s.Phase == "" || s.Image == "" {
		return fmt.Errorf("%w: run, phase and image are required", ErrSpec)
	}
	if !ValidName(s.Run) || !ValidName(s.Phase) {
		return fmt.Errorf("%w: run and phase must be [a-z0-9-] of at most 64 bytes", ErrSpec)
	}
	seen := map[string]bool{}
	for _, m := range s.Mounts {
		if m.Volume == "" || !cleanAbs(m.Target) {
			return fmt.Errorf("%w: mount %q at %q", ErrSpec, m.Volume, m.Target)
		}
		if seen[m.Target] {
			return fmt.Errorf("%w: two mounts at %q", ErrSpec, m.Target)
		}
		if err := m.Policy.Validate(); err != nil {
			return fmt.Errorf("%w: mount at %q: %w", ErrSpec, m.Target, err)
		}
		seen[m.Target] = true
	}
	for _, c := range s.Collect {
		if !cleanAbs(c) {
			return fmt.Errorf("%w: collect path %q", ErrSpec, c)
		}
	}
	// A tree is a place of its own: it may not overlap /tmp, a mount,
	// another tree or a collected path.
	placed := append([]string{"/tmp"}, mountTargets(s.Mounts)...)
	for _, t := range s.Trees {
		if !cleanAbs(t.Dir) {
			return fmt.Errorf("%w: tree directory %q", ErrSpec, t.Dir)
		}
		for _, o := range slices.Concat(placed, s.Collect) {
			if Within(t.Dir, o) || Within(o, t.Dir) {
				return fmt.Errorf("%w: tree directory %q overlaps %q", ErrSpec, t.Dir, o)
			}
		}
		if err := t.Policy.Validate(); err != nil {
			return fmt.Errorf("%w: tree %q: %w", ErrSpec, t.Dir, err)
		}
		placed = append(placed, t.Dir)
	}
	for _, e := range s.Env {
		if !strings.Contains(e, "=") {
			return fmt.Errorf("%w: environment entry %q lacks '='", ErrSpec, e)
		}
	}
	if s.StreamOut == nil {
		return nil
	}
	if len(s.Cmd) == 0 {
		return fmt.Errorf("%w: stream-out needs a command", ErrSpec)
	}
	dir := s.StreamOut.Dir
	if !cleanAbs(dir) {
		return fmt.Errorf("%w: stream-out directory %q", ErrSpec, dir)
	}
	others := slices.Concat([]string{"/tmp"}, mountTargets(s.Mounts), treeDirs(s.Trees), s.Collect)
	for _, o := range others {
		if Within(dir, o) || Within(o, dir) {
			return fmt.Errorf("%w: stream-out directory %q overlaps %q", ErrSpec, dir, o)
		}
	}
	if err := s.CollectPolicy.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrSpec, err)
	}
	return nil
}

func mountTargets(ms []Mount) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Target
	}
	return out
}

// cleanAbs reports whether p is an absolute, clean path other than "/".
func cleanAbs(p string) bool {
	return path.IsAbs(p) && path.Clean(p) == p && p != "/"
}

// Within reports whether p is dir or lies below it.
func Within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
