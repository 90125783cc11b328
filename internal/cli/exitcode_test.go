package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/schema"
)

// withEngine is set by the engine-tagged tests: the cases that grade run
// only then.
var withEngine bool

var (
	sumTask   = filepath.Join("..", "..", "examples", "sum", "task")
	sumHonest = filepath.Join("..", "..", "examples", "sum", "solutions", "honest")
	sumWrong  = filepath.Join("..", "..", "examples", "sum", "solutions", "wrong")
)

// TestExitCodes produces every documented exit code with a real case. The
// cases that grade need a daemon and run under the engine tag; the daemon
// named by DOCKER_HOST is unreachable in the ERROR case.
func TestExitCodes(t *testing.T) {
	for _, tt := range []struct {
		name   string
		engine bool
		env    map[string]string
		args   func(t *testing.T) []string
		stdin  func(t *testing.T) []byte
		code   int
		stderr string // a substring of stderr
	}{
		{name: "PASS", engine: true, code: ExitOK,
			args: fixed("grade", "--task", sumTask, "--submission", sumHonest)},
		{name: "FAIL", engine: true, code: ExitFail, stderr: "the verdict is FAIL",
			args: fixed("grade", "--task", sumTask, "--submission", sumWrong)},
		{name: "QUARANTINED", engine: true, code: ExitQuarantined, stderr: "QUARANTINED: hidden tests pass at the base: tests/test_already.py::test_already",
			args: func(t *testing.T) []string { return []string{"task", "check", unfitTask(t)} }},
		{name: "usage", code: ExitUsage, stderr: "--task DIR and --submission PATH are required",
			args: fixed("grade", "--task", sumTask)},
		{name: "usage: --out a directory, before grading", code: ExitUsage, stderr: "is a directory",
			env: map[string]string{"DOCKER_HOST": "unix:///nonexistent"},
			args: func(t *testing.T) []string {
				return []string{"grade", "--task", sumTask, "--submission", sumHonest, "--out", t.TempDir()}
			}},
		{name: "usage: a malformed --nonce, before grading", code: ExitUsage, stderr: "--nonce must be",
			env:  map[string]string{"DOCKER_HOST": "unix:///nonexistent"},
			args: fixed("grade", "--task", sumTask, "--submission", sumHonest, "--nonce", "short")},
		{name: "usage: --out in a missing directory, before grading", code: ExitUsage, stderr: "cannot write in its directory",
			env: map[string]string{"DOCKER_HOST": "unix:///nonexistent"},
			args: func(t *testing.T) []string {
				return []string{"grade", "--task", sumTask, "--submission", sumHonest, "--out", filepath.Join(t.TempDir(), "no", "v.json")}
			}},
		{name: "usage: matrix --run selecting nothing", code: ExitUsage, stderr: "matches no probe",
			args: fixed("matrix", "--run", "^no-such-probe$")},
		{name: "ERROR: daemon unreachable", code: ExitError, stderr: "not reachable",
			env:  map[string]string{"DOCKER_HOST": "unix:///nonexistent"},
			args: fixed("grade", "--task", sumTask, "--submission", sumHonest)},
		{name: "ERROR: encrypted key without its password", code: ExitError, stderr: "$STRICTGRADE_KEY_PASSWORD, else $COSIGN_PASSWORD",
			env: map[string]string{"STRICTGRADE_KEY_PASSWORD": "", "COSIGN_PASSWORD": ""},
			args: func(t *testing.T) []string {
				return []string{"grade", "--task", sumTask, "--submission", sumHonest, "--key", encryptedKey(t)}
			}},
		{name: "usage: an unknown backend", code: ExitUsage, stderr: `--backend "nomad": want docker or kubernetes`,
			args: fixed("grade", "--task", sumTask, "--submission", sumHonest, "--backend", "nomad")},
		{name: "usage: a kubeconfig without the kubernetes backend", code: ExitUsage, stderr: "add --backend kubernetes",
			args: fixed("grade", "--task", sumTask, "--submission", sumHonest, "--kubeconfig", "/nonexistent")},
		{name: "usage: a seccomp profile without the kubernetes backend", code: ExitUsage, stderr: "add --backend kubernetes",
			args: fixed("grade", "--task", sumTask, "--submission", sumHonest, "--seccomp-profile", "RuntimeDefault")},
		{name: "usage: a negative --case-parallel", code: ExitUsage, stderr: "--case-parallel -1",
			args: fixed("grade", "--task", sumTask, "--submission", sumHonest, "--case-parallel", "-1")},
		{name: "ERROR: both tiers' matrix on an unreachable cluster", code: ExitError, stderr: "kubernetes backend: ",
			args: func(t *testing.T) []string {
				return []string{"matrix", "--backend", "kubernetes", "--kubeconfig", deadCluster(t)}
			}},
		{name: "ERROR: API server unreachable", code: ExitError, stderr: "kubernetes backend: ",
			args: func(t *testing.T) []string {
				return []string{"grade", "--task", sumTask, "--submission", sumHonest, "--backend", "kubernetes", "--kubeconfig", deadCluster(t)}
			}},
		{name: "accepted", code: ExitOK, args: fixed("firewall", "check"), stdin: archive(tar.TypeReg)},
		{name: "rejected", code: ExitFail, stderr: "strictgrade firewall check: ", args: fixed("firewall", "check"), stdin: archive(tar.TypeSymlink)},
		{name: "help", code: ExitOK, args: fixed("images", "--help")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.engine && !withEngine {
				t.Skip("grades: run with -tags engine")
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stdin []byte
			if tt.stdin != nil {
				stdin = tt.stdin(t)
			}
			var stdout, stderr bytes.Buffer
			code := Run(t.Context(), tt.args(t), bytes.NewReader(stdin), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, want %d with %q on stderr\nstdout:\n%s\nstderr:\n%s", code, tt.code, tt.stderr, stdout.String(), stderr.String())
			}
		})
	}
}

// deadCluster writes a kubeconfig naming an API server nobody serves.
func deadCluster(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the port is now refused
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://" + addr + "\n    insecure-skip-tls-verify: true\n" +
		"contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n    namespace: default\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: x\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func fixed(args ...string) func(*testing.T) []string {
	return func(*testing.T) []string { return args }
}

// archive is a one-entry tar stream; a symlink is rejected.
func archive(kind byte) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		h := &tar.Header{Name: "solution.py", Typeflag: kind, Mode: 0o644}
		if kind == tar.TypeSymlink {
			h.Linkname = "/etc/passwd"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
}

// encryptedKey writes a password-protected private key.
func encryptedKey(t *testing.T) string {
	dir := t.TempDir()
	priv, _, err := attest.WriteKeyPair(dir, attest.KeyECDSAP256, []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// unfitTask copies the textkit compat task and adds a hidden test that
// already passes at the base commit: the baseline run quarantines it.
func unfitTask(t *testing.T) string {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "examples", "compat-textkit", "task"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hidden", "tests", "test_already.py"), []byte("def test_already():\n    assert True\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "task.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	hidden := spec["hidden"].(map[string]any)
	hidden["tests"] = append(hidden["tests"].([]any), "tests/test_already.py::test_already")
	if data, err = json.Marshal(spec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestExitCode is the mapping itself, one row per kind of answer.
func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code int
	}{
		{nil, ExitOK},
		{flag.ErrHelp, ExitOK},
		{outcome(schema.OutcomePass, "PASS"), ExitOK},
		{outcome(schema.OutcomeFail, "FAIL"), ExitFail},
		{fmt.Errorf("check: %w", &firewall.RejectError{Err: firewall.ErrSymlink}), ExitFail},
		{fmt.Errorf("%w: subject digest", attest.ErrVerificationFailed), ExitFail},
		{usagef("bad flag"), ExitUsage},
		{within("task check", badInput(errors.New("malformed task"))), ExitUsage},
		{outcome(schema.OutcomeError, "ERROR"), ExitError},
		{fmt.Errorf("%w: daemon", controller.ErrCouldNotGrade), ExitError},
		{context.Canceled, ExitError},
		{outcome(schema.OutcomeQuarantined, "QUARANTINED"), ExitQuarantined},
	} {
		if got := exitCode(tt.err); got != tt.code {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.code)
		}
	}
}
