package cli

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/strictgrade/strictgrade/attest"
	sgbatch "github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/schema"
)

func init() {
	register(command{name: "verify", summary: "verify a signed verdict against a submission", do: runVerify})
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// verifyArgs is a verify's command line.
type verifyArgs struct {
	key, bundle, submission string
	run                     string
	want                    attest.Expect
	outcome                 schema.Outcome
	json                    bool
}

// runVerify checks a Sigstore bundle (or bare DSSE envelope) with a public
// key. A definite "no" is an attest.ErrVerificationFailed; not being able
// to tell (unreadable file or key, malformed bundle, unknown version) is
// any other error.
func runVerify(ctx context.Context, args []string, stdio IO) error {
	a, err := parseVerify(args, stdio)
	if err != nil {
		return err
	}
	if a.run != "" {
		return verifyRun(a, stdio)
	}
	pub, data, err := a.load(ctx)
	if err != nil {
		return fmt.Errorf("could not verify: %w", err)
	}
	res, err := attest.Verify(data, pub, a.want)
	if err != nil {
		return err
	}
	printVerified(stdio, res, a.json)
	if a.outcome != "" && res.Verdict.Outcome != a.outcome {
		return outcome(schema.OutcomeFail, "the verdict is %s, not the required %s", res.Verdict.Outcome, a.outcome)
	}
	return nil
}

// parseVerify reads and checks a verify's command line.
func parseVerify(args []string, stdio IO) (*verifyArgs, error) {
	a := &verifyArgs{}
	fs := flagSet(stdio.Stderr, "verify", "--key PUB --bundle FILE --submission FILE|--submission-digest HEX [flags]\n       strictgrade verify --run DIR --key PUB",
		"Verifies a signed verdict's signature and that it binds the given submission (and task, tier and nonce when\ngiven). A signed FAIL or ERROR verifies too: the outcome is printed first.\n\n"+
			"With --run, verifies every item of a run directory (strictgrade run): its bundle, in the item's own\n"+
			"directory, against the submission bytes beside it, and its signed verdict against its line of\n"+
			"results.jsonl (task, task digest, tier, outcome, reason code, submission digest, and a nonce naming the\n"+
			"item in this run); prints a table; exit 1 if any does not verify.")
	fs.StringVar(&a.key, "key", "", "public key PEM (strictgrade.pub or cosign.pub) (required)")
	fs.StringVar(&a.bundle, "bundle", "", "Sigstore bundle or DSSE envelope JSON (required without --run)")
	fs.StringVar(&a.run, "run", "", "verify every item of the run `DIR` (strictgrade run --out DIR) instead of one bundle")
	fs.StringVar(&a.submission, "submission", "", "the submission file the verdict must be for")
	subDigest := fs.String("submission-digest", "", "or its sha256, as hex or sha256:hex")
	taskDigest := fs.String("task-digest", "", "require this task digest (hex or sha256:hex)")
	tier := fs.String("tier", "", "require this tier: strict or compat")
	fs.StringVar(&a.want.Nonce, "nonce", "", "require this host-issued nonce")
	fs.BoolVar(&a.json, "json", false, "print the verified in-toto statement (the exact signed bytes) on stdout")
	requireOutcome := fs.String("require-outcome", "", "also require this verdict outcome (PASS, FAIL, ERROR or QUARANTINED): exit 1 when the verified verdict has another")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if a.run != "" {
		switch {
		case fs.NArg() != 0:
			return nil, usagef("takes no arguments")
		case a.key == "":
			return nil, usagef("--key PUB is required")
		case a.bundle != "" || a.submission != "" || *subDigest != "" || *taskDigest != "" || *tier != "" ||
			a.want.Nonce != "" || a.json || *requireOutcome != "":
			return nil, usagef("--run DIR takes only --key: each item's line of results.jsonl is checked against its signed verdict")
		}
		return a, nil
	}
	switch {
	case fs.NArg() != 0:
		return nil, usagef("takes no arguments")
	case a.key == "":
		return nil, usagef("--key PUB is required")
	case a.bundle == "":
		return nil, usagef("--bundle FILE is required")
	case (a.submission == "") == (*subDigest == ""):
		return nil, usagef("give exactly one of --submission FILE and --submission-digest HEX")
	}
	if *requireOutcome != "" {
		o, ok := parseOutcome(*requireOutcome)
		if !ok {
			return nil, usagef("--require-outcome must be PASS, FAIL, ERROR or QUARANTINED")
		}
		a.outcome = o
	}
	for _, d := range []struct {
		flag, in string
		to       *string
	}{
		{"--submission-digest", *subDigest, &a.want.SubmissionSHA256},
		{"--task-digest", *taskDigest, &a.want.TaskDigest},
	} {
		if d.in == "" {
			continue
		}
		h, ok := parseSHA256Flag(d.in)
		if !ok {
			return nil, usagef("%s must be 64 hex digits, optionally prefixed by sha256:", d.flag)
		}
		*d.to = h
	}
	if *tier != "" {
		t, err := schema.ParseTier(*tier)
		if err != nil {
			return nil, badInput(err)
		}
		a.want.Tier = t
	}
	return a, nil
}

// load reads the public key and the bundle and, when a submission file
// was named, records its digest as expected.
func (a *verifyArgs) load(ctx context.Context) (crypto.PublicKey, []byte, error) {
	pub, err := attest.LoadPublicKeyFile(a.key)
	if err != nil {
		return nil, nil, err
	}
	if a.submission != "" {
		if a.want.SubmissionSHA256, err = sha256File(ctx, a.submission); err != nil {
			return nil, nil, err
		}
	}
	data, err := attest.ReadBundleFile(a.bundle)
	if err != nil {
		return nil, nil, err
	}
	return pub, data, nil
}

// printVerified prints what was verified. The outcome comes first and on
// its own line: a signed FAIL or ERROR verifies too, and a reader skimming
// for "verified" must not take it for a PASS.
func printVerified(stdio IO, res *attest.Verified, asJSON bool) {
	v := res.Verdict
	headline := fmt.Sprintf("outcome: %s (signature and bindings verified)", v.Outcome)
	summary := fmt.Sprintf("verified: %s task=%s task_digest=%s tier=%s submission=sha256:%s nonce=%s time=%s format=%s key=%s",
		v.Outcome, v.Task.ID, v.Task.Digest, v.Tier, v.Submission.SHA256, v.Nonce,
		res.Statement.Predicate.TimeVerified.Format("2006-01-02T15:04:05Z07:00"), res.Format, res.KeyHint)
	if asJSON {
		stdio.Stdout.Write(res.Payload)
		fmt.Fprintln(stdio.Stdout)
		fmt.Fprintln(stdio.Stderr, headline)
		fmt.Fprintln(stdio.Stderr, summary)
		return
	}
	fmt.Fprintln(stdio.Stdout, headline)
	fmt.Fprintln(stdio.Stdout, summary)
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

// verifyRun verifies every item of a run directory and prints a table.
// An item that does not verify is a definite no (exit 1); an ERROR
// without a signed verdict has nothing to verify and is shown as such.
func verifyRun(a *verifyArgs, stdio IO) error {
	pub, err := attest.LoadPublicKeyFile(a.key)
	if err != nil {
		return fmt.Errorf("could not verify: %w", err)
	}
	checks, err := sgbatch.VerifyRun(a.run, pub)
	if err != nil {
		return fmt.Errorf("could not verify: %w", err)
	}
	tw := tabwriter.NewWriter(stdio.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tTASK\tOUTCOME\tVERIFIED")
	failed, none := 0, 0
	for _, c := range checks {
		r := c.Record
		status := "yes"
		switch {
		case errors.Is(c.Err, sgbatch.ErrNoVerdict):
			status, none = "- (no signed verdict: "+truncateLine(r.Error, 80)+")", none+1
		case c.Err != nil:
			status, failed = "NO: "+strings.ReplaceAll(c.Err.Error(), "\n", " "), failed+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Item, r.Task, r.Outcome, status)
	}
	tw.Flush()
	fmt.Fprintf(stdio.Stdout, "%d items: %d verified, %d not verified, %d without a signed verdict\n",
		len(checks), len(checks)-failed-none, failed, none)
	if failed > 0 {
		return outcome(schema.OutcomeFail, "%d of %d items of %s do not verify", failed, len(checks), a.run)
	}
	return nil
}

func truncateLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
