package sandbox

import "errors"

// Errors a backend returns, matched with errors.Is.
var (
	// ErrSpec means a Spec, Mount, ExecSpec or path is malformed, or asks
	// for more than the maxima allow.
	ErrSpec = errors.New("sandbox: invalid spec")
	// ErrPreflight means the backend lacks something the hardened profile
	// needs (seccomp, a cgroup controller, the requested runtime).
	ErrPreflight = errors.New("sandbox: preflight failed")
	// ErrProfile means the backend did not apply the hardened profile as
	// asked: a warning on create, or an inspection that disagrees with the
	// request.
	ErrProfile = errors.New("sandbox: hardened profile not applied")
	// ErrCollect means what a sandbox left at a requested path, or wrote as
	// its StreamOut archive, was refused: not a directory or regular file,
	// or rejected by the firewall. It is the workload's doing; a backend
	// failing to read is a different error.
	ErrCollect = errors.New("sandbox: collect failed")
	// ErrProtocol means a backend's output stream broke its framing.
	ErrProtocol = errors.New("sandbox: stream protocol violation")
	// ErrOverloaded means a run reached its wall-clock backstop with CPU
	// time to spare while it waited for a CPU most of that time
	// (StarvedShare): the host, not the workload, decided, so the run says
	// nothing about the workload and may be retried on a quieter host.
	ErrOverloaded = errors.New("sandbox: the host was overloaded")
	// ErrSessionClosed is returned by a Session that was closed, stopped
	// for good or killed by its backstop.
	ErrSessionClosed = errors.New("sandbox: session closed")
)
