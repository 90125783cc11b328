package attest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/schema"
)

var (
	submissionA = []byte("diff --git a/x.py b/x.py\n+print('a')\n")
	submissionB = []byte("diff --git a/x.py b/x.py\n+print('b')\n")
	taskDigest  = strings.Repeat("7a", 32)
	otherTask   = strings.Repeat("7b", 32)
	signedAt    = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// verdictFor returns a valid strict-tier PASS verdict for sub.
func verdictFor(sub []byte, nonce string) *schema.Verdict {
	v := schema.New(schema.Task{ID: "fn/add", Digest: taskDigest, Kind: schema.KindFunction}, schema.TierStrict)
	v.RunID = "run-1"
	v.Outcome = schema.OutcomePass
	v.SetCases([]schema.Case{
		{ID: "case-1", Outcome: schema.OutcomePass, DecidedBy: schema.DecidedByJSON, DurationMS: 3},
		{ID: "case-2", Outcome: schema.OutcomePass, DecidedBy: schema.DecidedByNumbers, DurationMS: 4},
	})
	v.Submission = schema.Submission{Kind: schema.SubmissionDiff, SHA256: sha(sub), Size: int64(len(sub))}
	v.Images = schema.Images{Candidate: "sha256:" + strings.Repeat("c", 64), Judge: "sha256:" + strings.Repeat("d", 64)}
	v.Timings = schema.Timings{TotalMS: 1500, CandidateMS: 1200, JudgeMS: 50}
	v.Controller = schema.Controller{Version: "0.1.0-test", Runtime: "docker/runc"}
	v.Nonce = nonce
	return v
}

const nonce1 = "nonce-run-1-0123456789"

var keyTypes = []attest.KeyType{attest.KeyECDSAP256, attest.KeyEd25519}

func newSigner(t testing.TB, kt attest.KeyType) *attest.Signer {
	t.Helper()
	priv, _, err := attest.GenerateKey(kt, nil)
	require.NoError(t, err)
	s, err := attest.LoadSigner(priv, nil)
	require.NoError(t, err)
	return s
}

func expectA() attest.Expect {
	return attest.Expect{SubmissionSHA256: sha(submissionA), TaskDigest: taskDigest, Tier: schema.TierStrict, Nonce: nonce1}
}
