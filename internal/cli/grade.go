package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

func init() {
	register(command{name: "grade", summary: "grade a submission against a task and sign the verdict", do: runGrade})
}

// keyPasswordEnv names the environment variables that hold an encrypted
// private key's password, in the order they are read.
var keyPasswordEnv = []string{"STRICTGRADE_KEY_PASSWORD", "COSIGN_PASSWORD"}

// keyHelp describes --key for the commands that sign.
const keyHelp = "private key PEM for signing (default: an ephemeral key); an encrypted key's password is read from $STRICTGRADE_KEY_PASSWORD, else $COSIGN_PASSWORD"

// loadSigner reads the private key at path, with the password from the
// first of keyPasswordEnv that is set, or makes an ephemeral key when path
// is empty.
func loadSigner(path string) (*attest.Signer, bool, error) {
	if path == "" {
		priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
		if err != nil {
			return nil, false, err
		}
		s, err := attest.LoadSigner(priv, nil)
		return s, true, err
	}
	var pw string
	for _, name := range keyPasswordEnv {
		if pw = os.Getenv(name); pw != "" {
			break
		}
	}
	s, err := attest.LoadSignerFile(path, []byte(pw))
	if err != nil {
		return nil, false, fmt.Errorf("--key %s (an encrypted key's password is read from $%s, else $%s): %w", path, keyPasswordEnv[0], keyPasswordEnv[1], err)
	}
	return s, false, nil
}

// gradeArgs is a grade's command line.
type gradeArgs struct {
	task, submission, key, out, disclosure, nonce string
	json                                          bool
	backendArgs
}

func runGrade(ctx context.Context, args []string, stdio IO) error {
	var a gradeArgs
	fs := flagSet(stdio.Stderr, "grade", "--task DIR --submission DIR|TAR|DIFF [flags]",
		"Grades a submission in hardened containers and prints the signed verdict.")
	fs.StringVar(&a.task, "task", "", "task `DIR` (required)")
	fs.StringVar(&a.submission, "submission", "", "submission: a directory or tar file (strict tier), a unified diff file (compat tier); required")
	fs.StringVar(&a.key, "key", "", keyHelp)
	fs.StringVar(&a.out, "out", "", "write the Sigstore bundle to `FILE`, the bare DSSE envelope to FILE.dsse.json and the graded bytes to FILE.submission (checked before grading)")
	fs.BoolVar(&a.json, "json", false, "print the verdict as JSON instead of a table")
	fs.StringVar(&a.disclosure, "disclosure", "", "how much strict-tier reasons may say: digest (positions and digests only; the default) or detailed (escaped excerpts of the candidate's output, for debugging; a task that asks for digest keeps it)")
	fs.StringVar(&a.nonce, "nonce", "", "bind the verdict to this host-issued nonce (default: a fresh one)")
	a.backendArgs.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if a.task == "" || a.submission == "" || fs.NArg() != 0 {
		return usagef("--task DIR and --submission PATH are required, and nothing else")
	}
	var policy schema.Disclosure
	if a.disclosure != "" {
		p, err := schema.ParseDisclosure(a.disclosure)
		if err != nil {
			return badInput(err)
		}
		policy = p
	}
	if a.nonce != "" && !schema.ValidNonce(a.nonce) {
		return usagef("--nonce must be 16 to 128 characters of A-Z, a-z, 0-9, '_' and '-'")
	}
	if err := checkOut(a.out); err != nil {
		return err
	}
	signer, ephemeral, err := loadSigner(a.key)
	if err != nil {
		return err
	}
	t, err := controller.LoadTask(ctx, a.task)
	if err != nil {
		return badInput(err)
	}
	sub, closeSub, err := submission(t, a.submission)
	if err != nil {
		return badInput(err)
	}
	defer closeSub()
	sub.Nonce = a.nonce
	ctrl, closeCtrl, err := a.open(ctx, stdio, controller.Config{Signer: signer, Logger: stdio.Log, Disclosure: policy,
		// One grade: start what it uses, keep nothing ready after it.
		Pool: -1}, true)
	if err != nil {
		return err
	}
	defer closeCtrl()
	if ct, ok := t.(*compat.Task); ok {
		sub.Baseline = compatBaseline(stdio, "grade", ct, ctrl.RuntimeImage())
	}
	res, gradeErr := ctrl.Grade(ctx, t, sub)
	if res == nil {
		return gradeErr
	}
	if err := report(stdio, res, signer, ephemeral, a.out, a.json); err != nil {
		return err
	}
	if gradeErr != nil {
		return gradeErr
	}
	return outcome(res.Verdict.Outcome, "the verdict is %s", res.Verdict.Outcome)
}

// submission reads the submission at path in the form t's tier takes: a
// directory or a tar file for a strict task, a unified diff file for a
// compat task. The returned function closes what it opened.
func submission(t controller.Task, path string) (controller.Submission, func(), error) {
	none := func() {}
	if t.Tier() == schema.TierCompat {
		diff, err := readDiff(path)
		return controller.Submission{Diff: diff}, none, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return controller.Submission{}, none, err
	}
	if st.IsDir() {
		return controller.Submission{Dir: path}, none, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return controller.Submission{}, none, err
	}
	return controller.Submission{Archive: f}, func() { f.Close() }, nil
}

// checkOut refuses, before any grading, an --out that could not be
// written: a directory, or a path whose directory is missing or not
// writable. A signed verdict is never lost to a bad path.
func checkOut(out string) error {
	if out == "" {
		return nil
	}
	if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		return usagef("--out %s is a directory; name a file in it", out)
	}
	f, err := os.CreateTemp(filepath.Dir(out), ".strictgrade-out-*")
	if err != nil {
		return usagef("--out %s: cannot write in its directory: %w", out, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// report prints a grade's verdict and writes its files.
func report(stdio IO, res *controller.Result, signer *attest.Signer, ephemeral bool, out string, asJSON bool) error {
	if out != "" {
		if err := writeOutputs(out, res, signer, ephemeral, stdio.Stderr); err != nil {
			return err
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdio.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res.Verdict)
	}
	printVerdict(stdio.Stdout, res.Verdict)
	return nil
}

// maxDiff bounds a diff file read from disk.
const maxDiff = 16 << 20

func readDiff(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: a compat submission is a unified diff file", path)
	}
	if st.Size() > maxDiff {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxDiff)
	}
	return os.ReadFile(path)
}

func writeOutputs(out string, res *controller.Result, signer *attest.Signer, ephemeral bool, stderr io.Writer) error {
	if err := os.WriteFile(out, res.Signed.Bundle, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(out+".dsse.json", res.Signed.Envelope, 0o644); err != nil {
		return err
	}
	if res.Archive != nil {
		if err := os.WriteFile(out+".submission", res.Archive, 0o644); err != nil {
			return err
		}
	}
	if ephemeral {
		pub, err := signer.PublicKeyPEM()
		if err != nil {
			return err
		}
		if err := os.WriteFile(out+".pub", pub, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "grade: signed with an ephemeral key; its public key is %s.pub\n", out)
	}
	fmt.Fprintf(stderr, "grade: wrote %s (bundle), %s.dsse.json (envelope)", out, out)
	if res.Archive != nil {
		fmt.Fprintf(stderr, " and %s.submission (the exact bytes graded)", out)
	}
	fmt.Fprintln(stderr)
	return nil
}

func printVerdict(w io.Writer, v *schema.Verdict) {
	fmt.Fprintf(w, "%s  task %s (%s, %s tier)", v.Outcome, v.Task.ID, v.Task.Kind, v.Tier)
	if v.Reason != "" {
		fmt.Fprintf(w, ": %s", v.Reason)
	}
	fmt.Fprintln(w)
	if len(v.Cases) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CASE\tOUTCOME\tDECIDED BY\tCODE\tEXIT\tMS\tREASON")
		for _, c := range v.Cases {
			code := c.ReasonCode
			if code == "" {
				code = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", c.ID, c.Outcome, c.DecidedBy, code, c.Exit, c.DurationMS, c.Reason)
		}
		tw.Flush()
	}
	counts := v.Counts()
	fmt.Fprintf(w, "%d passed, %d failed of %d cases; submission sha256 %s; run %s\n",
		counts[schema.OutcomePass], counts[schema.OutcomeFail], len(v.Cases), v.Submission.SHA256, v.RunID)
}

// compatBaseline returns the baseline task check recorded for a compat
// task and says on stderr which it uses, or why it has none (the verdict
// then records no baseline and flipped is false).
func compatBaseline(stdio IO, cmd string, t *compat.Task, runtimeImage string) schema.Outcome {
	o, why := lookupBaseline(t, runtimeImage)
	switch {
	case o == "":
		fmt.Fprintf(stdio.Stderr, "%s: %s; without it the verdict records no baseline and flipped is false\n", cmd, why)
	case o == schema.OutcomeQuarantined:
		fmt.Fprintf(stdio.Stderr, "%s: task %s was QUARANTINED by task check: it is not fit to grade\n", cmd, t.Spec.ID)
	}
	return o
}
