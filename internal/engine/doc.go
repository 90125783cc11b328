// Package engine is strictgrade's only door to a container runtime: the
// Docker implementation of package sandbox's Backend, which harnesses reach
// through package sandbox/docker. The spec and result types are sandbox's
// (aliased here); what is Docker's alone — the profile, the loader image,
// the stream-out wrapper, owner labels, image import — stays here.
//
// Every container it creates carries one hardened profile that callers
// cannot weaken: a numeric non-root user, all capabilities dropped,
// no-new-privileges, no network, a read-only root filesystem with a
// size-capped noexec tmpfs, pids, memory (no swap), CPU and ulimit limits, an
// init process, private IPC, a bounded log driver, and the sandbox seccomp
// profile of package internal/seccomp (Docker's default without the calls
// through which sandboxes sharing inodes, a page cache or a uid could
// signal each other; ADR 0020). Spec has no field that
// could add a capability, a bind mount, a device or a host namespace.
//
// Archives cross the container boundary only through the functions of
// transfer.go — CopyIn, the collection steps of Run (the copy out of
// Spec.Collect and the stream of Spec.StreamOut), and a Session's CopyIn
// and CopyOut — and all of them pass every byte through the tar firewall;
// nothing else in the module calls the Docker copy API (a test enforces
// it). Copies happen while no process of the container can run: into a
// loader container that is never started, out of a container that has
// exited, or, for an interactive Session, with the container frozen by
// the cgroup freezer for the duration of the copy. A StreamOut directory
// is written out by a wrapper after it has killed every other process of
// the container; it is a tmpfs with size and inode caps, so what a
// container writes there never reaches the daemon's disk.
//
// Every container and volume is labelled with the run id, the phase and the
// process that made it, and is removed on every path, on a context that
// outlives the caller's. GC reaps what a killed process left behind, and by
// default nothing of a process that still runs.
//
// The Docker implementation talks to the daemon named by the usual
// environment (DOCKER_HOST or the default socket) and never bind-mounts host
// paths, so it works with a remote daemon too.
package engine
