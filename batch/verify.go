package batch

import (
	"bufio"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/schema"
)

// ErrNoVerdict is a Check's error for an item that errored without a
// signed verdict: there is nothing to verify.
var ErrNoVerdict = errors.New("no signed verdict (the grade errored before one existed)")

// ErrNotBound is wrapped by a Check's error when the item's bundle
// verifies but its signed verdict is not the record's: another item's,
// another task's, or saying something else than the record.
var ErrNotBound = errors.New("the signed verdict is not this record's")

// Check is one item of a verified run.
type Check struct {
	Record Record
	// Err is nil when the item's bundle, in the item's own directory,
	// verified against the submission file beside it and its signed
	// verdict is the record's (see VerifyRun); ErrNoVerdict for an error
	// without a verdict; else why it did not verify.
	Err error
	// Verdict is the signed verdict, re-validated, when Err is nil and
	// the item has one.
	Verdict *schema.Verdict
}

// Verified reports whether the check passed.
func (c Check) Verified() bool { return c.Err == nil }

// VerifyRun verifies every item results.jsonl in the run directory dir
// lists. An item verifies when its record names the files of its own
// directory (SafeID of its id), its bundle verifies with pub against the
// sha256 of its submission file, and the signed verdict says what the
// record says: the task id and digest, the tier, the outcome and reason
// code, the submission digest and the nonce, which must name the item in
// this run (NamesItem). A record is compared with the signed verdict,
// never the other way round, so an edited results.jsonl cannot point an
// item at another's verdict. An item listed twice, and two records naming
// one bundle or one nonce, fail each. VerifyRun fails only when
// results.jsonl cannot be read or parsed or run.json is missing
// (ErrOldRun) or malformed; each item's answer is its Check.
func VerifyRun(dir string, pub crypto.PublicKey) ([]Check, error) {
	run, err := ReadRunInfo(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var checks []Check
	index := map[string]int{}
	// The first record naming each bundle and each nonce.
	bundles, nonces := map[string]int{}, map[string]int{}
	shared := func(m map[string]int, key, what string, i int) {
		if key == "" {
			return
		}
		j, dup := m[key]
		if !dup {
			m[key] = i
			return
		}
		err := fmt.Errorf("%w: %s backs items %q and %q", ErrNotBound, what, checks[j].Record.Item, checks[i].Record.Item)
		for _, k := range []int{i, j} {
			checks[k].Verdict, checks[k].Err = nil, err
		}
	}
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
		c.Verdict, c.Err = verifyRecord(dir, pub, run, r)
		if i, dup := index[r.Item]; dup {
			checks[i].Verdict = nil
			checks[i].Err = fmt.Errorf("item %q is in %s more than once", r.Item, ResultsFile)
			continue
		}
		i := len(checks)
		index[r.Item] = i
		checks = append(checks, c)
		shared(bundles, r.Bundle, "the bundle "+r.Bundle, i)
		if c.Verdict != nil {
			shared(nonces, c.Verdict.Nonce, "one signed verdict (nonce "+c.Verdict.Nonce+")", i)
		}
	}
	return checks, nil
}

func verifyRecord(dir string, pub crypto.PublicKey, run RunInfo, r Record) (*schema.Verdict, error) {
	if r.Bundle == "" {
		if r.errored() {
			return nil, ErrNoVerdict
		}
		return nil, fmt.Errorf("a %s without a bundle", r.Outcome)
	}
	bundlePath, subPath, verdictPath := itemPaths(r.Item)
	if r.Bundle != bundlePath || r.Submission != subPath || r.Verdict != verdictPath {
		return nil, fmt.Errorf("%w: the record names %s, %s and %s; item %q's files are %s, %s and %s",
			ErrNotBound, r.Bundle, r.Submission, r.Verdict, r.Item, bundlePath, subPath, verdictPath)
	}
	bundle, err := attest.ReadBundleFile(filepath.Join(dir, filepath.FromSlash(r.Bundle)))
	if err != nil {
		return nil, err
	}
	// The submission is hashed as it streams: it may be as large as a
	// task admits, and nothing but its digest is needed.
	sub, err := os.Open(filepath.Join(dir, filepath.FromSlash(r.Submission)))
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	_, err = io.Copy(h, sub)
	sub.Close()
	if err != nil {
		return nil, err
	}
	got := hex.EncodeToString(h.Sum(nil))
	res, err := attest.Verify(bundle, pub, attest.Expect{SubmissionSHA256: got})
	if err != nil {
		return nil, err
	}
	v := res.Verdict
	for _, f := range []struct {
		what, signed, record string
	}{
		{"task", v.Task.ID, r.Task},
		{"task digest", v.Task.Digest, r.TaskDigest},
		{"tier", string(v.Tier), string(r.Tier)},
		{"outcome", string(v.Outcome), string(r.Outcome)},
		{"reason code", v.ReasonCode, r.ReasonCode},
		{"submission sha256", v.Submission.SHA256, r.SubmissionSHA256},
		{"nonce", v.Nonce, r.Nonce},
	} {
		if f.signed != f.record {
			return nil, fmt.Errorf("%w: its %s is %q, the record says %q", ErrNotBound, f.what, f.signed, f.record)
		}
	}
	if !NamesItem(run, r.Item, v.Nonce) {
		return nil, fmt.Errorf("%w: its nonce names another item, or another run", ErrNotBound)
	}
	if err := checkVerdictFile(filepath.Join(dir, filepath.FromSlash(r.Verdict)), v); err != nil {
		return nil, err
	}
	return v, nil
}
