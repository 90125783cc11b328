package cli_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/internal/cli"
	"github.com/strictgrade/strictgrade/schema"
)

// fixture is one signed verdict on disk.
type fixture struct {
	dir, pub, otherPub, bundle, envelope, tampered, submission, otherSubmission string
	subDigest, taskDigest, nonce                                                string
	payload                                                                     []byte
}

func newFixture(t *testing.T) fixture { return newFixtureWith(t, schema.OutcomePass) }

// newFixtureWith signs a verdict with the given outcome (PASS or FAIL).
func newFixtureWith(t *testing.T, outcome schema.Outcome) fixture {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	privPath, pubPath, err := attest.WriteKeyPair(filepath.Join(dir, "key"), attest.KeyECDSAP256, nil)
	require.NoError(t, err)
	_, otherPub, err := attest.WriteKeyPair(filepath.Join(dir, "other"), attest.KeyEd25519, nil)
	require.NoError(t, err)
	s, err := attest.LoadSignerFile(privPath, nil)
	require.NoError(t, err)

	sub := []byte("canonical archive bytes")
	sum := sha256.Sum256(sub)
	f := fixture{
		dir: dir, pub: pubPath, otherPub: otherPub,
		submission: write("submission.tar", sub), otherSubmission: write("other.tar", []byte("other bytes")),
		subDigest: hex.EncodeToString(sum[:]), taskDigest: strings.Repeat("5", 64), nonce: schema.NewNonce(),
	}
	v := schema.New(schema.Task{ID: "cli/wc", Digest: f.taskDigest, Kind: schema.KindCommand}, schema.TierStrict)
	v.RunID = "run-cli"
	v.Outcome = outcome
	c := schema.Case{ID: "c1", Outcome: outcome, DecidedBy: schema.DecidedByLines}
	if outcome == schema.OutcomeFail {
		v.ReasonCode, v.Reason = schema.ReasonWrongAnswer, "1 of 1 case failed"
		c.Reason = "differs"
	}
	v.SetCases([]schema.Case{c})
	v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: f.subDigest, Size: int64(len(sub))}
	v.Images = schema.Images{Candidate: "sha256:" + strings.Repeat("a", 64), Judge: "sha256:" + strings.Repeat("b", 64)}
	v.Timings = schema.Timings{TotalMS: 10}
	v.Controller = schema.Controller{Version: "test"}
	v.Nonce = f.nonce
	signed, err := s.Sign(t.Context(), v, attest.SignOptions{})
	require.NoError(t, err)
	f.payload = signed.Payload
	f.bundle = write("verdict.sigstore.json", signed.Bundle)
	f.envelope = write("verdict.dsse.json", signed.Envelope)

	var b map[string]any
	require.NoError(t, json.Unmarshal(signed.Bundle, &b))
	env := b["dsseEnvelope"].(map[string]any)
	raw, err := base64.StdEncoding.DecodeString(env["payload"].(string))
	require.NoError(t, err)
	raw[len(raw)/2] ^= 1
	env["payload"] = base64.StdEncoding.EncodeToString(raw)
	tampered, err := json.Marshal(b)
	require.NoError(t, err)
	f.tampered = write("tampered.sigstore.json", tampered)
	return f
}

func TestVerify(t *testing.T) {
	f := newFixture(t)
	garbage := filepath.Join(f.dir, "garbage.json")
	require.NoError(t, os.WriteFile(garbage, []byte("{not json"), 0o644))
	missing := filepath.Join(f.dir, "missing")

	tests := []struct {
		name string
		args []string
		code int
		// out is a substring of stdout on success, of stderr otherwise.
		out string
	}{
		{"bundle and submission file", []string{"--key", f.pub, "--bundle", f.bundle, "--submission", f.submission}, cli.ExitOK, "verified: PASS task=cli/wc"},
		{"envelope", []string{"--key", f.pub, "--bundle", f.envelope, "--submission", f.submission}, cli.ExitOK, "format=dsse-envelope"},
		{"every expectation", []string{"--key", f.pub, "--bundle", f.bundle, "--submission-digest", "sha256:" + f.subDigest,
			"--task-digest", f.taskDigest, "--tier", "strict", "--nonce", f.nonce}, cli.ExitOK, "tier=strict"},
		{"uppercase digest", []string{"--key", f.pub, "--bundle", f.bundle, "--submission-digest", strings.ToUpper(f.subDigest)}, cli.ExitOK, "verified"},

		{"another submission", []string{"--key", f.pub, "--bundle", f.bundle, "--submission", f.otherSubmission}, cli.ExitFail, "verification failed: subject digest"},
		{"another task", []string{"--key", f.pub, "--bundle", f.bundle, "--submission", f.submission, "--task-digest", strings.Repeat("6", 64)}, cli.ExitFail, "task digest"},
		{"another tier", []string{"--key", f.pub, "--bundle", f.bundle, "--submission", f.submission, "--tier", "compat"}, cli.ExitFail, "tier"},
		{"an old nonce", []string{"--key", f.pub, "--bundle", f.bundle, "--submission", f.submission, "--nonce", schema.NewNonce()}, cli.ExitFail, "nonce"},
		{"another key", []string{"--key", f.otherPub, "--bundle", f.bundle, "--submission", f.submission}, cli.ExitFail, "signature"},
		{"tampered payload", []string{"--key", f.pub, "--bundle", f.tampered, "--submission", f.submission}, cli.ExitFail, "signature"},

		{"malformed bundle", []string{"--key", f.pub, "--bundle", garbage, "--submission", f.submission}, cli.ExitError, "could not verify"},
		{"missing bundle", []string{"--key", f.pub, "--bundle", missing, "--submission", f.submission}, cli.ExitError, "could not verify"},
		{"missing key", []string{"--key", missing, "--bundle", f.bundle, "--submission", f.submission}, cli.ExitError, "could not verify"},
		{"not a key", []string{"--key", garbage, "--bundle", f.bundle, "--submission", f.submission}, cli.ExitError, "could not verify"},
		{"missing submission", []string{"--key", f.pub, "--bundle", f.bundle, "--submission", missing}, cli.ExitError, "could not verify"},

		{"no flags", nil, cli.ExitUsage, "--key"},
		{"no bundle", []string{"--key", f.pub, "--submission", f.submission}, cli.ExitUsage, "--bundle"},
		{"no submission", []string{"--key", f.pub, "--bundle", f.bundle}, cli.ExitUsage, "exactly one"},
		{"two submissions", []string{"--key", f.pub, "--bundle", f.bundle, "--submission", f.submission, "--submission-digest", f.subDigest}, cli.ExitUsage, "exactly one"},
		{"bad digest", []string{"--key", f.pub, "--bundle", f.bundle, "--submission-digest", "abc"}, cli.ExitUsage, "64 hex"},
		{"bad task digest", []string{"--key", f.pub, "--bundle", f.bundle, "--submission", f.submission, "--task-digest", "xyz"}, cli.ExitUsage, "64 hex"},
		{"bad tier", []string{"--key", f.pub, "--bundle", f.bundle, "--submission", f.submission, "--tier", "lenient"}, cli.ExitUsage, "tier"},
		{"stray argument", []string{"--key", f.pub, "--bundle", f.bundle, "--submission", f.submission, "x"}, cli.ExitUsage, "no arguments"},
		{"help", []string{"-h"}, cli.ExitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"verify"}, tt.args...)...)
			assert.Equal(t, tt.code, code, "stderr: %s", stderr)
			if tt.code == cli.ExitOK {
				assert.Contains(t, stdout, tt.out)
				return
			}
			assert.Empty(t, stdout, "nothing on stdout unless verified")
			assert.Contains(t, stderr, tt.out)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line of error: %q", stderr)
		})
	}
}

func TestVerifyJSON(t *testing.T) {
	f := newFixture(t)
	code, stdout, stderr := run(t, "verify", "--key", f.pub, "--bundle", f.bundle, "--submission", f.submission, "--json")
	require.Equal(t, cli.ExitOK, code, stderr)
	assert.Equal(t, string(f.payload)+"\n", stdout, "--json prints the exact signed statement")
	assert.Contains(t, stderr, "verified: PASS")
	var st attest.Statement
	require.NoError(t, json.Unmarshal([]byte(stdout), &st))
	assert.Equal(t, attest.PredicateType, st.PredicateType)
}

func TestVerifyRequireOutcome(t *testing.T) {
	pass, failed := newFixtureWith(t, schema.OutcomePass), newFixtureWith(t, schema.OutcomeFail)
	args := func(f fixture, extra ...string) []string {
		return append([]string{"verify", "--key", f.pub, "--bundle", f.bundle, "--submission", f.submission}, extra...)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"a signed FAIL verifies and says so first", args(failed), cli.ExitOK, "outcome: FAIL (signature and bindings verified)\nverified: FAIL", ""},
		{"PASS required and present", args(pass, "--require-outcome", "PASS"), cli.ExitOK, "outcome: PASS", ""},
		{"any letter case", args(pass, "--require-outcome", "pass"), cli.ExitOK, "outcome: PASS", ""},
		{"PASS required, FAIL signed", args(failed, "--require-outcome", "PASS"), cli.ExitFail, "outcome: FAIL", "the verdict is FAIL, not the required PASS"},
		{"FAIL required and present", args(failed, "--require-outcome", "FAIL"), cli.ExitOK, "outcome: FAIL", ""},
		{"unknown outcome", args(pass, "--require-outcome", "GREEN"), cli.ExitUsage, "", "--require-outcome must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			assert.Equal(t, tt.code, code, "stderr: %s", stderr)
			assert.Contains(t, stdout, tt.stdout)
			assert.Contains(t, stderr, tt.stderr)
		})
	}
}
