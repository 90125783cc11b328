package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/schema"
)

func init() {
	register(command{name: "verify", summary: "verify a signed verdict against a submission", run: runVerify})
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// runVerify checks a Sigstore bundle (or bare DSSE envelope) with a public
// key. Exit 0: verified; 1: verification failed; 2: usage; 3: could not
// verify (unreadable file or key, malformed bundle, unknown version).
func runVerify(ctx context.Context, args []string, stdio IO) int {
	fs := newFlags("verify", stdio.Stderr)
	keyPath := fs.String("key", "", "public key PEM (strictgrade.pub or cosign.pub) (required)")
	bundlePath := fs.String("bundle", "", "Sigstore bundle or DSSE envelope JSON (required)")
	subPath := fs.String("submission", "", "the submission file the verdict must be for")
	subDigest := fs.String("submission-digest", "", "or its sha256, as hex or sha256:hex")
	taskDigest := fs.String("task-digest", "", "require this task digest (hex or sha256:hex)")
	tier := fs.String("tier", "", "require this tier: strict or compat")
	nonce := fs.String("nonce", "", "require this host-issued nonce")
	asJSON := fs.Bool("json", false, "print the verified in-toto statement (the exact signed bytes) on stdout")
	requireOutcome := fs.String("require-outcome", "", "also require this verdict outcome (PASS, FAIL, ERROR or QUARANTINED): exit 1 when the verified verdict has another")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usage := func(msg string) int {
		fmt.Fprintln(stdio.Stderr, "strictgrade verify: "+msg)
		return ExitUsage
	}
	switch {
	case fs.NArg() != 0:
		return usage("takes no arguments")
	case *keyPath == "":
		return usage("--key PUB is required")
	case *bundlePath == "":
		return usage("--bundle FILE is required")
	case (*subPath == "") == (*subDigest == ""):
		return usage("give exactly one of --submission FILE and --submission-digest HEX")
	}
	var wantOutcome schema.Outcome
	if *requireOutcome != "" {
		o, ok := parseOutcome(*requireOutcome)
		if !ok {
			return usage("--require-outcome must be PASS, FAIL, ERROR or QUARANTINED")
		}
		wantOutcome = o
	}
	want := attest.Expect{Nonce: *nonce}
	if *subDigest != "" {
		d, ok := parseSHA256Flag(*subDigest)
		if !ok {
			return usage("--submission-digest must be 64 hex digits, optionally prefixed by sha256:")
		}
		want.SubmissionSHA256 = d
	}
	if *taskDigest != "" {
		d, ok := parseSHA256Flag(*taskDigest)
		if !ok {
			return usage("--task-digest must be 64 hex digits, optionally prefixed by sha256:")
		}
		want.TaskDigest = d
	}
	if *tier != "" {
		t, err := schema.ParseTier(*tier)
		if err != nil {
			return fail(stdio, "verify", ExitUsage, err)
		}
		want.Tier = t
	}

	pub, err := attest.LoadPublicKeyFile(*keyPath)
	if err != nil {
		return fail(stdio, "verify", ExitError, fmt.Errorf("could not verify: %w", err))
	}
	if *subPath != "" {
		d, err := sha256File(ctx, *subPath)
		if err != nil {
			return fail(stdio, "verify", ExitError, fmt.Errorf("could not verify: %w", err))
		}
		want.SubmissionSHA256 = d
	}
	data, err := readFileLimited(*bundlePath, attest.MaxInputSize)
	if err != nil {
		return fail(stdio, "verify", ExitError, fmt.Errorf("could not verify: %w", err))
	}
	res, err := attest.Verify(data, pub, want)
	if err != nil {
		return fail(stdio, "verify", verifyExitCode(err), err)
	}
	v := res.Verdict
	// The outcome comes first and on its own line: a signed FAIL or ERROR
	// verifies too, and a reader skimming for "verified" must not take it
	// for a PASS.
	headline := fmt.Sprintf("outcome: %s (signature and bindings verified)", v.Outcome)
	summary := fmt.Sprintf("verified: %s task=%s task_digest=%s tier=%s submission=sha256:%s nonce=%s time=%s format=%s key=%s",
		v.Outcome, v.Task.ID, v.Task.Digest, v.Tier, v.Submission.SHA256, v.Nonce,
		res.Statement.Predicate.TimeVerified.Format("2006-01-02T15:04:05Z07:00"), res.Format, res.KeyHint)
	if *asJSON {
		stdio.Stdout.Write(res.Payload)
		fmt.Fprintln(stdio.Stdout)
		fmt.Fprintln(stdio.Stderr, headline)
		fmt.Fprintln(stdio.Stderr, summary)
	} else {
		fmt.Fprintln(stdio.Stdout, headline)
		fmt.Fprintln(stdio.Stdout, summary)
	}
	if wantOutcome != "" && v.Outcome != wantOutcome {
		fmt.Fprintf(stdio.Stderr, "strictgrade verify: the verdict is %s, not the required %s\n", v.Outcome, wantOutcome)
		return ExitFail
	}
	return ExitOK
}

// parseOutcome reads an outcome name, in any letter case.
func parseOutcome(s string) (schema.Outcome, bool) {
	for _, o := range []schema.Outcome{schema.OutcomePass, schema.OutcomeFail, schema.OutcomeError, schema.OutcomeQuarantined} {
		if strings.EqualFold(s, string(o)) {
			return o, true
		}
	}
	return "", false
}

// verifyExitCode maps a Verify error to the documented exit codes: a
// definite "no" is ExitFail, anything else ExitError.
func verifyExitCode(err error) int {
	if errors.Is(err, attest.ErrVerificationFailed) {
		return ExitFail
	}
	return ExitError
}

func parseSHA256Flag(s string) (string, bool) {
	s = strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s, "sha256:"), "SHA256:"))
	return s, sha256Hex.MatchString(s)
}

// sha256File hashes a file of any size, stopping if ctx is cancelled.
func sha256File(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func readFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
}
