// Package kubernetes is the Kubernetes backend of package sandbox: every
// sandbox is one single-use pod in one namespace, made with the same
// hardened profile as the Docker backend and reached through the API
// server alone (ADR 0011).
//
// A pod has two containers. The init container "load" runs the loader
// image's python3 with an embedded script: it reads, from its attached
// standard input, one tar stream that lays out every mounted volume into an
// emptyDir of its own, then waits for the end of that input. The main
// container "work" mounts those emptyDirs (read-only where the spec says,
// by a read-only bind the kernel enforces) and runs the workload. Prepare
// makes the pod and sends the volumes; Run ends the loader's input, which
// is what starts the workload. Standard input reaches the workload over an
// attach stream; standard output and standard error come back as the
// container's two log streams, which hold every byte from the first one, so
// nothing written before an attach could be lost.
//
// A pod's command is fixed when it is made, so pods started ahead of time
// (Warm) serve specs that carry their command. A spec of the loader image
// whose command differs from run to run (a command task's cases, each with
// its argv and input) runs the launcher instead: the loader image's python3
// with an embedded script that reads the command line from one more tree,
// laid out with the others when the run begins, and executes it in its own
// place, the ignored signals of the interpreter put back first. Its pods
// can then be started before their command exists, as Docker's can.
//
// Volumes live on the controller's side: each is a directory under
// Config.VolumeDir holding the canonical archives the firewall produced for
// it, in order, and a small record of its run, phase and owner. Leftovers
// and GC find them there and find pods by label.
//
// A pod whose spec mounts a volume writable or collects a path has a third
// container, the keeper: the loader image's python3 waiting for nothing,
// with those volumes' emptyDirs mounted. When the work container has ended
// (every process of it gone with its PID namespace), the backend runs the
// stream-out wrapper's tree mode in the keeper over exec: each collected
// path comes back as an archive, through the firewall under CollectPolicy,
// and each writable mount's content, through the firewall under the
// mount's Policy, becomes its volume's whole content. From the workload's
// start until that read-back the volume is marked lost: a pod killed at
// its wall clock or output cap (deleted, its emptyDirs with it), or any
// other end but a clean one, leaves the volume with no known content, and
// mounting it again is an error that says so.
//
// A session (Start) is such a pod whose work container's main process
// waits for the wall limit and reaps orphans; Exec runs each command over
// exec under env(1) and timeout(1) (the image needs python3, env and
// timeout: the runtime image has them); Stop kills every other process
// there until none is left; CopyIn and CopyOut go through the keeper,
// which mounts every volume of the session. The session is not paused
// while its files are read, as Docker's is: a helper in the keeper has no
// more rights than the workload, and never follows a link, so a process
// that races it can only spoil its own files. Only the session's volumes
// can be read, and its writable volumes have no known content after it.
//
// Spec.StreamOut works, with its size cap enforced by a memory-backed
// emptyDir; Kubernetes has no inode cap for it, so only the archive's
// length bound (a kill past it) limits the entry count. Per-pod process
// limits (Limits.PIDs), RLIMIT_FSIZE (Limits.FileBytes) and RLIMIT_NOFILE
// (Limits.OpenFiles) are not in the pod API: the kubelet's podPidsLimit
// and the runtime's defaults apply instead. The /tmp emptyDir is not
// mounted noexec. Every file in a pod belongs to the sandbox user
// (CopyInOptions.Writable or not): the read-only mount is what keeps the
// workload from changing it.
//
// With Config.MeterCPU, a CPU-time budget (Limits.CPU) is metered from the
// work container's CPU time as its node's kubelet reads it (the summary
// API, through the API server's node proxy; meter.go): the pod is deleted
// once the budget is used, and Limits.Wall is the backstop. That needs the
// right to get nodes/proxy. Without either, the budget is a wall clock
// (sandbox.Unmetered).
//
// A deny-all NetworkPolicy selecting every managed pod is created by New.
// Only a CNI plugin that implements NetworkPolicy enforces it; without one,
// the pods' network is whatever the CNI gives them.
package kubernetes
