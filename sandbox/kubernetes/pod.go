package kubernetes

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/strictgrade/strictgrade/internal/seccomp"
	"github.com/strictgrade/strictgrade/internal/streamout"
	"github.com/strictgrade/strictgrade/sandbox"
)

// Container names inside every pod.
const (
	loadContainer = "load"
	workContainer = "work"
)

// loadRoot is where the init container sees the emptyDir of mount i, as
// loadRoot + "/m" + i.
const loadRoot = "/sg"

// deadlineSlack is added to the wall limit and the start timeout in the
// pod's activeDeadlineSeconds, the cluster's own backstop for a controller
// that died before deleting it. The deadline counts from the pod's start,
// so it also allows for the time a prepared pod waits for its Run.
const deadlineSlack = 3600

// podParams is what a pod is made of, once the spec has been checked.
type podParams struct {
	name      string
	namespace string
	spec      sandbox.Spec // validated; StreamOut resolved
	lim       sandbox.Limits
	cfg       Config
	// mountBytes is, per spec mount, the room its emptyDir gets: its
	// archives' bytes at Prepare, plus what the workload may write.
	mountBytes []int64
	owner      map[string]string
	// session makes a session's pod: its keeper mounts every volume,
	// for CopyIn and CopyOut (see keeper).
	session bool
}

func ptr[T any](v T) *T { return &v }

// DefaultSeccompProfile is the Localhost profile pods run under when
// Config.SeccompProfile is empty: strictgrade's sandbox profile, which a
// node holds at <kubelet root>/seccomp/strictgrade/ under its versioned
// name.
const DefaultSeccompProfile = "strictgrade/" + seccomp.Name

// RuntimeDefaultSeccomp, as Config.SeccompProfile, keeps the container
// runtime's default seccomp profile.
const RuntimeDefaultSeccomp = "RuntimeDefault"

// SeccompProfileJSON returns strictgrade's sandbox seccomp profile, the
// file a node must hold as DefaultSeccompProfile under its kubelet's
// seccomp directory.
func SeccompProfileJSON() []byte { return seccomp.Profile() }

// seccompProfile is the pods' profile for Config.SeccompProfile.
func seccompProfile(name string) *corev1.SeccompProfile {
	switch name {
	case RuntimeDefaultSeccomp:
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	case "":
		name = DefaultSeccompProfile
	}
	return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr(name)}
}

// hardenedContext is every container's security context.
func hardenedContext(seccompName string) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr(true),
		RunAsUser:                ptr(int64(sandbox.UID)),
		RunAsGroup:               ptr(int64(sandbox.UID)),
		ReadOnlyRootFilesystem:   ptr(true),
		AllowPrivilegeEscalation: ptr(false),
		Privileged:               ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           seccompProfile(seccompName),
		ProcMount:                ptr(corev1.DefaultProcMount),
	}
}

// cpuRequestMilli is the CPU a pod requests of its node (or the spec's
// limit, if lower).
const cpuRequestMilli = 100

// resources are the limits of both containers. Memory and ephemeral
// storage are requested in full, so that the node never overcommits them;
// CPU, which only slows a workload down when short, is requested at
// cpuRequestMilli. Requested in full, a sandbox's default CPU limit of one
// core left a two-core node room for two pods: two grades' judges, started
// early, held it while their candidates waited past the start timeout (a
// bench at two grades in flight on the test cluster). The kernel then shares
// the cores as it does on Docker, which reserves none.
//
// The kubelet evicts a pod whose disk use, its disk-backed emptyDirs
// included, passes the sum of its containers' ephemeral-storage limits, so
// the limit is the spec's file size and the room of those emptyDirs
// (volumes): each emptyDir's own sizeLimit is what bounds it.
func resources(lim sandbox.Limits, volumes int64) corev1.ResourceRequirements {
	cpu := max(lim.NanoCPUs/1e6, 1)
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(lim.MemoryBytes, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(lim.FileBytes+volumes, resource.BinarySI),
	}
	rq := rl.DeepCopy()
	rq[corev1.ResourceCPU] = *resource.NewMilliQuantity(min(cpu, cpuRequestMilli), resource.DecimalSI)
	return corev1.ResourceRequirements{Limits: rl, Requests: rq}
}

// podLabels are the labels of every pod.
func podLabels(run, phase string) map[string]string {
	return map[string]string{sandbox.LabelManaged: "true", sandbox.LabelRun: run, sandbox.LabelPhase: phase}
}

// checkLabelValues refuses a run or phase that Kubernetes would refuse as a
// label value (it must start and end with a letter or digit, and hold at
// most 63 bytes), so that the error is ErrSpec and not the API server's.
func checkLabelValues(run, phase string) error {
	for _, v := range []string{run, phase} {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("%w: %q is not a Kubernetes label value: %s", sandbox.ErrSpec, v, strings.Join(errs, "; "))
		}
	}
	return nil
}

func env(kv []string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range kv {
		k, v, _ := strings.Cut(e, "=")
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	return out
}

// mountVolume names the emptyDir of spec mount i.
func mountVolume(i int) string { return "m" + strconv.Itoa(i) }

// buildPod returns the pod for p: the hardened profile on the pod and on
// every container, the loader as init container, the workload, and after
// it the keeper when the spec has writable mounts or collected paths.
func buildPod(p podParams) *corev1.Pod {
	spec, lim := p.spec, p.lim
	var vols []corev1.Volume
	var loadMounts, workMounts []corev1.VolumeMount
	var volBytes int64
	loadArgs := []string{"python3", "-I", "-S", "-c", loadScript}
	for i, m := range spec.Mounts {
		name := mountVolume(i)
		// Room for the files and their directories' blocks.
		size := p.mountBytes[i] + 1<<20
		volBytes += size
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(size, resource.BinarySI)},
		}})
		dir := loadRoot + "/" + name
		loadMounts = append(loadMounts, corev1.VolumeMount{Name: name, MountPath: dir})
		loadArgs = append(loadArgs, dir)
		workMounts = append(workMounts, corev1.VolumeMount{Name: name, MountPath: m.Target, ReadOnly: m.ReadOnly})
	}
	vols = append(vols, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(lim.TmpfsBytes, resource.BinarySI)},
	}})
	workMounts = append(workMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	cmd := spec.Cmd
	if so := spec.StreamOut; so != nil {
		vols = append(vols, corev1.Volume{Name: "streamout", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(so.Bytes, resource.BinarySI)},
		}})
		workMounts = append(workMounts, corev1.VolumeMount{Name: "streamout", MountPath: so.Dir})
		cmd = streamout.Command(*so, cmd, spec.CollectPolicy)
	}
	res := resources(lim, volBytes)
	load := corev1.Container{
		Name: loadContainer, Image: p.cfg.LoaderImage, ImagePullPolicy: corev1.PullNever,
		Command: loadArgs, Env: []corev1.EnvVar{{Name: "PATH", Value: "/usr/local/bin:/usr/bin:/bin"}},
		Stdin: true, StdinOnce: true,
		VolumeMounts: loadMounts, Resources: res, SecurityContext: hardenedContext(p.cfg.SeccompProfile),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	work := corev1.Container{
		Name: workContainer, Image: spec.Image, ImagePullPolicy: corev1.PullNever,
		Command: cmd, Env: env(spec.Env), WorkingDir: spec.WorkDir,
		Stdin: spec.Stdin != nil, StdinOnce: spec.Stdin != nil,
		VolumeMounts: workMounts, Resources: res, SecurityContext: hardenedContext(p.cfg.SeccompProfile),
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
	containers := []corev1.Container{work}
	if k := keeper(spec, p.cfg, p.session); k != nil {
		containers = append(containers, *k)
	}
	deadline := int64(lim.Wall.Seconds()) + int64(p.cfg.StartTimeout.Seconds()) + int64(p.cfg.ReportSlack.Seconds()) + deadlineSlack
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.name, Namespace: p.namespace,
			Labels: podLabels(spec.Run, spec.Phase), Annotations: p.owner,
		},
		Spec: corev1.PodSpec{
			InitContainers:                []corev1.Container{load},
			Containers:                    containers,
			Volumes:                       vols,
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			ShareProcessNamespace:         ptr(false),
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: ptr(int64(0)),
			NodeName:                      p.cfg.NodeName,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr(true),
				RunAsUser:      ptr(int64(sandbox.UID)),
				RunAsGroup:     ptr(int64(sandbox.UID)),
				FSGroup:        ptr(int64(sandbox.UID)),
				SeccompProfile: seccompProfile(p.cfg.SeccompProfile),
			},
		},
	}
	if p.cfg.RuntimeClass != "" {
		pod.Spec.RuntimeClassName = ptr(p.cfg.RuntimeClass)
	}
	return pod
}
