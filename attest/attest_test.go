package attest_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/schema"
)

func TestSignVerifyRoundTrip(t *testing.T) {
	for _, kt := range keyTypes {
		s := newSigner(t, kt)
		v := verdictFor(submissionA, nonce1)
		signed, err := s.Sign(t.Context(), v, attest.SignOptions{Time: signedAt})
		require.NoError(t, err)
		for _, tc := range []struct {
			format attest.Format
			data   []byte
		}{
			{attest.FormatBundle, signed.Bundle},
			{attest.FormatEnvelope, signed.Envelope},
		} {
			t.Run(string(kt)+"/"+string(tc.format), func(t *testing.T) {
				got, err := attest.Verify(tc.data, s.PublicKey(), expectA())
				require.NoError(t, err)
				assert.Equal(t, tc.format, got.Format)
				assert.Equal(t, signed.Payload, got.Payload, "Verify must return the exact signed bytes")
				assert.Equal(t, s.Hint(), got.KeyHint)
				if diff := cmp.Diff(v, got.Verdict); diff != "" {
					t.Errorf("verdict changed on the way (-signed +verified):\n%s", diff)
				}
				if diff := cmp.Diff(signed.Statement, got.Statement); diff != "" {
					t.Errorf("statement (-signed +verified):\n%s", diff)
				}

				// Only the submission digest is required.
				_, err = attest.Verify(tc.data, s.PublicKey(), attest.Expect{SubmissionSHA256: sha(submissionA)})
				require.NoError(t, err)
			})
		}
	}
}

// mutateBundle decodes a bundle, lets f change it, and re-encodes it.
func mutateBundle(t *testing.T, bundle []byte, f func(b map[string]any, env map[string]any)) []byte {
	t.Helper()
	var b map[string]any
	require.NoError(t, json.Unmarshal(bundle, &b))
	f(b, b["dsseEnvelope"].(map[string]any))
	out, err := json.Marshal(b)
	require.NoError(t, err)
	return out
}

func flipByte(t *testing.T, b64 string, i int) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	if i < 0 {
		i += len(raw)
	}
	raw[i] ^= 0x01
	return base64.StdEncoding.EncodeToString(raw)
}

func TestTamperFailsVerification(t *testing.T) {
	for _, kt := range keyTypes {
		s := newSigner(t, kt)
		signed, err := s.Sign(t.Context(), verdictFor(submissionA, nonce1), attest.SignOptions{Time: signedAt})
		require.NoError(t, err)
		other := newSigner(t, kt)
		// The same key signs a statement of another predicate type: the
		// signature is good, the type is not.
		foreignType := bytes.Replace(signed.Payload, []byte(attest.PredicateType), []byte("https://slsa.dev/provenance/v1"), 1)
		foreign, err := s.SignPayloadForTest(t.Context(), attest.PayloadType, foreignType)
		require.NoError(t, err)
		// The same key signs the same statement under another payload type.
		plainJSON, err := s.SignPayloadForTest(t.Context(), "application/json", signed.Payload)
		require.NoError(t, err)

		tests := []struct {
			name   string
			data   []byte
			key    any
			expect func(*attest.Expect)
			reason error
		}{
			{"one byte of payload", mutateBundle(t, signed.Bundle, func(_, env map[string]any) {
				env["payload"] = flipByte(t, env["payload"].(string), 200)
			}), nil, nil, attest.ErrSignature},
			{"one byte of signature", mutateBundle(t, signed.Bundle, func(_, env map[string]any) {
				sig := env["signatures"].([]any)[0].(map[string]any)
				sig["sig"] = flipByte(t, sig["sig"].(string), -1)
			}), nil, nil, attest.ErrSignature},
			{"payload type relabelled", mutateBundle(t, signed.Bundle, func(_, env map[string]any) {
				env["payloadType"] = "application/json"
			}), nil, nil, attest.ErrPayloadType},
			{"payload type signed as such", plainJSON.Bundle, nil, nil, attest.ErrPayloadType},
			{"predicate type edited", mutateBundle(t, signed.Bundle, func(_, env map[string]any) {
				env["payload"] = base64.StdEncoding.EncodeToString(foreignType)
			}), nil, nil, attest.ErrSignature},
			{"predicate type signed as such", foreign.Bundle, nil, nil, attest.ErrPredicateType},
			{"another submission", signed.Bundle, nil, func(e *attest.Expect) {
				e.SubmissionSHA256 = sha(submissionB)
			}, attest.ErrSubjectMismatch},
			{"another task digest", signed.Bundle, nil, func(e *attest.Expect) { e.TaskDigest = otherTask }, attest.ErrTaskMismatch},
			{"another tier", signed.Bundle, nil, func(e *attest.Expect) { e.Tier = schema.TierCompat }, attest.ErrTierMismatch},
			{"an old nonce", signed.Bundle, nil, func(e *attest.Expect) { e.Nonce = "nonce-run-2-0123456789" }, attest.ErrNonceMismatch},
			{"another key", signed.Bundle, other.PublicKey(), nil, attest.ErrSignature},
			{"a foreign keyid", mutateBundle(t, signed.Bundle, func(_, env map[string]any) {
				env["signatures"].([]any)[0].(map[string]any)["keyid"] = "grader-key-2026"
			}), nil, nil, attest.ErrSignature},
			{"envelope: one byte of payload", func() []byte {
				var env map[string]any
				require.NoError(t, json.Unmarshal(signed.Envelope, &env))
				env["payload"] = flipByte(t, env["payload"].(string), 10)
				out, _ := json.Marshal(env)
				return out
			}(), nil, nil, attest.ErrSignature},
		}
		for _, tt := range tests {
			t.Run(string(kt)+"/"+tt.name, func(t *testing.T) {
				key := tt.key
				if key == nil {
					key = s.PublicKey()
				}
				want := expectA()
				if tt.expect != nil {
					tt.expect(&want)
				}
				got, err := attest.Verify(tt.data, key, want)
				require.Error(t, err)
				assert.Nil(t, got)
				assert.ErrorIs(t, err, attest.ErrVerificationFailed)
				assert.NotErrorIs(t, err, attest.ErrCannotVerify)
				assert.ErrorIs(t, err, tt.reason)
				var ve *attest.VerifyError
				require.ErrorAs(t, err, &ve)
				assert.Equal(t, tt.reason, ve.Reason)
			})
		}
	}
}

// TestVersion1VerdictStillVerifies verifies a bundle and an envelope that
// the build before schema version 2 signed (testdata/v1, made once and
// never regenerated): adding a schema version must not strand them.
func TestVersion1VerdictStillVerifies(t *testing.T) {
	pub, err := attest.LoadPublicKeyFile("testdata/v1/grader.pub")
	require.NoError(t, err)
	sub, err := os.ReadFile("testdata/v1/verdict.submission")
	require.NoError(t, err)
	for _, name := range []string{"verdict.sigstore.json", "verdict.dsse.json"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "v1", name))
			require.NoError(t, err)
			got, err := attest.Verify(data, pub, attest.Expect{
				SubmissionSHA256: sha(sub), TaskDigest: taskDigest, Tier: schema.TierStrict, Nonce: "nonce-v1-0123456789",
			})
			require.NoError(t, err)
			assert.Equal(t, schema.IDv1, got.Verdict.Schema)
			assert.Equal(t, schema.IDv1, got.Statement.Predicate.VerdictSchema.URI)
			assert.Empty(t, got.Verdict.Disclosure, "version 1 has no disclosure field")
			assert.Equal(t, schema.OutcomeFail, got.Verdict.Outcome)
		})
	}
}

// TestVersion2VerdictStillVerifies verifies a bundle and an envelope that
// the build before schema version 3 (f7459a3) signed (testdata/v2, made
// once and never regenerated): a FAIL whose failed case has no reason
// code, as version 2 has none.
func TestVersion2VerdictStillVerifies(t *testing.T) {
	pub, err := attest.LoadPublicKeyFile("testdata/v2/grader.pub")
	require.NoError(t, err)
	sub, err := os.ReadFile("testdata/v2/verdict.submission")
	require.NoError(t, err)
	for _, name := range []string{"verdict.sigstore.json", "verdict.dsse.json"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "v2", name))
			require.NoError(t, err)
			got, err := attest.Verify(data, pub, attest.Expect{
				SubmissionSHA256: sha(sub), TaskDigest: taskDigest, Tier: schema.TierStrict, Nonce: "nonce-v2-0123456789",
			})
			require.NoError(t, err)
			assert.Equal(t, schema.IDv2, got.Verdict.Schema)
			assert.Equal(t, schema.IDv2, got.Statement.Predicate.VerdictSchema.URI)
			assert.Equal(t, schema.OutcomeFail, got.Verdict.Outcome)
			assert.Empty(t, got.Verdict.Cases[1].ReasonCode, "version 2 has no case reason code")
		})
	}
}

// TestKeyID pins what Verify does with the DSSE keyid, which the signature
// does not cover: empty (what Sign writes) and the key's own SHA256
// fingerprint verify; any other value fails.
func TestKeyID(t *testing.T) {
	s := newSigner(t, attest.KeyECDSAP256)
	signed, err := s.Sign(t.Context(), verdictFor(submissionA, nonce1), attest.SignOptions{Time: signedAt})
	require.NoError(t, err)
	for _, tt := range []struct {
		keyid string
		want  error
	}{
		{"", nil},
		{sshFingerprint(t, s.PublicKey()), nil},
		{"grader-key-2026", attest.ErrSignature},
		{s.Hint(), attest.ErrSignature},
	} {
		t.Run(tt.keyid, func(t *testing.T) {
			data := mutateBundle(t, signed.Bundle, func(_, env map[string]any) {
				env["signatures"].([]any)[0].(map[string]any)["keyid"] = tt.keyid
			})
			_, err := attest.Verify(data, s.PublicKey(), expectA())
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

// sshFingerprint computes the OpenSSH SHA256 fingerprint of a P-256 key
// (RFC 5656 wire format, unpadded base64), the keyid go-securesystemslib
// derives for a verifier without one.
func sshFingerprint(t *testing.T, pub any) string {
	t.Helper()
	k, ok := pub.(*ecdsa.PublicKey)
	require.True(t, ok, "a P-256 key")
	point, err := k.Bytes()
	require.NoError(t, err)
	var wire []byte
	for _, field := range [][]byte{[]byte("ecdsa-sha2-nistp256"), []byte("nistp256"), point} {
		wire = binary.BigEndian.AppendUint32(wire, uint32(len(field)))
		wire = append(wire, field...)
	}
	sum := sha256.Sum256(wire)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

func TestReplay(t *testing.T) {
	s := newSigner(t, attest.KeyECDSAP256)
	forA, err := s.Sign(t.Context(), verdictFor(submissionA, nonce1), attest.SignOptions{})
	require.NoError(t, err)
	forB, err := s.Sign(t.Context(), verdictFor(submissionB, nonce1), attest.SignOptions{})
	require.NoError(t, err)

	t.Run("A's verdict presented for B", func(t *testing.T) {
		_, err := attest.Verify(forA.Bundle, s.PublicKey(), attest.Expect{SubmissionSHA256: sha(submissionB)})
		assert.ErrorIs(t, err, attest.ErrSubjectMismatch)
	})
	t.Run("A's verdict under another task", func(t *testing.T) {
		_, err := attest.Verify(forA.Bundle, s.PublicKey(), attest.Expect{SubmissionSHA256: sha(submissionA), TaskDigest: otherTask})
		assert.ErrorIs(t, err, attest.ErrTaskMismatch)
	})
	t.Run("A's verdict under another tier", func(t *testing.T) {
		_, err := attest.Verify(forA.Bundle, s.PublicKey(), attest.Expect{SubmissionSHA256: sha(submissionA), Tier: schema.TierCompat})
		assert.ErrorIs(t, err, attest.ErrTierMismatch)
	})
	t.Run("A's verdict replayed into a later run", func(t *testing.T) {
		_, err := attest.Verify(forA.Bundle, s.PublicKey(), attest.Expect{SubmissionSHA256: sha(submissionA), Nonce: schema.NewNonce()})
		assert.ErrorIs(t, err, attest.ErrNonceMismatch)
	})
	t.Run("B's signature on A's statement", func(t *testing.T) {
		spliced := mutateBundle(t, forB.Bundle, func(_, env map[string]any) {
			env["payload"] = base64.StdEncoding.EncodeToString(forA.Payload)
		})
		_, err := attest.Verify(spliced, s.PublicKey(), attest.Expect{SubmissionSHA256: sha(submissionA)})
		assert.ErrorIs(t, err, attest.ErrSignature)
	})
}

func TestCannotVerify(t *testing.T) {
	s := newSigner(t, attest.KeyECDSAP256)
	signed, err := s.Sign(t.Context(), verdictFor(submissionA, nonce1), attest.SignOptions{})
	require.NoError(t, err)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)

	tests := []struct {
		name   string
		data   []byte
		key    any
		expect attest.Expect
		reason error
	}{
		{"empty input", nil, nil, expectA(), attest.ErrMalformed},
		{"not JSON", []byte("hello"), nil, expectA(), attest.ErrMalformed},
		{"JSON array", []byte("[]"), nil, expectA(), attest.ErrMalformed},
		{"neither bundle nor envelope", []byte(`{"a":1}`), nil, expectA(), attest.ErrMalformed},
		{"duplicate key in bundle", bytes.Replace(signed.Bundle, []byte(`{"mediaType"`), []byte(`{"mediaType":"x","mediaType"`), 1), nil, expectA(), attest.ErrMalformed},
		{"trailing data", append(bytes.Clone(signed.Bundle), []byte(" {}")...), nil, expectA(), attest.ErrMalformed},
		{"unknown bundle field", mutateBundle(t, signed.Bundle, func(b, _ map[string]any) { b["extra"] = 1 }), nil, expectA(), attest.ErrMalformed},
		{"old bundle media type", mutateBundle(t, signed.Bundle, func(b, _ map[string]any) {
			b["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.1"
		}), nil, expectA(), attest.ErrUnsupported},
		{"bundle without public key material", mutateBundle(t, signed.Bundle, func(b, _ map[string]any) {
			delete(b, "verificationMaterial")
		}), nil, expectA(), attest.ErrUnsupported},
		{"bundle with two signatures", mutateBundle(t, signed.Bundle, func(_, env map[string]any) {
			sigs := env["signatures"].([]any)
			env["signatures"] = append(sigs, sigs[0])
		}), nil, expectA(), attest.ErrMalformed},
		{"envelope without signatures", []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}`), nil, expectA(), attest.ErrMalformed},
		{"envelope payload not base64", []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"%%%","signatures":[{"keyid":"","sig":"AAAA"}]}`), nil, expectA(), attest.ErrMalformed},
		{"oversized", bytes.Repeat([]byte(" "), attest.MaxInputSize+1), nil, expectA(), attest.ErrMalformed},
		{"no submission digest", signed.Bundle, nil, attest.Expect{}, attest.ErrExpectation},
		{"uppercase submission digest", signed.Bundle, nil, attest.Expect{SubmissionSHA256: strings.ToUpper(sha(submissionA))}, attest.ErrExpectation},
		{"bad task digest", signed.Bundle, nil, attest.Expect{SubmissionSHA256: sha(submissionA), TaskDigest: "abc"}, attest.ErrExpectation},
		{"bad tier", signed.Bundle, nil, attest.Expect{SubmissionSHA256: sha(submissionA), Tier: "lenient"}, attest.ErrExpectation},
		{"RSA key", signed.Bundle, &rsaKey.PublicKey, expectA(), attest.ErrKey},
		{"P-384 key", signed.Bundle, &p384.PublicKey, expectA(), attest.ErrKey},
		{"nil key", signed.Bundle, (*ecdsa.PublicKey)(nil), expectA(), attest.ErrKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := tt.key
			if key == nil {
				key = s.PublicKey()
			}
			got, err := attest.Verify(tt.data, key, tt.expect)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, attest.ErrCannotVerify)
			assert.NotErrorIs(t, err, attest.ErrVerificationFailed)
			assert.ErrorIs(t, err, tt.reason)
		})
	}
}

// TestSignedButUnacceptable covers statements made with the right key that
// Verify must still refuse: the signer is trusted to sign, not to be right.
func TestSignedButUnacceptable(t *testing.T) {
	s := newSigner(t, attest.KeyEd25519)
	signed, err := s.Sign(t.Context(), verdictFor(submissionA, nonce1), attest.SignOptions{Time: signedAt})
	require.NoError(t, err)
	edit := func(f func(st map[string]any, pred map[string]any)) []byte {
		var st map[string]any
		require.NoError(t, json.Unmarshal(signed.Payload, &st))
		f(st, st["predicate"].(map[string]any))
		out, err := json.Marshal(st)
		require.NoError(t, err)
		return out
	}
	tests := []struct {
		name    string
		payload []byte
		class   error
		reason  error
	}{
		{"duplicate key in statement", bytes.Replace(signed.Payload, []byte(`{"_type"`), []byte(`{"_type":"x","_type"`), 1), attest.ErrVerificationFailed, attest.ErrStatement},
		{"statement v0.1", edit(func(st, _ map[string]any) { st["_type"] = "https://in-toto.io/Statement/v0.1" }), attest.ErrVerificationFailed, attest.ErrStatement},
		{"extra statement field", edit(func(st, _ map[string]any) { st["extra"] = true }), attest.ErrVerificationFailed, attest.ErrStatement},
		{"two subjects", edit(func(st, _ map[string]any) {
			subj := st["subject"].([]any)
			st["subject"] = append(subj, subj[0])
		}), attest.ErrVerificationFailed, attest.ErrStatement},
		{"schema-invalid verdict", edit(func(_, p map[string]any) {
			p["verdict"].(map[string]any)["outcome"] = "MAYBE"
		}), attest.ErrVerificationFailed, attest.ErrInvalidVerdict},
		{"PASS with a failed case", edit(func(_, p map[string]any) {
			c := p["verdict"].(map[string]any)["cases"].([]any)[0].(map[string]any)
			c["outcome"] = "FAIL"
		}), attest.ErrVerificationFailed, attest.ErrInvalidVerdict},
		{"result says PASSED, verdict says FAIL", edit(func(_, p map[string]any) {
			v := p["verdict"].(map[string]any)
			v["outcome"] = "FAIL"
			v["reason"] = "wrong answer"
		}), attest.ErrVerificationFailed, attest.ErrInconsistent},
		{"verdict for another submission", edit(func(_, p map[string]any) {
			p["verdict"].(map[string]any)["submission"].(map[string]any)["sha256"] = sha(submissionB)
		}), attest.ErrVerificationFailed, attest.ErrInconsistent},
		{"predicate task differs", edit(func(_, p map[string]any) {
			p["task"].(map[string]any)["digest"].(map[string]any)["sha256"] = otherTask
		}), attest.ErrVerificationFailed, attest.ErrInconsistent},
		{"unknown verdict schema", edit(func(_, p map[string]any) {
			p["verdictSchema"].(map[string]any)["digest"].(map[string]any)["sha256"] = strings.Repeat("0", 64)
		}), attest.ErrCannotVerify, attest.ErrUnsupported},
		{"statement names version 1, verdict follows version 2", edit(func(_, p map[string]any) {
			sum, _ := schema.SchemaDigest(schema.IDv1)
			p["verdictSchema"] = map[string]any{"uri": schema.IDv1, "digest": map[string]any{"sha256": sum}}
		}), attest.ErrVerificationFailed, attest.ErrInconsistent},
		{"version-1 digest under the version-2 name", edit(func(_, p map[string]any) {
			sum, _ := schema.SchemaDigest(schema.IDv1)
			p["verdictSchema"].(map[string]any)["digest"].(map[string]any)["sha256"] = sum
		}), attest.ErrCannotVerify, attest.ErrUnsupported},
		{"verdict relabelled as version 1", edit(func(_, p map[string]any) {
			sum, _ := schema.SchemaDigest(schema.IDv1)
			p["verdictSchema"] = map[string]any{"uri": schema.IDv1, "digest": map[string]any{"sha256": sum}}
			p["verdict"].(map[string]any)["schema"] = schema.IDv1
		}), attest.ErrVerificationFailed, attest.ErrInvalidVerdict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := s.SignPayloadForTest(t.Context(), attest.PayloadType, tt.payload)
			require.NoError(t, err)
			_, err = attest.Verify(out.Bundle, s.PublicKey(), attest.Expect{SubmissionSHA256: sha(submissionA)})
			assert.ErrorIs(t, err, tt.class)
			assert.ErrorIs(t, err, tt.reason)
		})
	}
}

func TestSignRefusesInvalidVerdict(t *testing.T) {
	s := newSigner(t, attest.KeyECDSAP256)
	tests := []struct {
		name   string
		mutate func(*schema.Verdict)
		want   error
	}{
		{"unknown outcome", func(v *schema.Verdict) { v.Outcome = "MAYBE" }, schema.ErrSchema},
		{"PASS with a failed case", func(v *schema.Verdict) {
			cs := v.Cases
			cs[0].Outcome = schema.OutcomeFail
			v.SetCases(cs)
		}, schema.ErrSchema},
		{"stale tests hash", func(v *schema.Verdict) { v.Cases = v.Cases[:1] }, schema.ErrInconsistent},
		{"no nonce", func(v *schema.Verdict) { v.Nonce = "" }, schema.ErrSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := verdictFor(submissionA, nonce1)
			tt.mutate(v)
			got, err := s.Sign(t.Context(), v, attest.SignOptions{})
			assert.Nil(t, got)
			assert.ErrorIs(t, err, schema.ErrInvalid)
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

func TestStatementShape(t *testing.T) {
	s := newSigner(t, attest.KeyECDSAP256)
	for _, o := range []schema.Outcome{schema.OutcomePass, schema.OutcomeFail, schema.OutcomeError, schema.OutcomeQuarantined} {
		t.Run(string(o), func(t *testing.T) {
			v := verdictFor(submissionA, nonce1)
			v.Outcome = o
			if o != schema.OutcomePass {
				v.Reason = "because"
			}
			signed, err := s.Sign(t.Context(), v, attest.SignOptions{Time: signedAt.Add(1500 * time.Millisecond).In(time.FixedZone("CET", 3600))})
			require.NoError(t, err)
			var st map[string]any
			require.NoError(t, json.Unmarshal(signed.Payload, &st))
			pred := st["predicate"].(map[string]any)
			want := map[string]any{
				"_type":         attest.StatementType,
				"predicateType": attest.PredicateType,
				"subject": []any{map[string]any{
					"name": "submission.patch", "digest": map[string]any{"sha256": sha(submissionA)},
				}},
			}
			got := map[string]any{"_type": st["_type"], "predicateType": st["predicateType"], "subject": st["subject"]}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("statement (-want +got):\n%s", diff)
			}
			result := "FAILED"
			if o == schema.OutcomePass {
				result = "PASSED"
			}
			assert.Equal(t, result, pred["verificationResult"])
			assert.Equal(t, "2026-11-30T12:00:01Z", pred["timeVerified"])
			assert.Equal(t, map[string]any{"id": attest.VerifierID, "version": map[string]any{"strictgrade": "0.1.0-test"}}, pred["verifier"])
			assert.Equal(t, map[string]any{"name": "fn/add", "digest": map[string]any{"sha256": taskDigest}}, pred["task"])
			assert.Equal(t, map[string]any{"uri": schema.ID, "digest": map[string]any{"sha256": schema.Digest()}}, pred["verdictSchema"])
			assert.Equal(t, string(o), pred["verdict"].(map[string]any)["outcome"])
		})
	}
}

func TestSubjectName(t *testing.T) {
	s := newSigner(t, attest.KeyEd25519)
	v := verdictFor(submissionA, nonce1)
	v.Submission.Kind = schema.SubmissionArchive
	signed, err := s.Sign(t.Context(), v, attest.SignOptions{})
	require.NoError(t, err)
	assert.Equal(t, "submission.tar", signed.Statement.Subject[0].Name)
	signed, err = s.Sign(t.Context(), v, attest.SignOptions{SubjectName: "agent-42.tar"})
	require.NoError(t, err)
	assert.Equal(t, "agent-42.tar", signed.Statement.Subject[0].Name)
	_, err = s.Sign(t.Context(), v, attest.SignOptions{SubjectName: "a\nb"})
	assert.Error(t, err)
}

func TestBundleShape(t *testing.T) {
	for _, kt := range keyTypes {
		t.Run(string(kt), func(t *testing.T) {
			s := newSigner(t, kt)
			signed, err := s.Sign(t.Context(), verdictFor(submissionA, nonce1), attest.SignOptions{Time: signedAt})
			require.NoError(t, err)

			der, err := x509.MarshalPKIXPublicKey(s.PublicKey())
			require.NoError(t, err)
			sum := sha256.Sum256(der)
			hint := base64.StdEncoding.EncodeToString(sum[:])
			assert.Equal(t, hint, s.Hint())

			var b map[string]any
			require.NoError(t, json.Unmarshal(signed.Bundle, &b))
			env := b["dsseEnvelope"].(map[string]any)
			sigs := env["signatures"].([]any)
			want := map[string]any{
				"mediaType":            "application/vnd.dev.sigstore.bundle.v0.3+json",
				"verificationMaterial": map[string]any{"publicKey": map[string]any{"hint": hint}},
				"dsseEnvelope": map[string]any{
					"payload":     base64.StdEncoding.EncodeToString(signed.Payload),
					"payloadType": "application/vnd.in-toto+json",
					"signatures":  []any{map[string]any{"sig": sigs[0].(map[string]any)["sig"]}},
				},
			}
			if diff := cmp.Diff(want, b); diff != "" {
				t.Errorf("bundle (-want +got):\n%s", diff)
			}
			// Compact and stable: no white space between tokens.
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, signed.Bundle))
			assert.Equal(t, compact.String(), string(signed.Bundle))

			var e map[string]any
			require.NoError(t, json.Unmarshal(signed.Envelope, &e))
			assert.Equal(t, "application/vnd.in-toto+json", e["payloadType"])
			assert.Equal(t, env["payload"], e["payload"])
			esig := e["signatures"].([]any)[0].(map[string]any)
			assert.Equal(t, "", esig["keyid"], "DSSE keyid must stay empty (signing.md P3)")
			assert.Equal(t, sigs[0].(map[string]any)["sig"], esig["sig"])
		})
	}
}

func TestSignHonoursContext(t *testing.T) {
	s := newSigner(t, attest.KeyEd25519)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Sign(ctx, verdictFor(submissionA, nonce1), attest.SignOptions{})
	assert.ErrorIs(t, err, context.Canceled)
}
