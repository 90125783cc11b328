package cli_test

import (
	"bytes"
	"encoding/pem"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/internal/cli"
)

// run calls cli.Run and returns the exit code and both streams.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Run(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestKeygen(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		keyType  attest.KeyType
		password string
	}{
		{"default is ECDSA P-256", nil, attest.KeyECDSAP256, ""},
		{"ed25519", []string{"--type", "ed25519"}, attest.KeyEd25519, ""},
		{"encrypted", []string{"--password-env", "SG_TEST_KEY_PASSWORD"}, attest.KeyECDSAP256, "hunter2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.password != "" {
				t.Setenv("SG_TEST_KEY_PASSWORD", tt.password)
			}
			dir := filepath.Join(t.TempDir(), "keys")
			code, stdout, stderr := run(t, append([]string{"keygen", "--out", dir}, tt.args...)...)
			require.Equal(t, cli.ExitOK, code, stderr)

			privPath := filepath.Join(dir, attest.PrivateKeyFile)
			pubPath := filepath.Join(dir, attest.PublicKeyFile)
			assert.Contains(t, stdout, "private\t"+privPath+"\n")
			assert.Contains(t, stdout, "public\t"+pubPath+"\n")
			for path, mode := range map[string]fs.FileMode{privPath: 0o600, pubPath: 0o644} {
				st, err := os.Stat(path)
				require.NoError(t, err)
				assert.Equal(t, mode, st.Mode().Perm(), path)
			}

			privPEM, err := os.ReadFile(privPath)
			require.NoError(t, err)
			block, _ := pem.Decode(privPEM)
			require.NotNil(t, block)
			var password []byte
			if tt.password != "" {
				assert.Equal(t, "ENCRYPTED SIGSTORE PRIVATE KEY", block.Type)
				password = []byte(tt.password)
			} else {
				assert.Equal(t, "PRIVATE KEY", block.Type)
			}
			s, err := attest.LoadSigner(privPEM, password)
			require.NoError(t, err)
			assert.Equal(t, tt.keyType, s.KeyType())
			assert.Contains(t, stdout, "hint\t"+s.Hint()+"\n")
			assert.NotContains(t, stdout+stderr, string(privPEM), "the private key must never be printed")
		})
	}
}

func TestKeygenRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := run(t, "keygen", "--out", dir)
	require.Equal(t, cli.ExitOK, code, stderr)
	before, err := os.ReadFile(filepath.Join(dir, attest.PrivateKeyFile))
	require.NoError(t, err)

	code, _, stderr = run(t, "keygen", "--out", dir, "--type", "ed25519")
	assert.Equal(t, cli.ExitError, code)
	assert.Contains(t, stderr, "refusing to overwrite")
	after, err := os.ReadFile(filepath.Join(dir, attest.PrivateKeyFile))
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

func TestKeygenUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no --out", []string{"keygen"}, cli.ExitUsage},
		{"unknown type", []string{"keygen", "--out", dir, "--type", "rsa"}, cli.ExitUsage},
		{"stray argument", []string{"keygen", "--out", dir, "extra"}, cli.ExitUsage},
		{"unknown flag", []string{"keygen", "--force"}, cli.ExitUsage},
		{"password variable unset", []string{"keygen", "--out", dir, "--password-env", "SG_TEST_SURELY_UNSET"}, cli.ExitUsage},
		{"help", []string{"keygen", "-h"}, cli.ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, _ := run(t, tt.args...)
			assert.Equal(t, tt.code, code)
			assert.Empty(t, stdout)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "a refused command must not write keys")
}
