package attest

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/strictgrade/strictgrade/schema"
)

// Fixed identifiers of the attestation format.
const (
	// StatementType is the in-toto Statement v1 _type.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType is strictgrade's verdict predicate; pass it to
	// `cosign verify-blob-attestation --type`.
	PredicateType = "https://strictgrade.dev/attestation/verdict/v0.1"
	// PayloadType is the DSSE payload type of an in-toto Statement.
	PayloadType = "application/vnd.in-toto+json"
	// BundleMediaType is the Sigstore bundle version written.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// VerifierID identifies the strictgrade host controller as the
	// predicate's verifier.
	VerifierID = "https://strictgrade.dev/grader/controller"
)

// Values of Predicate.VerificationResult (the SLSA VSA spelling).
const (
	ResultPassed = "PASSED"
	ResultFailed = "FAILED"
)

// Statement is an in-toto Statement v1 carrying a verdict predicate.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// Subject is an in-toto ResourceDescriptor naming the graded bytes.
type Subject struct {
	Name   string    `json:"name"`
	Digest DigestSet `json:"digest"`
}

// DigestSet holds the digests of a resource; strictgrade uses sha256 only.
type DigestSet struct {
	SHA256 string `json:"sha256"`
}

// Predicate is the strictgrade verdict predicate, v0.1. Its outer fields
// borrow the SLSA Verification Summary names; the controller fills them,
// the judge only contributes to Verdict.
type Predicate struct {
	Verifier Verifier `json:"verifier"`
	// TimeVerified is when the controller signed, in UTC to the second.
	// It is asserted by the signer, not by a timestamp authority.
	TimeVerified time.Time `json:"timeVerified"`
	// VerificationResult is PASSED when the verdict's outcome is PASS and
	// FAILED for every other outcome, so that a reader who only looks here
	// fails closed. The exact outcome is in Verdict.
	VerificationResult string `json:"verificationResult"`
	// Task names the task (name = task id) and its digest.
	Task ResourceDescriptor `json:"task"`
	// VerdictSchema names the schema the verdict was validated against:
	// the $id its "schema" field names and the sha256 of that schema's
	// bytes as embedded in the schema package.
	VerdictSchema ResourceDescriptor `json:"verdictSchema"`
	// Verdict is the verdict document, exactly as schema.Marshal wrote it.
	Verdict json.RawMessage `json:"verdict"`
}

// Verifier identifies who produced the predicate.
type Verifier struct {
	ID      string            `json:"id"`
	Version map[string]string `json:"version,omitempty"`
}

// ResourceDescriptor is the subset of the in-toto ResourceDescriptor used
// for the task and the schema.
type ResourceDescriptor struct {
	Name   string    `json:"name,omitempty"`
	URI    string    `json:"uri,omitempty"`
	Digest DigestSet `json:"digest"`
}

// resultFor maps an outcome to the VSA result, failing closed.
func resultFor(o schema.Outcome) string {
	if o == schema.OutcomePass {
		return ResultPassed
	}
	return ResultFailed
}

// newStatement builds the statement for a validated verdict. The
// verdict's schema is one Validate knows (it validated), so its digest
// exists.
func newStatement(v *schema.Verdict, verdictJSON []byte, subjectName string, at time.Time) *Statement {
	schemaDigest, _ := schema.SchemaDigest(v.Schema)
	return &Statement{
		Type:          StatementType,
		Subject:       []Subject{{Name: subjectName, Digest: DigestSet{SHA256: v.Submission.SHA256}}},
		PredicateType: PredicateType,
		Predicate: Predicate{
			Verifier:           Verifier{ID: VerifierID, Version: map[string]string{"strictgrade": v.Controller.Version}},
			TimeVerified:       at,
			VerificationResult: resultFor(v.Outcome),
			Task:               ResourceDescriptor{Name: v.Task.ID, URI: v.Task.URI, Digest: DigestSet{SHA256: v.Task.Digest}},
			VerdictSchema:      ResourceDescriptor{URI: v.Schema, Digest: DigestSet{SHA256: schemaDigest}},
			Verdict:            verdictJSON,
		},
	}
}

// marshalJSON encodes without HTML escaping and without a trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
