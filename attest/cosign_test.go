package attest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/attest"
)

// emptyTrustedRoot lets cosign v2 read a Sigstore bundle offline (without
// it v2 fetches TUF metadata); it trusts no log and no CA, so only the key
// decides.
const emptyTrustedRoot = `{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1","tlogs":[],"certificateAuthorities":[],"ctlogs":[],"timestampAuthorities":[]}`

// cosignBinary returns the cosign to test against: $STRICTGRADE_COSIGN, or
// cosign in PATH. The suite never requires it.
func cosignBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STRICTGRADE_COSIGN"); p != "" {
		return p
	}
	p, err := exec.LookPath("cosign")
	if err != nil {
		t.Skip("cosign not found (set STRICTGRADE_COSIGN or put cosign in PATH to run this interop test)")
	}
	return p
}

func runCosign(t *testing.T, bin, home string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestCosignVerifiesOurBundles runs stock `cosign verify-blob-attestation`
// on strictgrade's output for both key types and both packagings.
func TestCosignVerifiesOurBundles(t *testing.T) {
	bin := cosignBinary(t)
	password, err := os.ReadFile("testdata/cosign/password.txt")
	require.NoError(t, err)
	cosignKey, err := os.ReadFile("testdata/cosign/cosign.key")
	require.NoError(t, err)
	cosignSigner, err := attest.LoadSigner(cosignKey, password)
	require.NoError(t, err)

	version, _ := runCosign(t, bin, t.TempDir(), "version")
	isV3 := strings.Contains(version, "GitVersion:    v3.")
	t.Logf("cosign version:\n%s", version)

	signers := map[string]*attest.Signer{
		"ecdsa-p256":      newSigner(t, attest.KeyECDSAP256),
		"ed25519":         newSigner(t, attest.KeyEd25519),
		"cosign-made-key": cosignSigner,
	}
	for name, s := range signers {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name string, data []byte) string {
				p := filepath.Join(dir, name)
				require.NoError(t, os.WriteFile(p, data, 0o644))
				return p
			}
			signed, err := s.Sign(t.Context(), verdictFor(submissionA, nonce1), attest.SignOptions{})
			require.NoError(t, err)
			pubPEM, err := s.PublicKeyPEM()
			require.NoError(t, err)
			pub := write("strictgrade.pub", pubPEM)
			bundle := write("verdict.sigstore.json", signed.Bundle)
			envelope := write("verdict.dsse.json", signed.Envelope)
			root := write("trusted_root.json", []byte(emptyTrustedRoot))
			subA := write("submission.patch", submissionA)
			subB := write("other.patch", submissionB)

			tampered := write("tampered.sigstore.json", mutateBundle(t, signed.Bundle, func(_, env map[string]any) {
				env["payload"] = flipByte(t, env["payload"].(string), 300)
			}))
			verify := []string{"verify-blob-attestation", "--key", pub, "--type", attest.PredicateType, "--insecure-ignore-tlog=true"}
			with := func(extra ...string) []string { return append(append([]string{}, verify...), extra...) }
			cases := []struct {
				name string
				args []string
				ok   bool
				v3   bool // cosign v2 would reach for TUF metadata over the network
			}{
				{"bundle", with("--bundle", bundle, "--trusted-root", root, subA), true, false},
				{"bundle, the README command", with("--bundle", bundle, subA), true, true},
				{"envelope", with("--signature", envelope, subA), true, true},
				{"bundle, other submission", with("--bundle", bundle, "--trusted-root", root, subB), false, false},
				{"bundle, tampered payload", with("--bundle", tampered, "--trusted-root", root, subA), false, false},
				{"bundle, wrong type", []string{"verify-blob-attestation", "--key", pub, "--type", "https://slsa.dev/provenance/v1",
					"--insecure-ignore-tlog=true", "--bundle", bundle, "--trusted-root", root, subA}, false, false},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if c.v3 && !isV3 {
						t.Skip("needs cosign v3 to run offline")
					}
					out, err := runCosign(t, bin, t.TempDir(), c.args...)
					t.Logf("cosign %s\n%s", strings.Join(c.args, " "), out)
					if c.ok {
						require.NoError(t, err, out)
						assert.Contains(t, out, "Verified OK")
					} else {
						assert.Error(t, err, out)
						assert.NotContains(t, out, "Verified OK")
					}
				})
			}
		})
	}
}
