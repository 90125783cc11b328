package attest_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/attest"
)

func pemType(t *testing.T, data []byte) string {
	t.Helper()
	b, _ := pem.Decode(data)
	require.NotNil(t, b)
	return b.Type
}

func TestGenerateAndLoad(t *testing.T) {
	// Each encrypted case costs a few scrypt runs (~0.1 s, more under
	// -race), so the subtests run in parallel and only one tries the
	// wrong passwords.
	tests := []struct {
		kt         attest.KeyType
		password   []byte
		pemType    string
		tryWrongPW bool
	}{
		{attest.KeyECDSAP256, nil, "PRIVATE KEY", false},
		{attest.KeyEd25519, nil, "PRIVATE KEY", false},
		{attest.KeyECDSAP256, []byte("s3cret"), "ENCRYPTED SIGSTORE PRIVATE KEY", true},
		{attest.KeyEd25519, []byte("s3cret"), "ENCRYPTED SIGSTORE PRIVATE KEY", false},
		{attest.KeyECDSAP256, []byte{}, "ENCRYPTED SIGSTORE PRIVATE KEY", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/password=%q", tt.kt, tt.password), func(t *testing.T) {
			t.Parallel()
			priv, pub, err := attest.GenerateKey(tt.kt, tt.password)
			require.NoError(t, err)
			assert.Equal(t, tt.pemType, pemType(t, priv))
			assert.Equal(t, "PUBLIC KEY", pemType(t, pub))

			s, err := attest.LoadSigner(priv, tt.password)
			require.NoError(t, err)
			assert.Equal(t, tt.kt, s.KeyType())
			pubKey, err := attest.LoadPublicKey(pub)
			require.NoError(t, err)
			hint, err := attest.KeyHint(pubKey)
			require.NoError(t, err)
			assert.Equal(t, hint, s.Hint(), "public PEM and private key disagree")
			pemPub, err := s.PublicKeyPEM()
			require.NoError(t, err)
			assert.Equal(t, pub, pemPub)

			if tt.tryWrongPW {
				_, err := attest.LoadSigner(priv, []byte("wrong"))
				assert.ErrorIs(t, err, attest.ErrPassword)
				_, err = attest.LoadSigner(priv, nil)
				assert.ErrorIs(t, err, attest.ErrPassword)
			}
		})
	}
}

func TestLoadSignerFormats(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	sec1, err := x509.MarshalECPrivateKey(ec)
	require.NoError(t, err)
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	edPKCS8, err := x509.MarshalPKCS8PrivateKey(ed)
	require.NoError(t, err)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	p384DER, err := x509.MarshalPKCS8PrivateKey(p384)
	require.NoError(t, err)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsaDER, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	require.NoError(t, err)
	enc := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }

	tests := []struct {
		name string
		pem  []byte
		want attest.KeyType
		err  error
	}{
		{"SEC 1 EC PRIVATE KEY", enc("EC PRIVATE KEY", sec1), attest.KeyECDSAP256, nil},
		{"PKCS#8 Ed25519", enc("PRIVATE KEY", edPKCS8), attest.KeyEd25519, nil},
		{"P-384 refused", enc("PRIVATE KEY", p384DER), "", attest.ErrKey},
		{"RSA refused", enc("PRIVATE KEY", rsaDER), "", attest.ErrKey},
		{"not PEM", []byte("hello"), "", attest.ErrKey},
		{"public key as private", enc("PUBLIC KEY", []byte{1, 2, 3}), "", attest.ErrKey},
		{"corrupt PKCS#8", enc("PRIVATE KEY", []byte{1, 2, 3}), "", attest.ErrKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := attest.LoadSigner(tt.pem, nil)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
				assert.Nil(t, s)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, s.KeyType())
		})
	}
}

func TestLoadPublicKey(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsaDER, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	require.NoError(t, err)
	tests := []struct {
		name string
		pem  []byte
		err  error
	}{
		{"RSA", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaDER}), attest.ErrKey},
		{"garbage", []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), attest.ErrKey},
		{"empty", nil, attest.ErrKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := attest.LoadPublicKey(tt.pem)
			assert.ErrorIs(t, err, tt.err)
		})
	}
	_, err = attest.LoadPublicKeyFile(filepath.Join(t.TempDir(), "missing.pub"))
	assert.ErrorIs(t, err, attest.ErrKey)
}

func TestWriteKeyPair(t *testing.T) {
	for _, kt := range keyTypes {
		t.Run(string(kt), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "keys")
			privPath, pubPath, err := attest.WriteKeyPair(dir, kt, nil)
			require.NoError(t, err)
			for path, mode := range map[string]fs.FileMode{privPath: 0o600, pubPath: 0o644, dir: 0o700 | fs.ModeDir} {
				st, err := os.Stat(path)
				require.NoError(t, err)
				assert.Equal(t, mode, st.Mode(), path)
			}
			s, err := attest.LoadSignerFile(privPath, nil)
			require.NoError(t, err)
			pub, err := attest.LoadPublicKeyFile(pubPath)
			require.NoError(t, err)
			signed, err := s.Sign(t.Context(), verdictFor(submissionA, nonce1), attest.SignOptions{})
			require.NoError(t, err)
			_, err = attest.Verify(signed.Bundle, pub, expectA())
			require.NoError(t, err)

			// A second run refuses and leaves both files alone.
			before, err := os.ReadFile(privPath)
			require.NoError(t, err)
			_, _, err = attest.WriteKeyPair(dir, kt, nil)
			assert.ErrorIs(t, err, fs.ErrExist)
			after, err := os.ReadFile(privPath)
			require.NoError(t, err)
			assert.Equal(t, before, after)
		})
	}
	t.Run("refuses when only the public key exists", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, attest.PublicKeyFile), []byte("x"), 0o644))
		_, _, err := attest.WriteKeyPair(dir, attest.KeyECDSAP256, nil)
		assert.ErrorIs(t, err, fs.ErrExist)
		_, err = os.Stat(filepath.Join(dir, attest.PrivateKeyFile))
		assert.ErrorIs(t, err, fs.ErrNotExist)
	})
}

// TestCosignKeyLoadsAndSigns uses a key pair made by `cosign
// generate-key-pair` (cosign v2.6.5; password in testdata/cosign/password.txt).
func TestCosignKeyLoadsAndSigns(t *testing.T) {
	password, err := os.ReadFile("testdata/cosign/password.txt")
	require.NoError(t, err)
	privPEM, err := os.ReadFile("testdata/cosign/cosign.key")
	require.NoError(t, err)
	assert.Equal(t, "ENCRYPTED SIGSTORE PRIVATE KEY", pemType(t, privPEM))

	s, err := attest.LoadSigner(privPEM, password)
	require.NoError(t, err)
	assert.Equal(t, attest.KeyECDSAP256, s.KeyType())
	pub, err := attest.LoadPublicKeyFile("testdata/cosign/cosign.pub")
	require.NoError(t, err)

	signed, err := s.Sign(t.Context(), verdictFor(submissionA, nonce1), attest.SignOptions{})
	require.NoError(t, err)
	got, err := attest.Verify(signed.Bundle, pub, expectA())
	require.NoError(t, err)
	assert.Equal(t, signed.Payload, got.Payload)

	_, err = attest.LoadSigner(privPEM, []byte("not the password"))
	assert.ErrorIs(t, err, attest.ErrPassword)
}

// TestSignerDoesNotLeakKey checks every ordinary way a value escapes into
// logs or files.
func TestSignerDoesNotLeakKey(t *testing.T) {
	privPEM, _, err := attest.GenerateKey(attest.KeyEd25519, nil)
	require.NoError(t, err)
	block, _ := pem.Decode(privPEM)
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	seed := key.(ed25519.PrivateKey).Seed()
	s, err := attest.LoadSigner(privPEM, nil)
	require.NoError(t, err)

	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("signer", "s", s, "v", *s)
	outputs := []string{
		fmt.Sprintf("%v", s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), fmt.Sprintf("%s", s),
		fmt.Sprintf("%v", *s), fmt.Sprintf("%+v", *s), fmt.Sprintf("%#v", *s),
		logs.String(),
	}
	for _, out := range outputs {
		assert.Contains(t, out, "ed25519")
		for _, secret := range []string{fmt.Sprintf("%x", seed), fmt.Sprintf("%v", seed), fmt.Sprintf("%X", seed)} {
			assert.NotContains(t, out, secret)
		}
		assert.NotContains(t, out, strings.TrimSpace(string(block.Bytes)))
	}
	assert.Equal(t, fmt.Sprintf("%x", s.String()), fmt.Sprintf("%x", *s))
	_, err = json.Marshal(s)
	assert.Error(t, err)
	_, err = json.Marshal(map[string]any{"nested": s})
	assert.Error(t, err)
}
