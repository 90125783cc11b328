package attest

import (
	"errors"
	"strings"
)

// The two classes of verification error. Every error Verify returns is a
// *VerifyError that matches exactly one of them with errors.Is.
var (
	// ErrVerificationFailed: the input was readable and was checked, and it
	// is not an acceptable verdict for what was presented (bad signature,
	// wrong payload or predicate type, another submission, task, tier or
	// nonce, an invalid embedded verdict). A definite "no".
	ErrVerificationFailed = errors.New("attest: verification failed")
	// ErrCannotVerify: the check could not be carried out (malformed
	// bundle, unusable key, unsupported format or schema version, missing
	// expectation). Not a statement about the verdict; still not a "yes".
	ErrCannotVerify = errors.New("attest: could not verify")
)

// Reasons for ErrVerificationFailed.
var (
	ErrSignature       = errors.New("attest: signature does not verify with the key")
	ErrPayloadType     = errors.New("attest: unexpected DSSE payload type")
	ErrStatement       = errors.New("attest: payload is not an in-toto Statement v1")
	ErrPredicateType   = errors.New("attest: unexpected predicate type")
	ErrSubjectMismatch = errors.New("attest: subject digest is not the submission's")
	ErrTaskMismatch    = errors.New("attest: task digest is not the expected one")
	ErrTierMismatch    = errors.New("attest: tier is not the expected one")
	ErrNonceMismatch   = errors.New("attest: nonce is not the expected one")
	ErrInvalidVerdict  = errors.New("attest: embedded verdict is not schema-valid")
	ErrInconsistent    = errors.New("attest: predicate contradicts its verdict")
)

// Reasons for ErrCannotVerify, and for key loading.
var (
	ErrMalformed   = errors.New("attest: not a readable Sigstore bundle or DSSE envelope")
	ErrUnsupported = errors.New("attest: unsupported format or version")
	ErrExpectation = errors.New("attest: invalid expectation")
	ErrKey         = errors.New("attest: unusable key")
	ErrPassword    = errors.New("attest: wrong or missing password for encrypted key")
)

// VerifyError is what Verify returns on failure.
type VerifyError struct {
	// Class is ErrVerificationFailed or ErrCannotVerify.
	Class error
	// Reason is one of the reason sentinels above.
	Reason error
	// Detail says what exactly did not match; it never holds key material.
	Detail string
	// Err is the underlying error, if any (e.g. a *schema.ValidationError).
	Err error
}

func (e *VerifyError) Error() string {
	var b strings.Builder
	b.WriteString(e.Class.Error())
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Reason.Error(), "attest: "))
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the class, the reason and the underlying error.
func (e *VerifyError) Unwrap() []error {
	errs := []error{e.Class, e.Reason}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

func failed(reason error, detail string, err error) *VerifyError {
	return &VerifyError{Class: ErrVerificationFailed, Reason: reason, Detail: detail, Err: err}
}

func cannot(reason error, detail string, err error) *VerifyError {
	return &VerifyError{Class: ErrCannotVerify, Reason: reason, Detail: detail, Err: err}
}
