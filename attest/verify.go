package attest

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	ssldsse "github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/strictgrade/strictgrade/schema"
)

// MaxInputSize bounds the bundle or envelope Verify reads.
const MaxInputSize = 16 << 20

// maxPayloadSize bounds the signed statement: a maximal verdict plus the
// statement around it.
const maxPayloadSize = schema.MaxSize + 64<<10

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Expect is what the verifying party knows independently of the bundle.
// Only SubmissionSHA256 is required; every other field is checked when set.
type Expect struct {
	// SubmissionSHA256 is the sha256 (64 lowercase hex digits) of the
	// submission bytes being presented. Required: a verdict is only ever
	// accepted for the submission it was made for.
	SubmissionSHA256 string
	// TaskDigest, when set, must equal the verdict's task digest.
	TaskDigest string
	// Tier, when set, must equal the verdict's tier.
	Tier schema.Tier
	// Nonce, when set, must equal the verdict's nonce: the value the host
	// issued for the run the caller asked for, so an old verdict for the
	// same submission, task and tier cannot be replayed.
	Nonce string
}

// Format says how the signed verdict was packaged.
type Format string

// The accepted packagings.
const (
	FormatBundle   Format = "sigstore-bundle"
	FormatEnvelope Format = "dsse-envelope"
)

// Verified is what Verify returns on success.
type Verified struct {
	// Payload is the exact statement bytes the signature covers. Consumers
	// should read these, never the unverified envelope.
	Payload []byte
	// Statement is Payload parsed.
	Statement *Statement
	// Verdict is the embedded verdict, re-validated against the schema.
	Verdict *schema.Verdict
	// Format is the packaging that was read.
	Format Format
	// KeyHint is the hint of the key that verified (see KeyHint).
	KeyHint string
}

// Verify checks a Sigstore bundle or a bare DSSE envelope (detected from the
// JSON) against the public key pub and the expectation want, and returns
// the verified statement.
//
// In order it checks: the packaging is readable; the payload type is
// application/vnd.in-toto+json; the signature verifies with pub (the
// bundle's key hint is not trusted; the DSSE keyid is not signed and
// selects nothing, but a non-empty keyid other than pub's SHA256 key
// fingerprint, as go-securesystemslib computes it, fails as ErrSignature);
// the payload is one strict JSON in-toto Statement v1 with the strictgrade
// predicate type; its only subject's sha256 is want.SubmissionSHA256; the
// verdict schema is one this build embeds (any released version: its URI
// and the sha256 of its bytes, see schema.SchemaDigest) and the one the
// verdict names; the verdict is valid under it; the predicate agrees with
// the verdict; and the task digest, tier and nonce match want where given.
// Every failure is a *VerifyError matching ErrVerificationFailed or
// ErrCannotVerify.
//
// Trust rests on pub alone: transparency-log entries, timestamps and
// certificates a bundle may carry are ignored, and timeVerified is only
// what the signer asserts.
func Verify(data []byte, pub crypto.PublicKey, want Expect) (*Verified, error) {
	if err := want.check(); err != nil {
		return nil, err
	}
	if _, err := keyTypeOf(pub); err != nil {
		return nil, cannot(ErrKey, "", err)
	}
	verifier, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, cannot(ErrKey, "", err)
	}
	hint, err := KeyHint(pub)
	if err != nil {
		return nil, cannot(ErrKey, "", err)
	}
	env, format, verr := readEnvelope(data)
	if verr != nil {
		return nil, verr
	}
	if env.PayloadType != PayloadType {
		return nil, failed(ErrPayloadType, fmt.Sprintf("got %q, want %q", truncate(env.PayloadType, 100), PayloadType), nil)
	}
	envJSON, err := json.Marshal(env)
	if err != nil {
		return nil, cannot(ErrMalformed, "", err)
	}
	var payload []byte
	err = sigdsse.WrapVerifier(verifier,
		sigdsse.WithExpectedPayloadType(PayloadType),
		sigdsse.WithDecodedPayload(&payload),
	).VerifySignature(bytes.NewReader(envJSON), nil)
	if err != nil {
		return nil, failed(ErrSignature, "", err)
	}
	st, verr := checkStatement(payload, want)
	if verr != nil {
		return nil, verr
	}
	v, verr := checkPredicate(st, want)
	if verr != nil {
		return nil, verr
	}
	return &Verified{Payload: payload, Statement: st, Verdict: v, Format: format, KeyHint: hint}, nil
}

func (e Expect) check() *VerifyError {
	if !hex64.MatchString(e.SubmissionSHA256) {
		return cannot(ErrExpectation, "the submission sha256 must be 64 lowercase hex digits", nil)
	}
	if e.TaskDigest != "" && !hex64.MatchString(e.TaskDigest) {
		return cannot(ErrExpectation, "the task digest must be 64 lowercase hex digits", nil)
	}
	if e.Tier != "" {
		if _, err := schema.ParseTier(string(e.Tier)); err != nil {
			return cannot(ErrExpectation, "", err)
		}
	}
	return nil
}

// readEnvelope parses a Sigstore bundle or a DSSE envelope into a DSSE
// envelope. It never trusts anything it returns: the caller verifies.
func readEnvelope(data []byte) (*ssldsse.Envelope, Format, *VerifyError) {
	if len(data) > MaxInputSize {
		return nil, "", cannot(ErrMalformed, fmt.Sprintf("input is larger than %d bytes", MaxInputSize), nil)
	}
	if err := schema.CheckJSON(data, MaxInputSize); err != nil {
		return nil, "", cannot(ErrMalformed, "", err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, "", cannot(ErrMalformed, "not a JSON object", nil)
	}
	if _, ok := probe["mediaType"]; ok {
		env, verr := readBundle(data)
		return env, FormatBundle, verr
	}
	if _, ok := probe["payloadType"]; !ok {
		return nil, "", cannot(ErrMalformed, "neither a bundle (mediaType) nor a DSSE envelope (payloadType)", nil)
	}
	var env ssldsse.Envelope
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return nil, "", cannot(ErrMalformed, "DSSE envelope", err)
	}
	if len(env.Signatures) == 0 {
		return nil, "", cannot(ErrMalformed, "DSSE envelope has no signature", nil)
	}
	if _, err := decodeB64(env.Payload); err != nil {
		return nil, "", cannot(ErrMalformed, "DSSE payload is not base64", nil)
	}
	for i, s := range env.Signatures {
		if _, err := decodeB64(s.Sig); err != nil || s.Sig == "" {
			return nil, "", cannot(ErrMalformed, fmt.Sprintf("DSSE signature %d is not base64", i), nil)
		}
	}
	return &env, FormatEnvelope, nil
}

func readBundle(data []byte) (*ssldsse.Envelope, *VerifyError) {
	var b protobundle.Bundle
	if err := protojson.Unmarshal(data, &b); err != nil {
		return nil, cannot(ErrMalformed, "Sigstore bundle", err)
	}
	if b.GetMediaType() != BundleMediaType {
		return nil, cannot(ErrUnsupported, fmt.Sprintf("bundle media type %q, want %q", truncate(b.GetMediaType(), 100), BundleMediaType), nil)
	}
	if b.GetVerificationMaterial().GetPublicKey() == nil {
		return nil, cannot(ErrUnsupported, "bundle is not signed with a public key (no publicKey verification material)", nil)
	}
	e := b.GetDsseEnvelope()
	if e == nil {
		return nil, cannot(ErrMalformed, "bundle holds no DSSE envelope", nil)
	}
	if len(e.GetSignatures()) != 1 || len(e.GetSignatures()[0].GetSig()) == 0 {
		return nil, cannot(ErrMalformed, fmt.Sprintf("bundle envelope must hold exactly one signature, has %d", len(e.GetSignatures())), nil)
	}
	s := e.GetSignatures()[0]
	return &ssldsse.Envelope{
		PayloadType: e.GetPayloadType(),
		Payload:     base64.StdEncoding.EncodeToString(e.GetPayload()),
		Signatures:  []ssldsse.Signature{{KeyID: s.GetKeyid(), Sig: base64.StdEncoding.EncodeToString(s.GetSig())}},
	}, nil
}

// decodeB64 accepts standard or URL base64, as DSSE allows.
func decodeB64(s string) ([]byte, error) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.URLEncoding.DecodeString(s)
}

// checkStatement parses the verified payload and checks the statement
// envelope: type, predicate type, subject.
func checkStatement(payload []byte, want Expect) (*Statement, *VerifyError) {
	if err := schema.CheckJSON(payload, maxPayloadSize); err != nil {
		return nil, failed(ErrStatement, "signed payload is not strict JSON", err)
	}
	var st Statement
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, failed(ErrStatement, "", err)
	}
	if st.Type != StatementType {
		return nil, failed(ErrStatement, fmt.Sprintf("_type %q, want %q", truncate(st.Type, 100), StatementType), nil)
	}
	if st.PredicateType != PredicateType {
		return nil, failed(ErrPredicateType, fmt.Sprintf("got %q, want %q", truncate(st.PredicateType, 100), PredicateType), nil)
	}
	if len(st.Subject) != 1 {
		return nil, failed(ErrStatement, fmt.Sprintf("%d subjects, want exactly 1", len(st.Subject)), nil)
	}
	if got := st.Subject[0].Digest.SHA256; got != want.SubmissionSHA256 {
		return nil, failed(ErrSubjectMismatch, fmt.Sprintf("statement is for sha256:%s, submission is sha256:%s", showDigest(got), want.SubmissionSHA256), nil)
	}
	return &st, nil
}

// checkPredicate re-validates the verdict and checks the binding fields.
func checkPredicate(st *Statement, want Expect) (*schema.Verdict, *VerifyError) {
	p := &st.Predicate
	if known, ok := schema.SchemaDigest(p.VerdictSchema.URI); !ok || p.VerdictSchema.Digest.SHA256 != known {
		return nil, cannot(ErrUnsupported, fmt.Sprintf("verdict schema %q sha256:%s is not one this build knows (%s)",
			truncate(p.VerdictSchema.URI, 200), showDigest(p.VerdictSchema.Digest.SHA256), strings.Join(schema.Versions(), ", ")), nil)
	}
	v, err := schema.Validate(p.Verdict)
	if err != nil {
		return nil, failed(ErrInvalidVerdict, "", err)
	}
	switch {
	case v.Schema != p.VerdictSchema.URI:
		// Validate checked the verdict against the schema it names; the
		// statement must name the same one.
		return nil, failed(ErrInconsistent, fmt.Sprintf("verdict follows %s, the statement names %s", v.Schema, p.VerdictSchema.URI), nil)
	case p.Verifier.ID != VerifierID:
		return nil, failed(ErrInconsistent, fmt.Sprintf("verifier id %q, want %q", truncate(p.Verifier.ID, 200), VerifierID), nil)
	case p.TimeVerified.IsZero():
		return nil, failed(ErrInconsistent, "timeVerified is missing", nil)
	case v.Submission.SHA256 != st.Subject[0].Digest.SHA256:
		return nil, failed(ErrInconsistent, "verdict submission digest differs from the subject", nil)
	case p.Task.Digest.SHA256 != v.Task.Digest || p.Task.Name != v.Task.ID || p.Task.URI != v.Task.URI:
		return nil, failed(ErrInconsistent, "predicate task differs from the verdict's task", nil)
	case p.VerificationResult != resultFor(v.Outcome):
		return nil, failed(ErrInconsistent, fmt.Sprintf("verificationResult %q for outcome %s", truncate(p.VerificationResult, 20), v.Outcome), nil)
	}
	if want.TaskDigest != "" && v.Task.Digest != want.TaskDigest {
		return nil, failed(ErrTaskMismatch, fmt.Sprintf("verdict is for task sha256:%s, want sha256:%s", v.Task.Digest, want.TaskDigest), nil)
	}
	if want.Tier != "" && v.Tier != want.Tier {
		return nil, failed(ErrTierMismatch, fmt.Sprintf("verdict is for tier %s, want %s", v.Tier, want.Tier), nil)
	}
	if want.Nonce != "" && v.Nonce != want.Nonce {
		return nil, failed(ErrNonceMismatch, "verdict carries another nonce (an old or foreign verdict)", nil)
	}
	return v, nil
}

// showDigest prints a digest from the payload, quoting anything odd.
func showDigest(s string) string {
	if hex64.MatchString(s) {
		return s
	}
	return fmt.Sprintf("%q", truncate(s, 64))
}

// truncate shortens attacker-controlled text for error messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
