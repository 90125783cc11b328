package engine

import "github.com/strictgrade/strictgrade/sandbox"

// The spec and result types are package sandbox's; the engine is its
// Docker implementation. The aliases keep the engine's own code short.
type (
	Mount         = sandbox.Mount
	Limits        = sandbox.Limits
	Spec          = sandbox.Spec
	StreamOut     = sandbox.StreamOut
	Tree          = sandbox.Tree
	ExitKind      = sandbox.ExitKind
	Result        = sandbox.Result
	Collected     = sandbox.Collected
	CopyInOptions = sandbox.CopyInOptions
	ExecSpec      = sandbox.ExecSpec
	ExecResult    = sandbox.ExecResult
	GCOptions     = sandbox.GCOptions
	GCReport      = sandbox.GCReport
)

// Label keys, the sandbox user and the exit kinds, from package sandbox.
const (
	LabelManaged = sandbox.LabelManaged
	LabelRun     = sandbox.LabelRun
	LabelPhase   = sandbox.LabelPhase
	LabelRecipe  = sandbox.LabelRecipe
	LabelImage   = sandbox.LabelImage

	SandboxUser = sandbox.User
	SandboxUID  = sandbox.UID

	ExitTimeout     = sandbox.ExitTimeout
	ExitOOM         = sandbox.ExitOOM
	ExitOutputLimit = sandbox.ExitOutputLimit
	ExitExited      = sandbox.ExitExited

	DefaultStreamOutBytes  = sandbox.DefaultStreamOutBytes
	MaxStreamOutBytes      = sandbox.MaxStreamOutBytes
	DefaultStreamOutInodes = sandbox.DefaultStreamOutInodes
	MaxStreamOutInodes     = sandbox.MaxStreamOutInodes

	DefaultMaxAge = sandbox.DefaultMaxAge
)

// Limits' defaults and maxima, from package sandbox.
var (
	DefaultLimits = sandbox.DefaultLimits
	MaxLimits     = sandbox.MaxLimits
)

// Errors, from package sandbox.
var (
	ErrPreflight     = sandbox.ErrPreflight
	ErrProfile       = sandbox.ErrProfile
	ErrSpec          = sandbox.ErrSpec
	ErrCollect       = sandbox.ErrCollect
	ErrProtocol      = sandbox.ErrProtocol
	ErrSessionClosed = sandbox.ErrSessionClosed
)

// Engine is the whole backend; *Docker implements it.
type Engine = sandbox.Backend
