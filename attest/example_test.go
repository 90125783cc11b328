package attest_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/schema"
)

// exampleVerdict is a strict-tier PASS for the given submission bytes.
func exampleVerdict(submission []byte) *schema.Verdict {
	sum := sha256.Sum256(submission)
	v := schema.New(schema.Task{ID: "fn/add", Digest: strings.Repeat("1", 64), Kind: schema.KindFunction}, schema.TierStrict)
	v.RunID = "run-1"
	v.Outcome = schema.OutcomePass
	v.SetCases([]schema.Case{{ID: "case-1", Outcome: schema.OutcomePass, DecidedBy: schema.DecidedByJSON, DurationMS: 41}})
	v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(submission))}
	v.Images = schema.Images{Candidate: "sha256:" + strings.Repeat("2", 64), Judge: "sha256:" + strings.Repeat("3", 64)}
	v.Timings = schema.Timings{TotalMS: 900}
	v.Controller = schema.Controller{Version: "0.1.0"}
	v.Nonce = "host-nonce-0123456789"
	return v
}

func Example() {
	ctx := context.Background()
	submission := []byte("the canonical archive bytes")

	// On the host: a key (normally attest.LoadSignerFile) and the verdict.
	privPEM, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		panic(err)
	}
	signer, err := attest.LoadSigner(privPEM, nil)
	if err != nil {
		panic(err)
	}
	signed, err := signer.Sign(ctx, exampleVerdict(submission), attest.SignOptions{})
	if err != nil {
		panic(err)
	}

	// Anywhere: the public key, the bundle and the submission.
	sum := sha256.Sum256(submission)
	got, err := attest.Verify(signed.Bundle, signer.PublicKey(), attest.Expect{
		SubmissionSHA256: hex.EncodeToString(sum[:]),
		Tier:             schema.TierStrict,
		Nonce:            "host-nonce-0123456789",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(got.Verdict.Outcome, got.Verdict.Task.ID, got.Format)

	// The same bundle presented for other bytes is a definite no.
	other := sha256.Sum256([]byte("other bytes"))
	_, err = attest.Verify(signed.Bundle, signer.PublicKey(), attest.Expect{SubmissionSHA256: hex.EncodeToString(other[:])})
	fmt.Println(errors.Is(err, attest.ErrVerificationFailed), errors.Is(err, attest.ErrSubjectMismatch))

	// A truncated bundle cannot be verified at all.
	_, err = attest.Verify(signed.Bundle[:100], signer.PublicKey(), attest.Expect{SubmissionSHA256: hex.EncodeToString(sum[:])})
	fmt.Println(errors.Is(err, attest.ErrCannotVerify))
	// Output:
	// PASS fn/add sigstore-bundle
	// true true
	// true
}

// Example_statement prints the signed in-toto Statement; with an Ed25519
// key from a fixed seed and a fixed time the output is reproducible.
func Example_statement() {
	signer, err := attest.NewSigner(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	if err != nil {
		panic(err)
	}
	signed, err := signer.Sign(context.Background(), exampleVerdict([]byte("the canonical archive bytes")), attest.SignOptions{
		Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	})
	if err != nil {
		panic(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, signed.Payload, "", "  "); err != nil {
		panic(err)
	}
	fmt.Println(out.String())
	fmt.Println("hint:", signer.Hint())
	// Output:
	// {
	//   "_type": "https://in-toto.io/Statement/v1",
	//   "subject": [
	//     {
	//       "name": "submission.tar",
	//       "digest": {
	//         "sha256": "bbe0139c07cae95e354e78975f5c8d377fd7d8a25884cb4792b88c0ac2068b49"
	//       }
	//     }
	//   ],
	//   "predicateType": "https://strictgrade.dev/attestation/verdict/v0.1",
	//   "predicate": {
	//     "verifier": {
	//       "id": "https://strictgrade.dev/grader/controller",
	//       "version": {
	//         "strictgrade": "0.1.0"
	//       }
	//     },
	//     "timeVerified": "2026-11-30T12:00:00Z",
	//     "verificationResult": "PASSED",
	//     "task": {
	//       "name": "fn/add",
	//       "digest": {
	//         "sha256": "1111111111111111111111111111111111111111111111111111111111111111"
	//       }
	//     },
	//     "verdictSchema": {
	//       "uri": "https://strictgrade.dev/schema/verdict/v4",
	//       "digest": {
	//         "sha256": "91d194c6ce187f281b61c618d87259c7be503e5259c3d0c6c2789af5f955eb7c"
	//       }
	//     },
	//     "verdict": {
	//       "schema": "https://strictgrade.dev/schema/verdict/v4",
	//       "run_id": "run-1",
	//       "task": {
	//         "id": "fn/add",
	//         "digest": "1111111111111111111111111111111111111111111111111111111111111111",
	//         "kind": "function"
	//       },
	//       "tier": "strict",
	//       "outcome": "PASS",
	//       "reason": "",
	//       "cases": [
	//         {
	//           "id": "case-1",
	//           "outcome": "PASS",
	//           "decided_by": "json",
	//           "duration_ms": 41
	//         }
	//       ],
	//       "disclosure": "digest",
	//       "tests_hash": "2a63130e736c524960f433e93f5947349275df29ad47ac5d46c861440dd6de83",
	//       "submission": {
	//         "kind": "archive",
	//         "sha256": "bbe0139c07cae95e354e78975f5c8d377fd7d8a25884cb4792b88c0ac2068b49",
	//         "size": 27
	//       },
	//       "images": {
	//         "candidate": "sha256:2222222222222222222222222222222222222222222222222222222222222222",
	//         "judge": "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	//       },
	//       "timings": {
	//         "total_ms": 900
	//       },
	//       "controller": {
	//         "version": "0.1.0"
	//       },
	//       "nonce": "host-nonce-0123456789"
	//     }
	//   }
	// }
	// hint: Mkvi3qi8REYbAjPlH6SJAu1rHMZx53Oa8lUeC/5o9U4=
}
