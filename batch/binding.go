package batch

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/schema"
)

// How a verdict is bound to its item. A run directory holds what anyone
// who can write to it may have changed, so nothing in it is believed that
// the signature does not cover: each grade's nonce is derived from the
// run's id and the item's id (ItemNonce), so the signed verdict names the
// item it was made for, and each item's files live in the one directory
// its id maps to (SafeID, injective).

// RunFile is OUT/run.json, the run's identity (RunInfo).
const RunFile = "run.json"

// RunSchema is RunInfo.Schema.
const RunSchema = "strictgrade.run/v1"

// ErrOldRun: the run directory was made by a strictgrade before verdicts
// were bound to their items (it has results.jsonl or items/ but no
// run.json). Its verdicts do not name their items, so they can be neither
// resumed nor verified item by item; grade into a new directory.
var ErrOldRun = errors.New("batch: the run directory predates item-bound verdicts (no " + RunFile + ")")

// RunInfo is OUT/run.json.
type RunInfo struct {
	Schema string `json:"schema"`
	// ID is 32 random bytes, base64url: every nonce of the run is
	// derived from it (ItemNonce), so that no verdict of another run,
	// signed with the same key, passes for one of this run's.
	ID string `json:"id"`
}

var runIDForm = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// ReadRunInfo reads dir's run.json: ErrOldRun when dir holds a run
// without one, an error wrapping os.ErrNotExist when it holds no run.
func ReadRunInfo(dir string) (RunInfo, error) {
	data, err := readBounded(filepath.Join(dir, RunFile), 4<<10)
	if errors.Is(err, os.ErrNotExist) {
		for _, f := range []string{ResultsFile, ItemsDir} {
			if _, serr := os.Stat(filepath.Join(dir, f)); serr == nil {
				return RunInfo{}, fmt.Errorf("%w: %s", ErrOldRun, dir)
			}
		}
		return RunInfo{}, err
	}
	if err != nil {
		return RunInfo{}, err
	}
	var ri RunInfo
	if err := json.Unmarshal(data, &ri); err != nil || ri.Schema != RunSchema || !runIDForm.MatchString(ri.ID) {
		return RunInfo{}, fmt.Errorf("%s: not a %s document", filepath.Join(dir, RunFile), RunSchema)
	}
	return ri, nil
}

// newRun writes a new run.json into dir.
func newRun(dir string) (RunInfo, error) {
	b := make([]byte, 32)
	rand.Read(b)
	ri := RunInfo{Schema: RunSchema, ID: base64.RawURLEncoding.EncodeToString(b)}
	data, _ := json.MarshalIndent(ri, "", "  ")
	return ri, WriteFileAtomic(filepath.Join(dir, RunFile), append(data, '\n'))
}

// itemTagLen is how many characters of a nonce name the item.
const itemTagLen = 32

// itemTag is the part of a nonce that names the item: 24 bytes of
// sha256 over the run id and the item id, base64url.
func itemTag(run, item string) string {
	h := sha256.New()
	h.Write([]byte("strictgrade batch item nonce\x00"))
	h.Write([]byte(run))
	h.Write([]byte{0})
	h.Write([]byte(item))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:24])
}

// ItemNonce returns a fresh nonce for a grade of item in run: 32
// characters naming the item (24 bytes of sha256 over the run's id and
// the item's id), then 32 fresh random ones (24 bytes), so that the
// signed verdict names the item it was made for and no two grades share
// a nonce.
func ItemNonce(run RunInfo, item string) string {
	b := make([]byte, 24)
	rand.Read(b)
	return itemTag(run.ID, item) + base64.RawURLEncoding.EncodeToString(b)
}

// NamesItem reports whether nonce is one ItemNonce made for item in run.
func NamesItem(run RunInfo, item, nonce string) bool {
	return len(nonce) == 2*itemTagLen && nonce[:itemTagLen] == itemTag(run.ID, item)
}

// itemPaths are an item's files, relative to the run directory, in
// results.jsonl's form.
func itemPaths(item string) (bundle, submission, verdict string) {
	rel := ItemsDir + "/" + SafeID(item) + "/"
	return rel + BundleFile, rel + SubmissionFile, rel + VerdictFile
}

// checkVerdictFile checks that the verdict file at path (verdict.json, the
// readable copy written beside the bundle) says what the signed verdict v
// says, so that no one reading it is told something else.
func checkVerdictFile(path string, v *schema.Verdict) error {
	data, err := readBounded(path, attest.MaxInputSize)
	if err != nil {
		return err
	}
	var file schema.Verdict
	if err := json.Unmarshal(data, &file); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotBound, VerdictFile, err)
	}
	a, err1 := json.Marshal(&file)
	b, err2 := json.Marshal(v)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return fmt.Errorf("%w: %s is not the signed verdict", ErrNotBound, VerdictFile)
	}
	return nil
}

// readBounded reads the file at path, refusing one longer than limit
// bytes: what a run directory holds is read as hostile.
func readBounded(path string, limit int64) ([]byte, error) {
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
		return nil, fmt.Errorf("%s is longer than %d bytes", path, limit)
	}
	return data, nil
}
