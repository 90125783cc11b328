//go:build engine

package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/strictgrade/strictgrade/internal/engine"
)

// TestGCLeavesRunningGradesAlone shows the default mode against the real
// daemon: a volume of this live process survives it, a volume whose owner
// is gone does not, --dry-run lists without removing and --all removes
// the rest.
func TestGCLeavesRunningGradesAlone(t *testing.T) {
	ctx := t.Context()
	id := fmt.Sprintf("gccli%d", os.Getpid())
	eng, err := engine.NewDocker(ctx, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	t.Cleanup(func() { _, _ = eng.GC(context.Background(), engine.GCOptions{Run: id, All: true}) })

	live, err := eng.NewVolume(ctx, id, "work")
	if err != nil {
		t.Fatal(err)
	}
	// A volume as a killed process leaves it: its labels name this
	// machine, boot and pid namespace, and a pid whose process has ended.
	labels := liveLabels(t, cli, live)
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	labels[engine.LabelOwnerPID] = strconv.Itoa(child.Process.Pid)
	labels[engine.LabelOwnerStart] = "0"
	dead := "sg-" + id + "-orphan"
	if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: dead, Labels: labels}); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := run(t, "gc", "--run", id, "--dry-run")
	if code != ExitOK || stdout != "volume\t"+dead+"\n" || !strings.Contains(stderr, "would remove 0 containers, 1 volumes; left 1") {
		t.Fatalf("gc --dry-run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := volumes(t, cli, id); len(got) != 2 {
		t.Fatalf("a dry run removed something: %v", got)
	}
	code, stdout, stderr = run(t, "gc", "--run", id)
	if code != ExitOK || stdout != "volume\t"+dead+"\n" {
		t.Fatalf("gc: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := volumes(t, cli, id); len(got) != 1 || got[0] != live {
		t.Fatalf("after gc: %v, want only the live process's %s", got, live)
	}
	code, stdout, stderr = run(t, "gc", "--run", id, "--all")
	if code != ExitOK || stdout != "volume\t"+live+"\n" {
		t.Fatalf("gc --all: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := volumes(t, cli, id); len(got) != 0 {
		t.Fatalf("after gc --all: %v", got)
	}

	for _, args := range [][]string{{"gc", "extra"}, {"gc", "--max-age", "0s"}, {"gc", "--older-than", "-1s"}} {
		if code, _, stderr := run(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, ExitUsage, stderr)
		}
	}
}

func liveLabels(t *testing.T, cli *client.Client, vol string) map[string]string {
	t.Helper()
	v, err := cli.VolumeInspect(t.Context(), vol)
	if err != nil {
		t.Fatal(err)
	}
	if v.Labels[engine.LabelOwnerPID] != strconv.Itoa(os.Getpid()) {
		t.Fatalf("the volume's owner labels do not name this process: %v", v.Labels)
	}
	labels := map[string]string{}
	for k, val := range v.Labels {
		labels[k] = val
	}
	return labels
}

func volumes(t *testing.T, cli *client.Client, run string) []string {
	t.Helper()
	list, err := cli.VolumeList(t.Context(), volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", engine.LabelRun+"="+run))})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range list.Volumes {
		names = append(names, v.Name)
	}
	return names
}
