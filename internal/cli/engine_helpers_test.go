//go:build engine

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// assertNothingLeft is the README's leftover check narrowed to this
// process's objects: other processes on the machine may be grading now.
// The engine tests that call it run one at a time (none calls t.Parallel),
// so whatever this process holds at that moment is theirs.
func assertNothingLeft(t *testing.T) {
	t.Helper()
	pid := strconv.Itoa(os.Getpid())
	pidns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ps", "-aq"}, {"volume", "ls", "-q"}} {
		args = append(args, "--filter", "label=dev.strictgrade.managed=true",
			"--filter", "label=dev.strictgrade.owner.pid="+pid, "--filter", "label=dev.strictgrade.owner.pidns="+pidns)
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v\n%s", args, err, out)
		}
		if s := strings.TrimSpace(string(out)); s != "" {
			t.Errorf("left behind (docker %s): %s%s", strings.Join(args[:2], " "), s, describeLeft(args[0], strings.Fields(s)))
		}
	}
}

// describeLeft says what the objects left behind were: a container's name,
// state and status, an object's labels, so that a failing run carries its
// own diagnosis.
func describeLeft(kind string, ids []string) string {
	format := "{{.Name}} {{json .State}} {{json .Config.Labels}}"
	if kind == "volume" {
		format = "{{.Name}} {{json .Labels}}"
	}
	out, err := exec.Command("docker", append([]string{kind, "inspect", "--format", format}, ids...)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("\n(docker %s inspect: %v: %s)", kind, err, out)
	}
	return "\n" + strings.TrimSpace(string(out))
}
