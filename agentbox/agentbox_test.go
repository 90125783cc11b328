//go:build engine

package agentbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/agentbox"
	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

var (
	eng    *engine.Docker
	pyImg  string
	ctrl   *controller.Controller
	sumTsk *task.Task
)

func TestMain(m *testing.M) {
	ctx := context.Background()
	var err error
	if eng, err = engine.NewDocker(ctx, engine.Config{}); err != nil {
		fmt.Fprintln(os.Stderr, "agentbox tests need a Docker daemon:", err)
		os.Exit(1)
	}
	if pyImg, err = images.Ensure(ctx, eng, images.Python{}, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		os.Exit(1)
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		os.Exit(1)
	}
	if err := controller.BuildImages(ctx, eng, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if ctrl, err = controller.New(ctx, controller.Config{Backend: eng, Signer: signer}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if sumTsk, err = task.Load(ctx, filepath.Join("..", "examples", "sum", "task")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	eng.Close()
	os.Exit(code)
}

func assertClean(t testing.TB, run string) {
	t.Helper()
	left, err := eng.Leftovers(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("run %s left %v", run, left)
	}
}

func open(t *testing.T, run string) *agentbox.Box {
	t.Helper()
	b, err := agentbox.Open(t.Context(), eng, sumTsk.Public(), agentbox.Config{Run: run, Image: pyImg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close(context.Background())
		assertClean(t, run)
	})
	return b
}

func TestHostLoopAgent(t *testing.T) {
	t.Parallel()
	b := open(t, "box-loop")
	ctx := t.Context()
	res, err := b.Exec(ctx, sandbox.ExecSpec{Cmd: []string{"sh", "-c", "ls -A /work; id -u"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Stdout); got != "README.md\n65532\n" {
		t.Fatalf("the agent sees %q", got)
	}
	// Nothing hidden is anywhere in the box: no cases file, no expected value.
	res, err = b.Exec(ctx, sandbox.ExecSpec{Cmd: []string{"sh", "-c",
		"find / -xdev \\( -name cases.json -o -name task.json \\) 2>/dev/null; grep -rls 1999999999999999999999999999999 /work /tmp /etc /root /home 2>/dev/null; env | grep -i -e expected -e secret -e key; true"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(res.Stdout)) != "" {
		t.Fatalf("hidden material visible to the agent: %q", res.Stdout)
	}
	honest, err := os.ReadFile(filepath.Join("..", "examples", "sum", "solutions", "honest", "solution.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteFile(ctx, "solution.py", honest, false); err != nil {
		t.Fatal(err)
	}
	back, err := b.ReadFile(ctx, "/work/solution.py")
	if err != nil || !bytes.Equal(back, honest) {
		t.Fatalf("read back %q, %v", back, err)
	}
	res, err = b.Exec(ctx, sandbox.ExecSpec{Cmd: []string{"python3", "-c", "import solution; print(solution.solve([1, 2, 39]))"}})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "42" {
		t.Fatalf("agent's own check: %v %+v", err, res)
	}
	if _, err := b.ReadFile(ctx, "/etc/passwd"); err == nil {
		t.Fatal("read outside /work allowed")
	}
	archive, err := b.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ctrl.Grade(ctx, sumTsk, controller.Submission{Archive: bytes.NewReader(archive)})
	if err != nil {
		t.Fatal(err)
	}
	if g.Verdict.Outcome != schema.OutcomePass {
		t.Fatalf("exported work graded %s: %s", g.Verdict.Outcome, g.Verdict.Reason)
	}
}

func TestAgentCommandToCompletion(t *testing.T) {
	t.Parallel()
	b := open(t, "box-run")
	res, err := b.RunAgent(t.Context(), []string{"sh", "-c", "printf 'def solve(n):\\n    return sum(n)\\n' > solution.py && echo done"}, nil)
	if err != nil || res.Code != 0 || string(res.Stdout) != "done\n" {
		t.Fatalf("agent run: %v %+v", err, res)
	}
	archive, err := b.Export(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	g, err := ctrl.Grade(t.Context(), sumTsk, controller.Submission{Archive: bytes.NewReader(archive)})
	if err != nil || g.Verdict.Outcome != schema.OutcomePass {
		t.Fatalf("grade: %v %+v", err, g.Verdict)
	}
}

func TestExportRefusesLinks(t *testing.T) {
	t.Parallel()
	b := open(t, "box-link")
	if _, err := b.Exec(t.Context(), sandbox.ExecSpec{Cmd: []string{"ln", "-s", "/etc/shadow", "solution.py"}}); err != nil {
		t.Fatal(err)
	}
	_, err := b.Export(t.Context())
	if !errors.Is(err, sandbox.ErrCollect) && !errors.Is(err, firewall.ErrSymlink) {
		t.Fatalf("export of a symlinked artifact: %v", err)
	}
}

func TestOpenFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	_, err := agentbox.Open(t.Context(), eng, sumTsk.Public(), agentbox.Config{Run: "box-bad-image", Image: "sha256:" + strings.Repeat("0", 64)})
	if err == nil {
		t.Fatal("a box opened on a missing image")
	}
	assertClean(t, "box-bad-image")
}

func TestExportMissingArtifact(t *testing.T) {
	t.Parallel()
	b := open(t, "box-missing")
	if _, err := b.Export(t.Context()); err == nil || !strings.Contains(err.Error(), "solution.py") {
		t.Fatalf("export without the artifact: %v", err)
	}
}
