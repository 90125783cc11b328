package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/strslice"

	"github.com/strictgrade/strictgrade/internal/seccomp"
	"github.com/strictgrade/strictgrade/sandbox"
)

// seccompOption applies the sandbox seccomp profile (package
// internal/seccomp, ADR 0020).
var seccompOption = seccomp.Option()

// stopTimeout is zero seconds: the profile's stop signal is SIGKILL.
var stopTimeout = 0

// labels returns the labels every object of a run carries: managed, run,
// phase and the owner labels of this process.
func labels(run, phase string) map[string]string {
	l := map[string]string{LabelManaged: "true", LabelRun: run, LabelPhase: phase}
	self().add(l)
	return l
}

// Under gVisor (runtime "runsc") the host pids cgroup of a container with
// a pids limit of N is GVisorOwnPIDs + GVisorPIDsPerProcess*N: its user-space
// kernel and file server start with about 30 threads, and each workload
// process takes about three more host threads (measured on the systrap
// platform). The workload itself is held to N by RLIMIT_NPROC, which
// gVisor's kernel enforces.
const (
	GVisorOwnPIDs        = 32
	GVisorPIDsPerProcess = 4
)

// labelSafe reports whether s may be a run id, phase or image name.
func labelSafe(s string) bool { return sandbox.ValidName(s) }

// hardened builds the container configuration for a spec whose limits (and
// StreamOut, if any) have been resolved. Nothing in Spec can loosen what is
// set here.
func hardened(s Spec, l Limits, stdin bool) (*container.Config, *container.HostConfig) {
	cmd := slices.Clone(s.Cmd)
	if s.StreamOut != nil {
		cmd = streamCommand(*s.StreamOut, cmd, s.CollectPolicy)
	}
	cfg := &container.Config{
		User:            SandboxUser,
		Env:             slices.Clone(s.Env),
		Cmd:             strslice.StrSlice(cmd),
		WorkingDir:      s.WorkDir,
		Image:           s.Image,
		Labels:          labels(s.Run, s.Phase),
		NetworkDisabled: true,
		AttachStdout:    true,
		AttachStderr:    true,
		AttachStdin:     stdin,
		OpenStdin:       stdin,
		StdinOnce:       stdin,
		Tty:             false,
		StopSignal:      "SIGKILL",
		StopTimeout:     &stopTimeout,
		Hostname:        "sandbox",
	}
	if cfg.Env == nil {
		cfg.Env = []string{}
	}
	pids := l.PIDs
	ulimits := []*container.Ulimit{
		{Name: "nofile", Soft: l.OpenFiles, Hard: l.OpenFiles},
		{Name: "fsize", Soft: l.FileBytes, Hard: l.FileBytes},
		{Name: "core", Soft: 0, Hard: 0},
	}
	if s.Runtime == "runsc" {
		// gVisor's kernel and file server share the container's pids
		// cgroup with the workload, each workload process costing
		// several host threads, and the sandbox dies when that kernel
		// cannot make a thread. So the workload's bound moves inside:
		// gVisor's kernel enforces RLIMIT_NPROC on its own processes
		// (EAGAIN at the limit, as runc's cgroup gives), and the host
		// cgroup becomes a backstop sized never to starve that kernel.
		// Under runc RLIMIT_NPROC would count every process of the
		// host's user 65532, so it is set only here.
		ulimits = append(ulimits, &container.Ulimit{Name: "nproc", Soft: l.PIDs, Hard: l.PIDs})
		pids = GVisorOwnPIDs + GVisorPIDsPerProcess*l.PIDs
	}
	init := true
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode("none"),
		ReadonlyRootfs: true,
		CapDrop:        strslice.StrSlice{"ALL"},
		// Docker's default seccomp profile with the calls refused that
		// are channels between sandboxes sharing inodes, a page cache or
		// a uid (ADR 0020).
		SecurityOpt:   []string{"no-new-privileges=true", seccompOption},
		Privileged:    false,
		IpcMode:       container.IPCModePrivate,
		ShmSize:       16 << 20,
		CgroupnsMode:  container.CgroupnsModePrivate,
		Init:          &init,
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
		AutoRemove:    false,
		OomScoreAdj:   500,
		Runtime:       s.Runtime,
		// No log driver: nothing reads a container's log (outputs come
		// from the attach stream), and a json-file log made the daemon
		// copy every output byte a second time while the writer waited.
		LogConfig: container.LogConfig{Type: "none"},
		Tmpfs: map[string]string{
			"/tmp": fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,mode=1777", l.TmpfsBytes),
		},
		Resources: container.Resources{
			Memory:     l.MemoryBytes,
			MemorySwap: l.MemoryBytes,
			PidsLimit:  &pids,
			NanoCPUs:   l.NanoCPUs,
			Ulimits:    ulimits,
		},
	}
	if s.StreamOut != nil && !userSpaceKernel(s.Runtime) {
		// Under gVisor the directory is a host tmpfs volume instead,
		// already among s.Mounts (see newStreamVolume).
		hc.Tmpfs[s.StreamOut.Dir] = tmpfsOptions(*s.StreamOut)
	}
	for _, m := range s.Mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{
			Type:          mount.TypeVolume,
			Source:        m.Volume,
			Target:        m.Target,
			ReadOnly:      m.ReadOnly,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true},
		})
	}
	return cfg, hc
}

// assertApplied compares what the daemon reports for a created container
// with what was asked. Any difference is ErrProfile.
func assertApplied(got container.InspectResponse, wantCfg *container.Config, want *container.HostConfig) error {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	h := got.HostConfig
	c := got.Config
	if h == nil || c == nil {
		return fmt.Errorf("%w: inspect returned no configuration", ErrProfile)
	}
	// Under sginit (ADR 0013) the container starts as root with exactly
	// initCaps and sginit as its entrypoint, which drops them before the
	// workload exists; any other container runs as the sandbox user with
	// nothing added.
	initMode := wantCfg.User == initUser
	switch {
	case initMode:
		if c.User != initUser || len(c.Entrypoint) == 0 || c.Entrypoint[0] != initPath {
			bad("user %q with entrypoint %v", c.User, c.Entrypoint)
		}
		if got := slices.Sorted(slices.Values(h.CapAdd)); !slices.Equal(got, initCaps) {
			bad("capabilities added: %v", h.CapAdd)
		}
	case c.User != SandboxUser:
		bad("user %q", c.User)
	case len(h.CapAdd) != 0:
		bad("capabilities added: %v", h.CapAdd)
	}
	if !c.NetworkDisabled {
		bad("network not disabled")
	}
	if string(h.NetworkMode) != "none" {
		bad("network mode %q", h.NetworkMode)
	}
	if got.NetworkSettings != nil {
		for name := range got.NetworkSettings.Networks {
			if name != "none" {
				bad("attached to network %q", name)
			}
		}
	}
	if !h.ReadonlyRootfs {
		bad("root filesystem writable")
	}
	if h.Privileged {
		bad("privileged")
	}
	if !slices.Equal([]string(h.CapDrop), []string{"ALL"}) {
		bad("capabilities dropped: %v", h.CapDrop)
	}
	if !slices.Contains(h.SecurityOpt, "no-new-privileges=true") {
		bad("no-new-privileges missing: %v", h.SecurityOpt)
	}
	if !slices.Contains(h.SecurityOpt, seccompOption) {
		bad("the sandbox seccomp profile is missing")
	}
	for _, o := range h.SecurityOpt {
		if o == seccompOption {
			continue
		}
		if strings.Contains(o, "unconfined") || strings.HasPrefix(o, "label=disable") || strings.HasPrefix(o, "seccomp") {
			bad("security option %.60q", o)
		}
	}
	if len(h.Binds) != 0 || len(h.VolumesFrom) != 0 || len(h.Devices) != 0 || len(h.DeviceRequests) != 0 || len(h.Links) != 0 {
		bad("binds, volumes-from, devices or links present")
	}
	if h.PidMode != "" || h.UTSMode != "" || h.UsernsMode != "" || h.IpcMode != container.IPCModePrivate || h.CgroupnsMode == container.CgroupnsModeHost {
		bad("namespace sharing: pid=%q uts=%q userns=%q ipc=%q cgroupns=%q", h.PidMode, h.UTSMode, h.UsernsMode, h.IpcMode, h.CgroupnsMode)
	}
	if h.MaskedPaths != nil && len(h.MaskedPaths) == 0 {
		bad("masked paths cleared")
	}
	if h.Init == nil || !*h.Init {
		bad("init not enabled")
	}
	r := h.Resources
	if r.Memory != want.Memory || r.MemorySwap != want.Memory {
		bad("memory %d swap %d, want %d", r.Memory, r.MemorySwap, want.Memory)
	}
	if r.PidsLimit == nil || *r.PidsLimit != *want.PidsLimit {
		bad("pids limit not applied")
	}
	if r.CpusetCpus != want.Resources.CpusetCpus {
		bad("cpuset %q, want %q", r.CpusetCpus, want.Resources.CpusetCpus)
	}
	if r.NanoCPUs != want.NanoCPUs {
		bad("cpu quota %d, want %d", r.NanoCPUs, want.NanoCPUs)
	}
	if r.OomKillDisable != nil && *r.OomKillDisable {
		bad("oom killer disabled")
	}
	if !ulimitsEqual(r.Ulimits, want.Ulimits) {
		bad("ulimits not applied")
	}
	if h.LogConfig.Type != want.LogConfig.Type || len(h.LogConfig.Config) != 0 {
		bad("log driver %q %v", h.LogConfig.Type, h.LogConfig.Config)
	}
	if !maps.Equal(h.Tmpfs, want.Tmpfs) {
		bad("tmpfs %v", h.Tmpfs)
	}
	if len(h.Mounts) != len(want.Mounts) {
		bad("mounts %d, want %d", len(h.Mounts), len(want.Mounts))
	} else {
		for i, m := range h.Mounts {
			w := want.Mounts[i]
			if m.Type != mount.TypeVolume || m.Source != w.Source || m.Target != w.Target || m.ReadOnly != w.ReadOnly {
				bad("mount %d: %s %s→%s ro=%v", i, m.Type, m.Source, m.Target, m.ReadOnly)
			}
		}
	}
	for _, mp := range got.Mounts {
		if mp.Type != mount.TypeVolume {
			bad("mount of type %s at %s", mp.Type, mp.Destination)
		}
		if strings.Contains(mp.Source, "docker.sock") || strings.Contains(mp.Destination, "docker.sock") {
			bad("docker socket mounted")
		}
	}
	if h.Runtime != want.Runtime && want.Runtime != "" {
		bad("runtime %q, want %q", h.Runtime, want.Runtime)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrProfile, strings.Join(problems, "; "))
	}
	return nil
}

func ulimitsEqual(a, b []*container.Ulimit) bool {
	if len(a) != len(b) {
		return false
	}
	for _, w := range b {
		found := false
		for _, g := range a {
			if g != nil && g.Name == w.Name && g.Soft == w.Soft && g.Hard == w.Hard {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
