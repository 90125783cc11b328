package sandbox

import (
	"io"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
)

// ExitKind classifies how a workload stopped.
type ExitKind string

// The exit kinds, in the order of precedence used when several apply.
const (
	ExitTimeout     ExitKind = "timeout"      // killed at the wall-clock limit
	ExitOOM         ExitKind = "oom"          // killed by the memory limit
	ExitOutputLimit ExitKind = "output_limit" // killed after exceeding the standard-output cap
	ExitExited      ExitKind = "exited"       // ended by itself, see Code
)

// Result is the outcome of one run.
type Result struct {
	ID      string // the backend's name for the sandbox (a container ID, a pod name)
	ImageID string // the image that ran, as the backend resolved it
	Exit    ExitKind
	Code    int // exit status (128 plus the signal number when a signal ended it)
	Stdout  []byte
	Stderr  []byte
	// StdoutTruncated and StderrTruncated report that a stream passed its
	// cap; the captured bytes are its head.
	StdoutTruncated bool
	StderrTruncated bool
	Duration        time.Duration
	// Limit says which limit an ExitTimeout met: LimitCPU (the CPU-time
	// budget was spent) or LimitWall (the wall clock ran out first).
	Limit Limit
	// CPU is the CPU time the sandbox's processes used while the run
	// lasted, when CPUMeasured; Waited is how long the sandbox had a
	// thread waiting for a CPU (run-queue delay), however many waited at
	// once.
	CPU         time.Duration
	Waited      time.Duration
	CPUMeasured bool
	// Collected holds, per Spec.Collect path and for the StreamOut
	// directory, the canonical archive the firewall produced.
	Collected map[string]Collected
}

// Limit names the time limit a run met.
type Limit string

// The time limits.
const (
	LimitCPU  Limit = "cpu"  // the CPU-time budget (Limits.CPU)
	LimitWall Limit = "wall" // the wall clock (Limits.Wall, or CPU where it is not measured)
)

// Starved reports whether waited is at least StarvedShare of wall: the
// test a backend applies to a thread's wait for a CPU (and, the other way
// round, to its CPUs' idle time) to tell a starved run.
func Starved(waited, wall time.Duration) bool {
	return wall > 0 && float64(waited) >= StarvedShare*float64(wall)
}

// Collected is one directory or file that left a sandbox through the
// firewall.
type Collected struct {
	Archive  []byte
	Manifest *firewall.Manifest
}

// CopyInOptions tune a copy into a volume or a session.
type CopyInOptions struct {
	// Policy bounds the archive; the zero value is the firewall's strict
	// default.
	Policy firewall.Policy
	// Writable makes the files owned by User so that the workload may
	// change them; by default they are owned by root and read-only to it.
	Writable bool
}

// ExecSpec is one command in a Session.
type ExecSpec struct {
	Cmd         []string
	Env         []string
	WorkDir     string
	Stdin       io.Reader     // nil means no standard input
	Wall        time.Duration // default DefaultLimits.Wall, at most the session's wall limit
	StdoutBytes int64         // default DefaultLimits.StdoutBytes
	StderrBytes int64         // default DefaultLimits.StderrBytes
}

// ExecResult is the outcome of one command in a Session.
type ExecResult struct {
	Code            int
	Exit            ExitKind // ExitExited or ExitTimeout
	Stdout, Stderr  []byte
	StdoutTruncated bool
	StderrTruncated bool
	Duration        time.Duration
}

// DefaultMaxAge is the age past which GC takes an object for abandoned
// whatever its owner: no grade or agent session is assumed to last a day.
const DefaultMaxAge = 24 * time.Hour

// GCOptions select what GC removes. The zero value removes every abandoned
// managed object.
type GCOptions struct {
	Run       string        // only objects of this run; empty means all managed objects
	OlderThan time.Duration // only objects created at least this long ago
	// All removes the selected objects whatever their owner, including
	// those of grades running in other processes. By default GC removes
	// only abandoned objects: their owner process is provably gone, or
	// they are older than MaxAge.
	All bool
	// MaxAge is the age past which an object is abandoned whatever its
	// owner; zero means DefaultMaxAge.
	MaxAge time.Duration
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
}

// GCReport lists what GC removed, or would remove with DryRun.
type GCReport struct {
	Containers []string
	Volumes    []string
	// Kept counts the selected objects left alone because their owner is
	// alive (never with All).
	Kept int
}
