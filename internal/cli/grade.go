package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

func init() {
	register(command{name: "grade", summary: "grade a submission against a task and sign the verdict", run: runGrade})
}

// outcomeCode maps a verdict outcome to the documented exit code.
func outcomeCode(o schema.Outcome) int {
	switch o {
	case schema.OutcomePass:
		return ExitOK
	case schema.OutcomeFail:
		return ExitFail
	case schema.OutcomeQuarantined:
		return ExitQuarantined
	default:
		return ExitError
	}
}

// loadSigner reads the private key at path (password from
// $STRICTGRADE_KEY_PASSWORD, or $COSIGN_PASSWORD for cosign keys), or
// makes an ephemeral key when path is empty.
func loadSigner(path string) (*attest.Signer, bool, error) {
	if path == "" {
		priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
		if err != nil {
			return nil, false, err
		}
		s, err := attest.LoadSigner(priv, nil)
		return s, true, err
	}
	pw := os.Getenv("STRICTGRADE_KEY_PASSWORD")
	if pw == "" {
		pw = os.Getenv("COSIGN_PASSWORD")
	}
	s, err := attest.LoadSignerFile(path, []byte(pw))
	return s, false, err
}

func runGrade(ctx context.Context, args []string, stdio IO) int {
	fs := newFlags("grade", stdio.Stderr)
	taskDir := fs.String("task", "", "task directory (required)")
	subPath := fs.String("submission", "", "submission: a directory or tar file (strict tier), a unified diff file (compat tier); required")
	keyPath := fs.String("key", "", "private key PEM for signing (default: an ephemeral key)")
	out := fs.String("out", "", "write the Sigstore bundle here, the bare DSSE envelope to FILE.dsse.json and the graded bytes to FILE.submission")
	asJSON := fs.Bool("json", false, "print the verdict as JSON instead of a table")
	detail := fs.String("disclosure", "", "how much strict-tier reasons may say: digest (positions and digests only; the default) or detailed (escaped excerpts of the candidate's output, for debugging; a task that asks for digest keeps it)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *taskDir == "" || *subPath == "" || fs.NArg() != 0 {
		fmt.Fprintln(stdio.Stderr, "usage: strictgrade grade --task DIR --submission DIR|TAR [--key FILE] [--out FILE] [--json] [--disclosure digest|detailed]")
		return ExitUsage
	}
	var policy schema.Disclosure
	if *detail != "" {
		p, err := schema.ParseDisclosure(*detail)
		if err != nil {
			return fail(stdio, "grade", ExitUsage, err)
		}
		policy = p
	}
	signer, ephemeral, err := loadSigner(*keyPath)
	if err != nil {
		return fail(stdio, "grade", ExitError, err)
	}
	if isCompatTask(*taskDir) {
		return gradeCompat(ctx, stdio, *taskDir, *subPath, signer, ephemeral, *out, *asJSON)
	}
	t, err := task.Load(ctx, *taskDir)
	if err != nil {
		return fail(stdio, "grade", ExitUsage, err)
	}
	var sub controller.Submission
	st, err := os.Stat(*subPath)
	if err != nil {
		return fail(stdio, "grade", ExitUsage, err)
	}
	if st.IsDir() {
		sub.Dir = *subPath
	} else {
		f, err := os.Open(*subPath)
		if err != nil {
			return fail(stdio, "grade", ExitUsage, err)
		}
		defer f.Close()
		sub.Archive = f
	}
	ctrl, err := controller.New(ctx, controller.Config{
		Signer: signer, Logger: stdio.Log, BuildProgress: stdio.Stderr, Disclosure: policy,
	})
	if err != nil {
		return fail(stdio, "grade", ExitError, err)
	}
	defer ctrl.Close()
	res, gradeErr := ctrl.Grade(ctx, t, sub)
	return report(stdio, res, gradeErr, signer, ephemeral, *out, *asJSON)
}

// report prints a grade's verdict, writes its files and maps it to the
// exit code.
func report(stdio IO, res *controller.Result, gradeErr error, signer *attest.Signer, ephemeral bool, out string, asJSON bool) int {
	if res == nil {
		return fail(stdio, "grade", ExitError, gradeErr)
	}
	if gradeErr != nil {
		fmt.Fprintf(stdio.Stderr, "strictgrade grade: %v\n", gradeErr)
	}
	if out != "" {
		if err := writeOutputs(out, res, signer, ephemeral, stdio.Stderr); err != nil {
			return fail(stdio, "grade", ExitError, err)
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdio.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res.Verdict); err != nil {
			return fail(stdio, "grade", ExitError, err)
		}
	} else {
		printVerdict(stdio.Stdout, res.Verdict)
	}
	if gradeErr != nil && !errors.Is(gradeErr, controller.ErrCouldNotGrade) {
		return ExitError
	}
	return outcomeCode(res.Verdict.Outcome)
}

// isCompatTask reports whether dir holds a compat-tier (repository) task.
func isCompatTask(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "task.json"))
	if err != nil {
		return false
	}
	var head struct {
		Schema string `json:"schema"`
	}
	return json.Unmarshal(data, &head) == nil && head.Schema == compat.SpecSchema
}

// gradeCompat grades a diff file against a compat task.
func gradeCompat(ctx context.Context, stdio IO, taskDir, diffPath string, signer *attest.Signer, ephemeral bool, out string, asJSON bool) int {
	t, err := compat.Load(ctx, taskDir)
	if err != nil {
		return fail(stdio, "grade", ExitUsage, err)
	}
	diff, err := readDiff(diffPath)
	if err != nil {
		return fail(stdio, "grade", ExitUsage, err)
	}
	ctrl, err := controller.New(ctx, controller.Config{Signer: signer, Logger: stdio.Log, BuildProgress: stdio.Stderr})
	if err != nil {
		return fail(stdio, "grade", ExitError, err)
	}
	defer ctrl.Close()
	res, gradeErr := ctrl.GradeCompat(ctx, t, diff, "")
	return report(stdio, res, gradeErr, signer, ephemeral, out, asJSON)
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
		fmt.Fprintln(tw, "CASE\tOUTCOME\tDECIDED BY\tEXIT\tMS\tREASON")
		for _, c := range v.Cases {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", c.ID, c.Outcome, c.DecidedBy, c.Exit, c.DurationMS, c.Reason)
		}
		tw.Flush()
	}
	counts := v.Counts()
	fmt.Fprintf(w, "%d passed, %d failed of %d cases; submission sha256 %s; run %s\n",
		counts[schema.OutcomePass], counts[schema.OutcomeFail], len(v.Cases), v.Submission.SHA256, v.RunID)
}
