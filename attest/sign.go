package attest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	ssldsse "github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/options"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/strictgrade/strictgrade/schema"
)

// Signer signs verdicts with a private key held in host memory.
//
// A Signer is a host-only value: it belongs to the host controller and must
// never be handed to code that creates, configures or talks to containers,
// nor written into an archive, a volume, an environment variable or a log.
// It has no exported fields and no method that returns key material; its
// String, GoString, LogValue and MarshalJSON methods print only the key
// type and public-key hint, and MarshalJSON fails, so that an accidental
// log line or serialisation cannot leak the key.
type Signer struct {
	sv   signature.SignerVerifier
	pub  crypto.PublicKey
	kind KeyType
	hint string
}

// NewSigner returns a Signer for an ECDSA P-256 (*ecdsa.PrivateKey) or
// Ed25519 (ed25519.PrivateKey) key. ECDSA signs SHA-256 digests with
// ASN.1 DER signatures; Ed25519 is pure Ed25519. Errors match ErrKey.
func NewSigner(priv crypto.PrivateKey) (*Signer, error) {
	var pub crypto.PublicKey
	switch k := priv.(type) {
	case *ecdsa.PrivateKey:
		pub = k.Public()
	case ed25519.PrivateKey:
		pub = k.Public()
	case *ed25519.PrivateKey:
		if k == nil {
			return nil, fmt.Errorf("%w: nil key", ErrKey)
		}
		priv, pub = *k, k.Public()
	default:
		return nil, fmt.Errorf("%w: %T (want ECDSA P-256 or Ed25519)", ErrKey, priv)
	}
	kind, err := keyTypeOf(pub)
	if err != nil {
		return nil, err
	}
	sv, err := signature.LoadSignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	hint, err := KeyHint(pub)
	if err != nil {
		return nil, err
	}
	return &Signer{sv: sv, pub: pub, kind: kind, hint: hint}, nil
}

// PublicKey returns the public half of the signing key.
func (s *Signer) PublicKey() crypto.PublicKey { return s.pub }

// PublicKeyPEM returns the public key as a PKIX "PUBLIC KEY" PEM block.
func (s *Signer) PublicKeyPEM() ([]byte, error) {
	return cryptoutils.MarshalPublicKeyToPEM(s.pub)
}

// KeyType returns the signing algorithm.
func (s *Signer) KeyType() KeyType { return s.kind }

// Hint returns the public-key hint written into bundles (see KeyHint).
func (s *Signer) Hint() string { return s.hint }

// String describes the signer without key material.
func (s Signer) String() string { return fmt.Sprintf("attest.Signer{%s %s}", s.kind, s.hint) }

// GoString describes the signer without key material.
func (s Signer) GoString() string { return s.String() }

// LogValue describes the signer to log/slog without key material.
func (s Signer) LogValue() slog.Value {
	return slog.GroupValue(slog.String("key_type", string(s.kind)), slog.String("key_hint", s.hint))
}

// MarshalJSON refuses: a Signer is never serialised.
func (s Signer) MarshalJSON() ([]byte, error) {
	return nil, errors.New("attest: a Signer holds a private key and is never serialised")
}

// SignOptions are the optional inputs of Sign. The zero value is valid.
type SignOptions struct {
	// SubjectName is the in-toto subject name. Default: "submission.tar"
	// for an archive submission, "submission.patch" for a diff. It is
	// informational: verifiers match the digest, never the name.
	SubjectName string
	// Time is recorded as timeVerified; zero means now. It is rounded down
	// to the second and stored in UTC.
	Time time.Time
}

// Signed is the output of Sign.
type Signed struct {
	// Payload is the in-toto Statement exactly as signed (the DSSE payload).
	Payload []byte
	// Statement is Payload parsed.
	Statement *Statement
	// Envelope is the bare DSSE envelope, JSON (`cosign
	// verify-blob-attestation --signature`, deprecated in cosign v3).
	Envelope []byte
	// Bundle is the Sigstore bundle v0.3, JSON, with the public-key hint
	// and no transparency-log entry (`cosign verify-blob-attestation
	// --bundle`).
	Bundle []byte
}

// Sign validates v against the schema (refusing an invalid one with an error
// matching schema.ErrInvalid), builds the in-toto Statement whose subject is
// the submission digest, and signs it as a DSSE envelope. The envelope's
// keyid is left empty; the bundle carries the key hint instead.
func (s *Signer) Sign(ctx context.Context, v *schema.Verdict, o SignOptions) (*Signed, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	verdictJSON, err := schema.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("attest: refusing to sign: %w", err)
	}
	name := o.SubjectName
	if name == "" {
		name = "submission.tar"
		if v.Submission.Kind == schema.SubmissionDiff {
			name = "submission.patch"
		}
	}
	if err := checkSubjectName(name); err != nil {
		return nil, err
	}
	at := o.Time
	if at.IsZero() {
		at = time.Now()
	}
	st := newStatement(v, verdictJSON, name, at.UTC().Truncate(time.Second))
	payload, err := marshalJSON(st)
	if err != nil {
		return nil, fmt.Errorf("attest: encode statement: %w", err)
	}
	out, err := s.signPayload(ctx, PayloadType, payload)
	if err != nil {
		return nil, err
	}
	out.Statement = st
	return out, nil
}

func checkSubjectName(name string) error {
	if len(name) > 256 {
		return fmt.Errorf("attest: subject name longer than 256 bytes")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("attest: subject name %q has control characters", name)
		}
	}
	return nil
}

// signPayload signs any payload; Sign is the only exported way in, which
// keeps the key from signing anything but validated verdict statements.
func (s *Signer) signPayload(ctx context.Context, payloadType string, payload []byte) (*Signed, error) {
	envJSON, err := sigdsse.WrapSigner(s.sv, payloadType).SignMessage(bytes.NewReader(payload), options.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("attest: sign: %w", err)
	}
	var env ssldsse.Envelope
	if err := json.Unmarshal(envJSON, &env); err != nil || len(env.Signatures) != 1 {
		return nil, fmt.Errorf("attest: sign: unexpected envelope from signer: %v", err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		return nil, fmt.Errorf("attest: sign: %w", err)
	}
	bundle, err := marshalBundle(s.hint, payloadType, payload, sig)
	if err != nil {
		return nil, err
	}
	return &Signed{Payload: payload, Envelope: envJSON, Bundle: bundle}, nil
}

// marshalBundle writes a Sigstore bundle v0.3 holding one DSSE envelope
// and a public-key hint, and nothing else (no certificate, no tlog entry).
func marshalBundle(hint, payloadType string, payload, sig []byte) ([]byte, error) {
	b := &protobundle.Bundle{
		MediaType: BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{
				PublicKey: &protocommon.PublicKeyIdentifier{Hint: hint},
			},
		},
		Content: &protobundle.Bundle_DsseEnvelope{
			DsseEnvelope: &protodsse.Envelope{
				Payload:     payload,
				PayloadType: payloadType,
				Signatures:  []*protodsse.Signature{{Sig: sig}},
			},
		},
	}
	raw, err := protojson.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("attest: encode bundle: %w", err)
	}
	// protojson varies its white space from build to build on purpose;
	// compact it so the bytes are stable.
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return nil, fmt.Errorf("attest: encode bundle: %w", err)
	}
	return out.Bytes(), nil
}
