// Package attest signs strictgrade verdicts and verifies them.
//
// A signed verdict is an in-toto Statement v1 whose only subject is the
// sha256 of the graded submission bytes (the tar firewall's canonical
// archive, or the diff) and whose predicate, of type
// https://strictgrade.dev/attestation/verdict/v0.1, holds the binding fields
// the host controller fills (verifier, timeVerified, verificationResult,
// task, verdictSchema) around the schema-validated verdict. The statement
// is signed as a DSSE envelope (payload type application/vnd.in-toto+json)
// with github.com/sigstore/sigstore, ECDSA P-256 by default or Ed25519, and
// written both as a Sigstore bundle v0.3 (public-key hint, no transparency
// log entry) and as a bare DSSE envelope. Stock cosign verifies the bundle:
//
//	cosign verify-blob-attestation --key strictgrade.pub --bundle verdict.sigstore.json \
//	  --type https://strictgrade.dev/attestation/verdict/v0.1 --insecure-ignore-tlog=true submission.tar
//
// Verify does the same checks and more (the embedded verdict is validated
// again; the task digest, tier and nonce can be required) and returns the
// exact bytes the signature covers. Its errors say whether verification
// failed (ErrVerificationFailed: the answer is no) or could not be carried
// out (ErrCannotVerify: malformed input, unusable key, unknown version).
//
// Keys are PEM files. GenerateKey and WriteKeyPair make them; LoadSigner
// reads PKCS#8, SEC 1 and the encrypted format of `cosign
// generate-key-pair` (with its password). A Signer is host-only: it must
// never reach anything that talks to containers (see Signer).
package attest
