package kubernetes

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/seccomp"
	"github.com/strictgrade/strictgrade/sandbox"
)

func testPod(t *testing.T, spec sandbox.Spec, cfg Config) *corev1.Pod {
	t.Helper()
	b := &Backend{cfg: cfg}
	lim, err := b.check(&spec)
	if err != nil {
		t.Fatal(err)
	}
	return buildPod(podParams{name: "sg-r-p-0", namespace: "ns", spec: spec, lim: lim, cfg: cfg,
		mountBytes: make([]int64, len(spec.Mounts)), owner: map[string]string{"k": "v"}})
}

func TestPodHardening(t *testing.T) {
	cfg := Config{LoaderImage: "loader:1", RuntimeClass: "gvisor", NodeName: "node-a", StartTimeout: 30 * time.Second}
	spec := sandbox.Spec{
		Run: "run1", Phase: "candidate", Image: "img:1", Cmd: []string{"/bin/x", "a"},
		Env: []string{"A=1", "B=x=y"}, WorkDir: "/w", Stdin: strings.NewReader(""),
		Mounts: []sandbox.Mount{{Volume: "sgv-000000000001", Target: "/in", ReadOnly: true}},
		Limits: sandbox.Limits{Wall: 10 * time.Second, MemoryBytes: 256 << 20, NanoCPUs: 1.5e9, TmpfsBytes: 8 << 20, FileBytes: 32 << 20},
	}
	pod := testPod(t, spec, cfg)
	ps := pod.Spec

	if diff := cmp.Diff(map[string]string{sandbox.LabelManaged: "true", sandbox.LabelRun: "run1", sandbox.LabelPhase: "candidate"}, pod.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if pod.Annotations["k"] != "v" {
		t.Errorf("owner annotations %v", pod.Annotations)
	}
	checks := []struct {
		what string
		ok   bool
	}{
		{"restartPolicy Never", ps.RestartPolicy == corev1.RestartPolicyNever},
		{"no service account token", ps.AutomountServiceAccountToken != nil && !*ps.AutomountServiceAccountToken},
		{"no service links", ps.EnableServiceLinks != nil && !*ps.EnableServiceLinks},
		{"no host network", !ps.HostNetwork},
		{"no host pid", !ps.HostPID},
		{"no host ipc", !ps.HostIPC},
		{"no shared pid namespace", ps.ShareProcessNamespace != nil && !*ps.ShareProcessNamespace},
		{"runtime class", ps.RuntimeClassName != nil && *ps.RuntimeClassName == "gvisor"},
		{"node name", ps.NodeName == "node-a"},
		{"deadline backstop", ps.ActiveDeadlineSeconds != nil && *ps.ActiveDeadlineSeconds == 10+30+deadlineSlack},
		{"pod runs as non-root", *ps.SecurityContext.RunAsNonRoot && *ps.SecurityContext.RunAsUser == sandbox.UID && *ps.SecurityContext.RunAsGroup == sandbox.UID},
		{"fsGroup", *ps.SecurityContext.FSGroup == sandbox.UID},
		{"pod seccomp: strictgrade's Localhost profile", isDefaultSeccomp(ps.SecurityContext.SeccompProfile)},
		{"one init container, one container", len(ps.InitContainers) == 1 && len(ps.Containers) == 1},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: %+v", c.what, ps)
		}
	}

	wantRes := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1500m"),
		corev1.ResourceMemory: resource.MustParse("256Mi"),
		// The file size and the read-only mount's emptyDir (no
		// archives here, and a mebibyte of room for its blocks).
		corev1.ResourceEphemeralStorage: resource.MustParse("33Mi"),
	}
	for _, c := range append(slices.Clone(ps.InitContainers), ps.Containers...) {
		sc := c.SecurityContext
		cchecks := []struct {
			what string
			ok   bool
		}{
			{"non-root", *sc.RunAsNonRoot && *sc.RunAsUser == sandbox.UID && *sc.RunAsGroup == sandbox.UID},
			{"read-only root", *sc.ReadOnlyRootFilesystem},
			{"no privilege escalation", !*sc.AllowPrivilegeEscalation},
			{"not privileged", !*sc.Privileged},
			{"drop ALL", slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0},
			{"seccomp: strictgrade's Localhost profile", isDefaultSeccomp(sc.SeccompProfile)},
			{"default proc mount", *sc.ProcMount == corev1.DefaultProcMount},
			{"never pulls", c.ImagePullPolicy == corev1.PullNever},
			{"stdin once", c.Stdin && c.StdinOnce},
			{"no tty", !c.TTY},
		}
		for _, cc := range cchecks {
			if !cc.ok {
				t.Errorf("container %s: %s: %+v", c.Name, cc.what, c)
			}
		}
		for name, want := range wantRes {
			if got := c.Resources.Limits[name]; got.Cmp(want) != 0 {
				t.Errorf("container %s: limit %s = %s, want %s", c.Name, name, got.String(), want.String())
			}
			if name == corev1.ResourceCPU {
				// CPU is requested at a tenth of a core (the limit if
				// lower): compressible, never reserved in full.
				want = *resource.NewMilliQuantity(min(want.MilliValue(), 100), resource.DecimalSI)
			}
			if got := c.Resources.Requests[name]; got.Cmp(want) != 0 {
				t.Errorf("container %s: request %s = %s, want %s", c.Name, name, got.String(), want.String())
			}
		}
	}

	load, work := ps.InitContainers[0], ps.Containers[0]
	if load.Image != "loader:1" || load.Command[0] != "python3" || load.Command[4] != loadScript || load.Command[5] != "/sg/m0" {
		t.Errorf("loader: %q %q", load.Image, load.Command[:4])
	}
	if work.Image != "img:1" || !slices.Equal(work.Command, spec.Cmd) || work.WorkingDir != "/w" {
		t.Errorf("work: %q %q %q", work.Image, work.Command, work.WorkingDir)
	}
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "x=y"}}, work.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range work.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m := mounts["/in"]; m.Name != "m0" || !m.ReadOnly {
		t.Errorf("input mount %+v, want m0 read-only", m)
	}
	if m := mounts["/tmp"]; m.Name != "tmp" || m.ReadOnly {
		t.Errorf("/tmp mount %+v", m)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	tmp := vols["tmp"].EmptyDir
	if tmp == nil || tmp.Medium != corev1.StorageMediumMemory || tmp.SizeLimit.Value() != 8<<20 {
		t.Errorf("/tmp volume %+v, want a memory emptyDir of 8 MiB", vols["tmp"])
	}
	if vols["m0"].EmptyDir == nil || len(vols) != 2 {
		t.Errorf("volumes %+v: want only emptyDirs", ps.Volumes)
	}
	for _, v := range ps.Volumes {
		if v.EmptyDir == nil {
			t.Errorf("volume %s is not an emptyDir: %+v", v.Name, v.VolumeSource)
		}
	}
}

func TestPodWithoutStdinOrRuntimeClass(t *testing.T) {
	pod := testPod(t, sandbox.Spec{Run: "r", Phase: "p", Image: "i"}, Config{LoaderImage: "l"})
	if w := pod.Spec.Containers[0]; w.Stdin || w.StdinOnce {
		t.Error("stdin open without Spec.Stdin")
	}
	if pod.Spec.RuntimeClassName != nil || pod.Spec.NodeName != "" {
		t.Errorf("runtime class %v, node %q", pod.Spec.RuntimeClassName, pod.Spec.NodeName)
	}
}

func TestPodStreamOut(t *testing.T) {
	spec := sandbox.Spec{Run: "r", Phase: "p", Image: "i", Cmd: []string{"sh", "-c", "x"},
		StreamOut: &sandbox.StreamOut{Dir: "/output", Bytes: 1 << 20, Inodes: 10}}
	pod := testPod(t, spec, Config{LoaderImage: "l"})
	w := pod.Spec.Containers[0]
	if w.Command[0] != "python3" || !slices.Equal(w.Command[len(w.Command)-3:], spec.Cmd) {
		t.Errorf("stream-out command %q", w.Command)
	}
	var found bool
	for _, v := range pod.Spec.Volumes {
		if v.Name == "streamout" {
			found = v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory && v.EmptyDir.SizeLimit.Value() == 1<<20
		}
	}
	if !found {
		t.Errorf("no 1 MiB memory emptyDir for the stream-out directory: %+v", pod.Spec.Volumes)
	}
}

func TestCheckRefuses(t *testing.T) {
	b := &Backend{cfg: Config{LoaderImage: "l"}}
	base := func() sandbox.Spec { return sandbox.Spec{Run: "r", Phase: "p", Image: "i"} }
	tests := []struct {
		name string
		edit func(*sandbox.Spec)
		want error
	}{
		{"collect outside every mount", func(s *sandbox.Spec) {
			s.Mounts = []sandbox.Mount{{Volume: "v", Target: "/w"}}
			s.Collect = []string{"/w", "/elsewhere"}
		}, sandbox.ErrSpec},
		{"a writable mount's policy", func(s *sandbox.Spec) {
			s.Mounts = []sandbox.Mount{{Volume: "v", Target: "/w", Policy: firewall.Policy{MaxEntries: -1}}}
		}, sandbox.ErrSpec},
		{"label value ending in a dash", func(s *sandbox.Spec) { s.Run = "run-" }, sandbox.ErrSpec},
		{"64-byte run", func(s *sandbox.Spec) { s.Run = strings.Repeat("a", 64) }, sandbox.ErrSpec},
		{"another runtime", func(s *sandbox.Spec) { s.Runtime = "runsc" }, sandbox.ErrPreflight},
		{"memory above the maximum", func(s *sandbox.Spec) { s.Limits.MemoryBytes = sandbox.MaxLimits.MemoryBytes + 1 }, sandbox.ErrSpec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(&s)
			if _, err := b.check(&s); !errors.Is(err, tc.want) {
				t.Errorf("check: %v, want %v", err, tc.want)
			}
		})
	}
	s := base()
	s.Runtime = "runc"
	if _, err := b.check(&s); err != nil {
		t.Errorf("runc on the default runtime: %v", err)
	}
}

func newFake(t *testing.T, objs ...any) (*Backend, *fake.Clientset) {
	t.Helper()
	cli := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "grading"}})
	for _, o := range objs {
		if np, ok := o.(*networkingv1.NetworkPolicy); ok {
			if _, err := cli.NetworkingV1().NetworkPolicies(np.Namespace).Create(t.Context(), np, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := newBackend(t.Context(), Config{Namespace: "grading", LoaderImage: "l", VolumeDir: t.TempDir()}, nil, cli)
	if err != nil {
		t.Fatal(err)
	}
	return b, cli
}

func TestNewCreatesDenyAll(t *testing.T) {
	loose := denyAll("grading")
	loose.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	loose.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
	for name, objs := range map[string][]any{"fresh": nil, "loosened": {loose}} {
		t.Run(name, func(t *testing.T) {
			_, cli := newFake(t, objs...)
			np, err := cli.NetworkingV1().NetworkPolicies("grading").Get(t.Context(), NetworkPolicyName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(denyAll("grading").Spec, np.Spec); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
			if len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 {
				t.Errorf("not deny-all: %+v", np.Spec)
			}
		})
	}
}

func TestNewPreflight(t *testing.T) {
	cli := fake.NewClientset()
	if _, err := newBackend(t.Context(), Config{Namespace: "missing", LoaderImage: "l", VolumeDir: t.TempDir()}, nil, cli); !errors.Is(err, sandbox.ErrPreflight) {
		t.Errorf("missing namespace: %v", err)
	}
	if _, err := newBackend(t.Context(), Config{}, nil, cli); !errors.Is(err, sandbox.ErrPreflight) {
		t.Errorf("no loader image: %v", err)
	}
}

// TestNewRuntimeClass: a RuntimeClass the cluster lacks is refused by name
// before any pod is made; one it has is taken.
func TestNewRuntimeClass(t *testing.T) {
	cli := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "grading"}},
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"})
	cfg := Config{Namespace: "grading", LoaderImage: "l", VolumeDir: t.TempDir(), RuntimeClass: "kata"}
	_, err := newBackend(t.Context(), cfg, nil, cli)
	if !errors.Is(err, sandbox.ErrPreflight) || !strings.Contains(err.Error(), `no RuntimeClass "kata"`) {
		t.Errorf("a missing RuntimeClass: %v", err)
	}
	if pods, _ := cli.CoreV1().Pods("grading").List(t.Context(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("pods made before the refusal: %d", len(pods.Items))
	}
	cfg.RuntimeClass = "gvisor"
	b, err := newBackend(t.Context(), cfg, nil, cli)
	if err != nil {
		t.Fatalf("a RuntimeClass the cluster has: %v", err)
	}
	if got := b.Runtime(); got != "kubernetes/gvisor" {
		t.Errorf("runtime %s", got)
	}
}

func TestRuntime(t *testing.T) {
	if got := (&Backend{}).Runtime(); got != "kubernetes/runc" {
		t.Error(got)
	}
	if got := (&Backend{cfg: Config{RuntimeClass: "gvisor"}}).Runtime(); got != "kubernetes/gvisor" {
		t.Error(got)
	}
	if _, err := (&Backend{}).Start(t.Context(), sandbox.Spec{}); !errors.Is(err, sandbox.ErrSpec) {
		t.Errorf("Start with an empty spec: %v, want ErrSpec", err)
	}
	so := sandbox.Spec{Run: "r", Phase: "p", Image: "i", StreamOut: &sandbox.StreamOut{Dir: "/o"}}
	if _, err := (&Backend{}).Start(t.Context(), so); !errors.Is(err, sandbox.ErrSpec) {
		t.Errorf("a session with a stream-out directory: %v, want ErrSpec", err)
	}
}

func TestVolumesLeftoversAndGC(t *testing.T) {
	b, cli := newFake(t)
	ctx := t.Context()
	if _, _, err := b.NewVolumeWith(ctx, "r1", "in", bytes.NewReader([]byte("not a tar")), sandbox.CopyInOptions{}); err == nil {
		t.Fatal("garbage accepted")
	}
	vol, man, err := b.NewVolumeWith(ctx, "r1", "in", bytes.NewReader(tarOf("a.txt", "alpha")), sandbox.CopyInOptions{})
	if err != nil || len(man.Files) != 1 {
		t.Fatalf("NewVolumeWith: %v %+v", err, man)
	}
	if _, err := b.CopyIn(ctx, "r1", vol, bytes.NewReader(tarOf("../evil", "x")), sandbox.CopyInOptions{}); err == nil {
		t.Error("traversal accepted")
	}
	if _, err := b.CopyIn(ctx, "r1", vol, bytes.NewReader(tarOf("a.txt", "beta", "b.txt", "b")), sandbox.CopyInOptions{}); err != nil {
		t.Fatal(err)
	}
	archives, _, err := b.vols.archives(vol)
	if err != nil || len(archives) != 2 {
		t.Fatalf("archives %v %v, want two (refused ones leave nothing)", archives, err)
	}
	pod := buildPod(podParams{name: "sg-r1-x-1", namespace: "grading", spec: sandbox.Spec{Run: "r1", Phase: "x", Image: "i"},
		lim: sandbox.DefaultLimits, cfg: b.cfg, owner: ownerAnnotations()})
	pod.CreationTimestamp = metav1.Now() // the fake API server sets none
	if _, err := cli.CoreV1().Pods("grading").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other, _ := b.NewVolume(ctx, "r2", "in")
	left, err := b.Leftovers(ctx, "r1")
	if err != nil || !slices.Equal(left, []string{"pod/sg-r1-x-1", "volume/" + vol}) {
		t.Fatalf("Leftovers: %v %v", left, err)
	}
	// This process is alive: kept by default.
	rep, err := b.GC(ctx, sandbox.GCOptions{Run: "r1"})
	if err != nil || rep.Kept != 2 || len(rep.Containers)+len(rep.Volumes) != 0 {
		t.Errorf("default GC: %+v %v", rep, err)
	}
	// An owner that is gone: reaped by default.
	gone := func(int) (bool, string) { return false, "" }
	rep, err = b.gc(ctx, sandbox.GCOptions{Run: "r1", DryRun: true}, time.Now(), gone)
	if err != nil || !slices.Equal(rep.Containers, []string{"sg-r1-x-1"}) || !slices.Equal(rep.Volumes, []string{vol}) {
		t.Errorf("dry run with the owner gone: %+v %v", rep, err)
	}
	if left, _ := b.Leftovers(ctx, "r1"); len(left) != 2 {
		t.Errorf("a dry run removed something: %v", left)
	}
	// Too young for OlderThan.
	rep, _ = b.GC(ctx, sandbox.GCOptions{Run: "r1", All: true, OlderThan: time.Hour})
	if len(rep.Containers)+len(rep.Volumes) != 0 {
		t.Errorf("OlderThan ignored: %+v", rep)
	}
	// Past MaxAge, whatever the owner.
	rep, _ = b.gc(ctx, sandbox.GCOptions{Run: "r1", MaxAge: time.Minute, DryRun: true}, time.Now().Add(time.Hour), processProbe)
	if len(rep.Containers) != 1 || len(rep.Volumes) != 1 {
		t.Errorf("MaxAge ignored: %+v", rep)
	}
	rep, err = b.GC(ctx, sandbox.GCOptions{Run: "r1", All: true})
	if err != nil || len(rep.Containers) != 1 || len(rep.Volumes) != 1 {
		t.Errorf("GC all: %+v %v", rep, err)
	}
	if left, _ := b.Leftovers(ctx, "r1"); len(left) != 0 {
		t.Errorf("after GC: %v", left)
	}
	if left, _ := b.Leftovers(ctx, "r2"); !slices.Equal(left, []string{"volume/" + other}) {
		t.Errorf("another run's volume: %v", left)
	}
	if err := b.RemoveVolume(ctx, other); err != nil {
		t.Error(err)
	}
	if err := b.RemoveVolume(ctx, other); err != nil {
		t.Errorf("removing a missing volume: %v", err)
	}
	if err := b.RemoveVolume(ctx, "../x"); !errors.Is(err, sandbox.ErrSpec) {
		t.Errorf("a name outside the store: %v", err)
	}
}

// TestLoader runs the init container's script on this machine over the
// stream writeLoad makes, as the pod would.
func TestLoader(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to test the loader script")
	}
	b, _ := newFake(t)
	ctx := t.Context()
	v1, _, err := b.NewVolumeWith(ctx, "r", "in", bytes.NewReader(tarOf("a.txt", "alpha", "sub/b.txt", "beta")), sandbox.CopyInOptions{Policy: firewall.Policy{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CopyIn(ctx, "r", v1, bytes.NewReader(tarOf("a.txt", "replaced")), sandbox.CopyInOptions{}); err != nil {
		t.Fatal(err)
	}
	v2, _ := b.NewVolume(ctx, "r", "empty")
	var mounts [][]string
	for _, v := range []string{v1, v2} {
		a, _, err := b.vols.archives(v)
		if err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, a)
	}
	var stream bytes.Buffer
	if err := writeLoad(&stream, mounts); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	r0, r1 := filepath.Join(root, "m0"), filepath.Join(root, "m1")
	for _, d := range []string{r0, r1} {
		os.Mkdir(d, 0o700)
	}
	run := func(in io.Reader) (string, error) {
		cmd := exec.CommandContext(ctx, py, "-I", "-S", "-c", loadScript, r0, r1)
		cmd.Stdin = in
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(&stream); err != nil {
		t.Fatalf("loader: %v: %s", err, out)
	}
	for p, want := range map[string]string{"m0/a.txt": "replaced", "m0/sub/b.txt": "beta"} {
		got, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q %v, want %q", p, got, err, want)
		}
	}
	if ents, _ := os.ReadDir(r1); len(ents) != 0 {
		t.Errorf("empty volume holds %v", ents)
	}

	// The files land before the input ends: a prepared pod has its
	// volumes in place while it waits for the go.
	for _, d := range []string{r0, r1} {
		os.RemoveAll(d)
		os.Mkdir(d, 0o700)
	}
	var again bytes.Buffer
	if err := writeLoad(&again, mounts); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, py, "-I", "-S", "-c", loadScript, r0, r1)
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write(again.Bytes()); err != nil {
		t.Fatal(err)
	}
	landed := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !landed; time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(r0, "sub", "b.txt"))
		landed = err == nil && string(b) == "beta"
	}
	if !landed {
		t.Error("the loader waited for the end of its input before laying out the volumes")
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("loader after the go: %v", err)
	}

	// Refused: entries outside every mount and links.
	hostile := map[string][]byte{}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "m0/l", Typeflag: tar.TypeSymlink, Linkname: "/etc"})
	_ = tw.Close()
	hostile["symlink"] = bytes.Clone(buf.Bytes())
	hostile["outside"] = tarOf("m9/x", "y")
	hostile["traversal"] = tarOf("m0/../../x", "y")
	hostile["no mount"] = tarOf("x", "y")
	for name, in := range hostile {
		if out, err := run(bytes.NewReader(in)); err == nil || !strings.Contains(out, "load:") {
			t.Errorf("%s: %v %q, want a refusal", name, err, out)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "x")); err == nil {
		t.Error("a traversal wrote outside the mounts")
	}
}

func TestImageIDForm(t *testing.T) {
	id := "sha256:" + strings.Repeat("ab", 32)
	for _, in := range []string{id, "docker.io/strictgrade/probe@" + id} {
		if got := imageID(in); got != id {
			t.Errorf("imageID(%q) = %q", in, got)
		}
	}
}

func TestCleanupContextSurvives(t *testing.T) {
	b := &Backend{cfg: Config{CleanupTimeout: time.Second}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cctx, stop := b.cleanupCtx(ctx)
	defer stop()
	if cctx.Err() != nil {
		t.Error("cleanup context cancelled with its parent")
	}
}

// TestPodKeeper checks the pod of a spec with a writable mount and a
// collected path: the keeper comes after the workload, hardened like it,
// runs the loader image, and mounts what it reads back (writable) and
// nothing else.
func TestPodKeeper(t *testing.T) {
	spec := sandbox.Spec{
		Run: "r", Phase: "p", Image: "img:1", Cmd: []string{"/bin/x"},
		Mounts: []sandbox.Mount{
			{Volume: "sgv-000000000001", Target: "/in", ReadOnly: true},
			{Volume: "sgv-000000000002", Target: "/out"},
			{Volume: "sgv-000000000003", Target: "/other", ReadOnly: true},
		},
		Collect: []string{"/in/sub"},
	}
	pod := testPod(t, spec, Config{LoaderImage: "loader:1"})
	cs := pod.Spec.Containers
	if len(cs) != 2 || cs[0].Name != workContainer || cs[1].Name != keepContainer {
		t.Fatalf("containers %v, want work then keep", []string{cs[0].Name})
	}
	keep := cs[1]
	if keep.Image != "loader:1" || keep.Command[0] != "python3" || keep.Stdin {
		t.Errorf("keeper %q %q stdin=%v", keep.Image, keep.Command, keep.Stdin)
	}
	if diff := cmp.Diff(hardenedContext(""), keep.SecurityContext); diff != "" {
		t.Errorf("keeper security context (-want +got):\n%s", diff)
	}
	got := map[string]corev1.VolumeMount{}
	for _, m := range keep.VolumeMounts {
		got[m.MountPath] = m
	}
	want := map[string]corev1.VolumeMount{"/in": {Name: "m0", MountPath: "/in"}, "/out": {Name: "m1", MountPath: "/out"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keeper mounts (-want +got):\n%s", diff)
	}
	for _, m := range cs[0].VolumeMounts {
		if m.MountPath == "/out" && m.ReadOnly {
			t.Errorf("the workload's writable mount is read-only: %+v", m)
		}
	}
	if q := keep.Resources.Limits[corev1.ResourceMemory]; q.Value() != keepMemory {
		t.Errorf("keeper memory %s", q.String())
	}

	// Without either, no keeper.
	spec.Mounts[1].ReadOnly, spec.Collect = true, nil
	if pod := testPod(t, spec, Config{LoaderImage: "loader:1"}); len(pod.Spec.Containers) != 1 {
		t.Errorf("%d containers for read-only mounts only", len(pod.Spec.Containers))
	}
}

// TestVolumeLostAndReplaced checks a writable mount's volume on the
// controller's side: marked lost while its pod runs, so that any way the
// pod ends but a clean read-back leaves it unusable, and given its whole
// new content by replace.
func TestVolumeLostAndReplaced(t *testing.T) {
	b, _ := newFake(t)
	ctx := t.Context()
	v, _, err := b.NewVolumeWith(ctx, "r", "work", bytes.NewReader(tarOf("old.txt", "old")), sandbox.CopyInOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CopyIn(ctx, "r", v, bytes.NewReader(tarOf("second.txt", "2")), sandbox.CopyInOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.vols.markLost(v, "pod x did not end"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.vols.archives(v); err == nil || !strings.Contains(err.Error(), "pod x did not end") {
		t.Errorf("a lost volume's archives: %v, want the reason", err)
	}
	if _, err := b.CopyIn(ctx, "r", v, bytes.NewReader(tarOf("c.txt", "c")), sandbox.CopyInOptions{}); err == nil {
		t.Error("copy into a lost volume succeeded")
	}
	// A read-back that fails changes nothing.
	boom := errors.New("boom")
	if err := b.vols.replace(v, func(w io.Writer) error { _, _ = w.Write([]byte("partial")); return boom }); !errors.Is(err, boom) {
		t.Errorf("replace: %v, want the fill's error", err)
	}
	if _, _, err := b.vols.archives(v); err == nil {
		t.Error("a failed read-back cleared the lost mark")
	}
	fill := func(w io.Writer) error {
		_, err := firewall.Filter(ctx, bytes.NewReader(tarOf("new.txt", "new")), w, firewall.Policy{})
		return err
	}
	if err := b.vols.replace(v, fill); err != nil {
		t.Fatal(err)
	}
	arcs, _, err := b.vols.archives(v)
	if err != nil || len(arcs) != 1 {
		t.Fatalf("after replace: %v, %v; want one archive", arcs, err)
	}
	var stream bytes.Buffer
	if err := writeLoad(&stream, [][]string{arcs}); err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(&stream)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	if !slices.Equal(names, []string{"m0/new.txt"}) {
		t.Errorf("the volume lays out %v, want only the new content", names)
	}
	ents, _ := os.ReadDir(b.vols.path(v))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "incoming-") {
			t.Errorf("a staging file stayed: %s", e.Name())
		}
	}
}

// TestLaunchForm: which specs run through the launcher, what the form
// holds, and that a case and the shape its phase warmed make the same pod.
func TestLaunchForm(t *testing.T) {
	b, _ := newFake(t)
	tree := []sandbox.Tree{{Dir: "/artifacts", Archive: tarOf("run", "#!/bin/sh\n")}}
	shape := sandbox.Spec{Run: "r", Phase: "candidate", Image: "l", Env: []string{"PATH=/usr/bin:/bin"}, WorkDir: "/artifacts",
		Trees: tree, Limits: sandbox.Limits{Wall: time.Minute}}
	kase := shape
	kase.Cmd = []string{"/artifacts/run", "a b", `"quoted"`, "ünï"}
	kase.Stdin = strings.NewReader("input")

	for name, c := range map[string]struct {
		spec  sandbox.Spec
		shape bool
		want  bool
	}{
		"a case: command and input":        {kase, false, true},
		"a shape without its command":      {shape, true, true},
		"a spec without a command":         {shape, false, false},
		"a case without input":             {func() sandbox.Spec { s := kase; s.Stdin = nil; return s }(), false, false},
		"another image":                    {func() sandbox.Spec { s := kase; s.Image = "other"; return s }(), false, false},
		"no trees":                         {func() sandbox.Spec { s := kase; s.Trees = nil; return s }(), false, false},
		"a mount":                          {func() sandbox.Spec { s := kase; s.Mounts = []sandbox.Mount{{Volume: "v", Target: "/w"}}; return s }(), false, false},
		"a collected path":                 {func() sandbox.Spec { s := kase; s.Collect = []string{"/out"}; return s }(), false, false},
		"a stream-out directory":           {func() sandbox.Spec { s := kase; s.StreamOut = &sandbox.StreamOut{Dir: "/output"}; return s }(), false, false},
		"a tree where the launcher's goes": {func() sandbox.Spec { s := kase; s.Trees = []sandbox.Tree{{Dir: launchDir}}; return s }(), false, false},
	} {
		t.Run(name, func(t *testing.T) {
			l, ok := b.launchForm(c.spec, c.shape)
			if ok != c.want {
				t.Fatalf("launched %v, want %v", ok, c.want)
			}
			if !ok {
				if !slices.Equal(l.Cmd, c.spec.Cmd) || len(l.Trees) != len(c.spec.Trees) {
					t.Errorf("a spec not launched was changed: %+v", l)
				}
				return
			}
			if l.Stdin == nil || len(l.Trees) != len(c.spec.Trees)+1 || l.Trees[len(l.Trees)-1].Dir != launchDir {
				t.Errorf("form: stdin %v, trees %+v", l.Stdin != nil, l.Trees)
			}
			if want := []string{"python3", "-I", "-S", "-c", launchScript, launchDir + "/" + launchFile}; !slices.Equal(l.Cmd, want) {
				t.Errorf("command %q", l.Cmd)
			}
		})
	}

	// The case's form fits the pod its shape warmed: same key.
	lc, _ := b.launchForm(kase, false)
	ls, _ := b.launchForm(shape, true)
	_, _, _, caseKey, ok1 := b.warmable(lc)
	_, _, _, shapeKey, ok2 := b.warmable(ls)
	if !ok1 || !ok2 || caseKey != shapeKey {
		t.Errorf("case key %s (%v), shape key %s (%v): want one warmable shape", caseKey, ok1, shapeKey, ok2)
	}
	// Another case of the same phase too; one with another wall clock not.
	other := kase
	other.Cmd = []string{"/artifacts/run", "x"}
	other.Stdin = strings.NewReader("")
	lo, _ := b.launchForm(other, false)
	if _, _, _, k, _ := b.warmable(lo); k != caseKey {
		t.Error("two cases of one phase have different shapes")
	}
	slow := kase
	slow.Limits.Wall = 2 * time.Minute
	lw, _ := b.launchForm(slow, false)
	if _, _, _, k, _ := b.warmable(lw); k == caseKey {
		t.Error("a case with another wall clock shares the shape")
	}
}

// TestLaunchScript runs the launcher with the local python3, where there
// is one: the command line it executes, in its own place (the exit status
// and standard streams are the command's, the signals the interpreter
// ignores are back to their defaults), and 124 with a line on standard
// error when the command cannot run.
func TestLaunchScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here; the cluster tests run the launcher for real")
	}
	dir := t.TempDir()
	launch := func(argv any, stdin string) (string, string, int) {
		t.Helper()
		js, err := json.Marshal(argv)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "argv.json")
		if err := os.WriteFile(file, js, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(py, "-I", "-S", "-c", launchScript, file)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	out, _, code := launch([]string{"sh", "-c", `printf '%s|' "$@"; cat; exit 7`, "sh", "a b", `"q"`, "ü"}, "from stdin")
	if out != `a b|"q"|ü|from stdin` || code != 7 {
		t.Errorf("argv, input and status: %q %d", out, code)
	}
	out, _, _ = launch([]string{"sh", "-c", "grep SigIgn /proc/self/status"}, "")
	direct, err := exec.Command("sh", "-c", "grep SigIgn /proc/self/status").Output()
	if err != nil {
		t.Fatal(err)
	}
	if out != string(direct) {
		t.Errorf("ignored signals after the launcher %q, started directly %q", out, direct)
	}
	for _, bad := range []any{[]string{filepath.Join(dir, "missing")}, []string{}, "not a list", []any{"x", 1}} {
		_, stderr, code := launch(bad, "")
		if code != 124 || !strings.HasPrefix(stderr, "launch: ") {
			t.Errorf("%v: status %d, stderr %q; want 124 and a launch line", bad, code, stderr)
		}
	}
}

func isDefaultSeccomp(p *corev1.SeccompProfile) bool {
	return p != nil && p.Type == corev1.SeccompProfileTypeLocalhost && p.LocalhostProfile != nil && *p.LocalhostProfile == DefaultSeccompProfile
}

// TestSeccompProfileChoice: every container and the pod run under the
// profile Config.SeccompProfile names, strictgrade's own by default
// (ADR 0020), the runtime's default only when asked for by name.
func TestSeccompProfileChoice(t *testing.T) {
	spec := sandbox.Spec{Run: "r", Phase: "candidate", Image: "img:1", Cmd: []string{"true"},
		Mounts: []sandbox.Mount{{Volume: "v", Target: "/work"}}}
	for _, c := range []struct {
		name string
		want corev1.SeccompProfile
	}{
		{"", corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("strictgrade/strictgrade-sandbox-v1.json")}},
		{"site/other.json", corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("site/other.json")}},
		{RuntimeDefaultSeccomp, corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod(t, spec, Config{LoaderImage: "loader:1", SeccompProfile: c.name})
			if diff := cmp.Diff(&c.want, pod.Spec.SecurityContext.SeccompProfile); diff != "" {
				t.Errorf("pod (-want +got):\n%s", diff)
			}
			for _, k := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
				if diff := cmp.Diff(&c.want, k.SecurityContext.SeccompProfile); diff != "" {
					t.Errorf("container %s (-want +got):\n%s", k.Name, diff)
				}
			}
		})
	}
	if !bytes.Equal(SeccompProfileJSON(), seccomp.Profile()) {
		t.Error("SeccompProfileJSON is not the sandbox profile")
	}
}

// TestClusterInstallsSeccompProfile: the project's test cluster puts the
// profile where DefaultSeccompProfile points.
func TestClusterInstallsSeccompProfile(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", ".ci", "cluster.sh"))
	if err != nil {
		t.Fatal(err)
	}
	want := `"$STATE/kubelet/seccomp/` + DefaultSeccompProfile + `"`
	if !strings.Contains(string(script), want) || !strings.Contains(string(script), "internal/seccomp/profile.json") {
		t.Errorf(".ci/cluster.sh does not install internal/seccomp/profile.json as %s", want)
	}
}
