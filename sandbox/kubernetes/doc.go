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
// Volumes live on the controller's side: each is a directory under
// Config.VolumeDir holding the canonical archives the firewall produced for
// it, in order, and a small record of its run, phase and owner. Leftovers
// and GC find them there and find pods by label.
//
// What this backend does not do yet is refused with an error wrapping
// ErrUnsupported: sessions (Start), writable volume mounts and
// Spec.Collect. Spec.StreamOut works, with its size cap enforced by a
// memory-backed emptyDir; Kubernetes has no inode cap for it, so only the
// archive's length bound (a kill past it) limits the entry count. Per-pod
// process limits (Limits.PIDs), RLIMIT_FSIZE (Limits.FileBytes) and
// RLIMIT_NOFILE (Limits.OpenFiles) are not in the pod API: the kubelet's
// podPidsLimit and the runtime's defaults apply instead. The /tmp emptyDir
// is not mounted noexec.
//
// A deny-all NetworkPolicy selecting every managed pod is created by New.
// Only a CNI plugin that implements NetworkPolicy enforces it; without one,
// the pods' network is whatever the CNI gives them.
package kubernetes
