package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/schema"
)

// A compat task's baseline (its hidden tests run at the base commit) is
// what makes a PASS a flip: FAIL at the base, PASS with the submission.
// task check computes it; grade and run use what it recorded, so that
// their verdicts carry baseline_outcome and flipped.
//
// The record lives in a cache directory, one file per task digest:
// $STRICTGRADE_CACHE_DIR/baselines/<digest>.json, or under the user's
// cache directory (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache on Linux)
// in strictgrade/baselines/. Not next to the task: the task digest covers
// every file of the task directory, so a record written there would change
// the digest it is keyed by, and a task directory may be read-only or
// shared. A record is used only for the task digest it names and the
// runtime image it was computed with; any other task or image is graded
// without a baseline, as before.

// baselineRecord is one recorded baseline.
type baselineRecord struct {
	TaskID       string         `json:"task_id"`
	TaskDigest   string         `json:"task_digest"`
	RuntimeImage string         `json:"runtime_image"`
	Outcome      schema.Outcome `json:"baseline_outcome"`
	// RunID is the run id of the baseline's verdict.
	RunID    string    `json:"run_id"`
	Recorded time.Time `json:"recorded"`
}

// cacheEnv names the cache directory, overriding the user's.
const cacheEnv = "STRICTGRADE_CACHE_DIR"

// maxBaselineRecord bounds a record read back.
const maxBaselineRecord = 64 << 10

// baselineDir returns the directory of the baseline records.
func baselineDir() (string, error) {
	dir := os.Getenv(cacheEnv)
	if dir == "" {
		user, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory for baselines (set %s): %w", cacheEnv, err)
		}
		dir = filepath.Join(user, "strictgrade")
	}
	return filepath.Join(dir, "baselines"), nil
}

// baselinePath returns the record file of a task digest, which must be a
// sha256 in hex (it names a file).
func baselinePath(digest string) (string, error) {
	if len(digest) != 64 || !isHex(digest) {
		return "", fmt.Errorf("task digest %q is not a sha256", digest)
	}
	dir, err := baselineDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, digest+".json"), nil
}

func isHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// recordBaseline records the baseline verdict v of task t, computed with
// the runtime image, and returns the file written. Only a FAIL (fit) or
// QUARANTINED baseline is a fact about the task; an ERROR records
// nothing.
func recordBaseline(t *compat.Task, v *schema.Verdict, runtimeImage string) (string, error) {
	if v.Outcome != schema.OutcomeFail && v.Outcome != schema.OutcomeQuarantined {
		return "", nil
	}
	if v.Task.Digest != t.Digest {
		return "", fmt.Errorf("the baseline verdict is of task digest %s, not %s", v.Task.Digest, t.Digest)
	}
	p, err := baselinePath(t.Digest)
	if err != nil {
		return "", err
	}
	rec := baselineRecord{TaskID: t.Spec.ID, TaskDigest: t.Digest, RuntimeImage: runtimeImage, Outcome: v.Outcome, RunID: v.RunID, Recorded: time.Now().UTC()}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".baseline-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return p, os.Rename(tmp.Name(), p)
}

// lookupBaseline returns the baseline recorded for task t with the
// runtime image, or "" and why there is none. A record that is unreadable
// or names another digest or image is not used.
func lookupBaseline(t *compat.Task, runtimeImage string) (schema.Outcome, string) {
	p, err := baselinePath(t.Digest)
	if err != nil {
		return "", err.Error()
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Sprintf("no baseline is recorded for task %s (digest %s): strictgrade task check records one", t.Spec.ID, t.Digest)
	}
	if err != nil {
		return "", err.Error()
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBaselineRecord+1))
	if err != nil {
		return "", err.Error()
	}
	var rec baselineRecord
	if len(data) > maxBaselineRecord || json.Unmarshal(data, &rec) != nil {
		return "", fmt.Sprintf("%s is not a baseline record: strictgrade task check writes it again", p)
	}
	switch {
	case rec.TaskDigest != t.Digest:
		return "", fmt.Sprintf("%s is of task digest %s, not %s", p, rec.TaskDigest, t.Digest)
	case rec.RuntimeImage != runtimeImage:
		return "", fmt.Sprintf("the baseline of task %s was recorded with runtime image %s, not %s: strictgrade task check records it again", t.Spec.ID, rec.RuntimeImage, runtimeImage)
	case rec.Outcome != schema.OutcomeFail && rec.Outcome != schema.OutcomeQuarantined:
		return "", fmt.Sprintf("%s records baseline outcome %q", p, rec.Outcome)
	}
	return rec.Outcome, ""
}
