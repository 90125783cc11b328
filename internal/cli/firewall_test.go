package cli_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/cli"
)

// firewallCLI runs strictgrade with stdin and returns the exit code and
// both streams.
func firewallCLI(t *testing.T, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Run(t.Context(), args, bytes.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

type tarEnt struct {
	hdr  tar.Header
	data string
}

func makeTar(t *testing.T, ents ...tarEnt) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range ents {
		h := e.hdr
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		require.NoError(t, tw.WriteHeader(&h))
		_, err := tw.Write([]byte(e.data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return b.Bytes()
}

func reg(name, data string) tarEnt {
	return tarEnt{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o600}, data: data}
}

// listDir returns the names in dir, to check nothing stray is left.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := []string{}
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestFirewallCheckAccepts(t *testing.T) {
	in := makeTar(t, reg("./src/main.py", "print(42)\n"), reg("README", "hi\n"))
	var want bytes.Buffer
	wantManifest, err := firewall.Filter(context.Background(), bytes.NewReader(in), &want, firewall.Policy{})
	require.NoError(t, err)

	dir := t.TempDir()
	out, man := filepath.Join(dir, "canon.tar"), filepath.Join(dir, "manifest.json")
	code, stdout, stderr := firewallCLI(t, in, "firewall", "check", "--out", out, "--manifest", man)
	require.Equal(t, cli.ExitOK, code, stderr)
	require.Empty(t, stderr)
	require.Equal(t, "accepted sha256:"+wantManifest.ArchiveSHA256+" (2 files, 1 directories, 13 bytes, 0 dropped)\n", stdout)

	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, want.Bytes(), got)
	fi, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	data, err := os.ReadFile(man)
	require.NoError(t, err)
	var gotManifest firewall.Manifest
	require.NoError(t, json.Unmarshal(data, &gotManifest))
	if diff := cmp.Diff(*wantManifest, gotManifest); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
	require.Equal(t, []string{"canon.tar", "manifest.json"}, listDir(t, dir), "no temporary files left")
}

func TestFirewallCheckStdout(t *testing.T) {
	in := makeTar(t, reg("a.txt", "a"))
	var want bytes.Buffer
	m, err := firewall.Filter(context.Background(), bytes.NewReader(in), &want, firewall.Policy{})
	require.NoError(t, err)

	code, stdout, stderr := firewallCLI(t, in, "firewall", "check", "--out", "-")
	require.Equal(t, cli.ExitOK, code, stderr)
	require.Equal(t, want.String(), stdout)
	require.Contains(t, stderr, m.ArchiveSHA256)

	code, stdout, stderr = firewallCLI(t, in, "firewall", "check", "--manifest", "-")
	require.Equal(t, cli.ExitOK, code, stderr)
	var got firewall.Manifest
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.Equal(t, m.ArchiveSHA256, got.ArchiveSHA256)
}

func TestFirewallCheckRejects(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string // in the one-line reason
	}{
		{"symlink", makeTar(t, reg("ok", "x"), tarEnt{hdr: tar.Header{Name: "evil\nlink", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}}),
			`firewall: symlink: entry "evil\nlink": symbolic link to "/etc/shadow"`},
		{"hardlink", makeTar(t, reg("a", "x"), tarEnt{hdr: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "a"}}),
			`firewall: hardlink: entry "h"`},
		{"fifo", makeTar(t, tarEnt{hdr: tar.Header{Name: "p", Typeflag: tar.TypeFifo}}), `firewall: fifo: entry "p"`},
		{"traversal", makeTar(t, reg("../../etc/cron.d/x", "x")), `firewall: path traversal: entry "../../etc/cron.d/x"`},
		{"truncated", makeTar(t, reg("a", strings.Repeat("a", 3000)))[:2048], `firewall: truncated archive: entry "a"`},
		{"gzip", []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"), "firewall: compressed input"},
		{"empty", nil, "firewall: bad end of archive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out, man := filepath.Join(dir, "canon.tar"), filepath.Join(dir, "manifest.json")
			// Stale results from an earlier run must not survive a rejection.
			require.NoError(t, os.WriteFile(out, []byte("stale"), 0o644))
			require.NoError(t, os.WriteFile(man, []byte("stale"), 0o644))

			code, stdout, stderr := firewallCLI(t, tc.in, "firewall", "check", "--out", out, "--manifest", man)
			require.Equal(t, cli.ExitFail, code)
			require.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			require.True(t, strings.HasPrefix(stderr, "strictgrade firewall check: "+tc.want), stderr)
			require.Empty(t, listDir(t, dir), "no output may remain")
		})
	}
}

func TestFirewallCheckPolicy(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(policy, []byte(`{"deny":["conftest.py",".git/"],"deny_action":"drop","max_file_bytes":100}`), 0o644))
	in := makeTar(t, reg("src/app.py", "x"), reg("tests/conftest.py", "evil"), reg(".git/config", "c"))

	code, stdout, stderr := firewallCLI(t, in, "firewall", "check", "--policy", policy, "--manifest", "-")
	require.Equal(t, cli.ExitOK, code, stderr)
	var m firewall.Manifest
	require.NoError(t, json.Unmarshal([]byte(stdout), &m))
	require.Equal(t, []firewall.Drop{
		{Path: "tests/conftest.py", Reason: `matches deny pattern "conftest.py"`},
		{Path: ".git/config", Reason: `below ".git", which matches deny pattern ".git/"`},
	}, m.Dropped)
	require.Len(t, m.Files, 1)

	code, _, stderr = firewallCLI(t, makeTar(t, reg("big", strings.Repeat("b", 101))), "firewall", "check", "--policy", policy)
	require.Equal(t, cli.ExitFail, code)
	require.Contains(t, stderr, "firewall: limit exceeded: entry \"big\"")
}

func TestFirewallCheckUsage(t *testing.T) {
	dir := t.TempDir()
	badPolicy := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(badPolicy, []byte(`{"max_entrys": 3}`), 0o644))
	in := makeTar(t, reg("a", "a"))
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no-subcommand", []string{"firewall"}, cli.ExitUsage},
		{"unknown-subcommand", []string{"firewall", "scan"}, cli.ExitUsage},
		{"positional", []string{"firewall", "check", "archive.tar"}, cli.ExitUsage},
		{"unknown-flag", []string{"firewall", "check", "--in", "x"}, cli.ExitUsage},
		{"both-stdout", []string{"firewall", "check", "--out", "-", "--manifest", "-"}, cli.ExitUsage},
		{"same-file", []string{"firewall", "check", "--out", filepath.Join(dir, "x"), "--manifest", filepath.Join(dir, "x")}, cli.ExitUsage},
		{"out-is-dir", []string{"firewall", "check", "--out", dir}, cli.ExitUsage},
		{"out-is-device", []string{"firewall", "check", "--out", os.DevNull}, cli.ExitUsage},
		{"missing-policy", []string{"firewall", "check", "--policy", filepath.Join(dir, "nope.json")}, cli.ExitUsage},
		{"unknown-policy-field", []string{"firewall", "check", "--policy", badPolicy}, cli.ExitUsage},
		{"negative-timeout", []string{"firewall", "check", "--timeout", "-1s"}, cli.ExitUsage},
		{"help", []string{"firewall", "check", "-h"}, cli.ExitOK},
		{"firewall-help", []string{"firewall", "help"}, cli.ExitOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := firewallCLI(t, in, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Empty(t, stdout)
			require.NotEmpty(t, stderr)
		})
	}
	_, err := os.Stat(os.DevNull)
	require.NoError(t, err, "the device must be untouched")
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestFirewallCheckReadError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := cli.Run(t.Context(), []string{"firewall", "check"}, failingReader{}, &stdout, &stderr)
	require.Equal(t, cli.ExitError, code)
	require.Contains(t, stderr.String(), "reading input")
}
