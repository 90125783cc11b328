// Package sandbox is the seam between strictgrade's phases and the thing that
// runs hostile code: the spec of one hardened run, what comes back from it,
// and the small interfaces a backend implements.
//
// A phase declares only what it uses. The candidate phase needs a Runner and
// Volumes; the judge adds a Preparer, so that its sandbox is ready the moment
// the candidate's outputs are; the agent phase needs a Starter, whose Session
// takes commands and files one at a time. A Backend is all of them, plus
// image resolution, garbage collection by label and an inventory of what a
// run left behind. The Docker backend lives in package sandbox/docker;
// package sandboxtest has an in-process Fake and Run, the conformance suite
// every backend must pass.
//
// # Data paths
//
// Data reaches a sandbox on its standard input (Spec.Stdin, a stream that may
// still be being written when the sandbox is prepared), as Spec.Trees
// (read-only directories laid out before the workload starts) and through
// volumes filled by CopyIn; it leaves as bounded standard output and
// standard error, as the StreamOut directory's archive, and through
// Spec.Collect. The strict tier's phases hand their inputs over as trees:
// the Docker backend sends them on the sandbox's standard input to a
// trusted init, which lets it start sandboxes before their work exists
// (Warmer; ADR 0013), and a backend without such a path lays them out as
// read-only volumes (PrepareWithTreeVolumes).
//
// # What a backend guarantees
//
// Every guarantee below is observable through this package, and package
// sandboxtest checks each of them.
//
//   - Hardening as seen from inside: the workload runs as User (65532:65532)
//     with no capabilities, no_new_privs set, a seccomp filter (unless the
//     runtime is a user-space kernel that filters by construction), no
//     network but loopback, a read-only root filesystem, a small noexec /tmp
//     and the limits of Spec.Limits. Spec has no field that could loosen any
//     of it.
//   - Limits end a run with a classified exit (ExitKind): the wall clock, the
//     memory cgroup and the standard-output cap, in that order of precedence
//     when several apply, never by which fired first.
//   - The firewall on every crossing: every archive that enters (CopyIn,
//     NewVolumeWith, Session.CopyIn, Spec.Trees) or leaves (Spec.Collect,
//     Spec.StreamOut, Session.CopyOut) passes firewall.Filter; what a
//     sandbox left that the firewall refuses is ErrCollect, the workload's
//     doing, never a backend failure.
//   - Labels and cleanup: every object carries LabelManaged, LabelRun and
//     LabelPhase; it is removed on every path, on a context that outlives the
//     caller's for a bounded time (Cleanup); GC reaps what a killed process
//     left and Leftovers lists what a run still has.
//
// Errors follow one rule: an error from a backend means it could not run or
// could not observe the run (a daemon failure, a cancelled context, a spec it
// refuses). Everything the workload did — crash, time out, flood its output,
// leave a link where a file was asked for — is in the Result, or is
// ErrCollect.
package sandbox
