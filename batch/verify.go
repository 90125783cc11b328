package batch

import (
	"bufio"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/schema"
)

// ErrNoVerdict is a Check's error for an item that errored without a
// signed verdict: there is nothing to verify.
var ErrNoVerdict = errors.New("no signed verdict (the grade errored before one existed)")

// Check is one item of a verified run.
type Check struct {
	Record Record
	// Err is nil when the item's bundle verified against its submission
	// bytes, tier, task digest and nonce, and its verdict has the
	// recorded outcome; ErrNoVerdict for an error without a verdict;
	// else why it did not verify.
	Err error
	// Verdict is the signed verdict, re-validated, when Err is nil and
	// the item has one.
	Verdict *schema.Verdict
}

// Verified reports whether the check passed.
func (c Check) Verified() bool { return c.Err == nil }

// VerifyRun verifies every item results.jsonl in the run directory dir
// lists: its bundle with pub against the sha256 of its submission file,
// and the tier, task digest and nonce recorded. It fails only when
// results.jsonl cannot be read or parsed; each item's answer is its
// Check.
func VerifyRun(dir string, pub crypto.PublicKey) ([]Check, error) {
	f, err := os.Open(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var checks []Check
	index := map[string]int{}
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err != nil {
			break
		}
		if strings.TrimSpace(string(line)) == "" {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil || r.Item == "" {
			return nil, fmt.Errorf("%s line %d: not a result record", ResultsFile, n)
		}
		c := Check{Record: r}
		c.Verdict, c.Err = verifyRecord(dir, pub, r)
		if i, dup := index[r.Item]; dup {
			checks[i].Verdict = nil
			checks[i].Err = fmt.Errorf("item %q is in %s more than once", r.Item, ResultsFile)
			continue
		}
		index[r.Item] = len(checks)
		checks = append(checks, c)
	}
	return checks, nil
}

func verifyRecord(dir string, pub crypto.PublicKey, r Record) (*schema.Verdict, error) {
	if r.Bundle == "" {
		if r.errored() {
			return nil, ErrNoVerdict
		}
		return nil, fmt.Errorf("a %s without a bundle", r.Outcome)
	}
	for _, p := range []string{r.Bundle, r.Submission} {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return nil, fmt.Errorf("%q is not a path inside the run directory", p)
		}
	}
	bundle, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(r.Bundle)))
	if err != nil {
		return nil, err
	}
	sub, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(r.Submission)))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(sub)
	got := hex.EncodeToString(sum[:])
	res, err := attest.Verify(bundle, pub, attest.Expect{SubmissionSHA256: got, TaskDigest: r.TaskDigest, Tier: r.Tier, Nonce: r.Nonce})
	if err != nil {
		return nil, err
	}
	switch v := res.Verdict; {
	case r.TaskDigest == "" || r.Tier == "":
		return nil, errors.New("the record names no task digest or tier")
	case v.Outcome != r.Outcome:
		return nil, fmt.Errorf("the signed verdict is %s, the record says %s", v.Outcome, r.Outcome)
	case r.SubmissionSHA256 != "" && r.SubmissionSHA256 != got:
		return nil, fmt.Errorf("the submission's sha256 is %s, the record says %s", got, r.SubmissionSHA256)
	}
	return res.Verdict, nil
}
