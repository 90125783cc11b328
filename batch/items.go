package batch

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// ErrBadItem is wrapped by every error about an item the caller got wrong:
// a malformed line of the items file, an unknown task, a submission of the
// wrong form for its task's tier. Nothing is graded when Run returns it.
var ErrBadItem = errors.New("batch: bad item")

// MaxLine bounds one line of an items file (a compat item carries its
// whole patch).
const MaxLine = 16 << 20

// Item is one submission to grade.
type Item struct {
	// ID names the item in the run directory and in results.jsonl; it is
	// unique within a run. A compat item's ID is its instance_id unless
	// the line gives an "id".
	ID string
	// Task is the spec id of the task the item is graded against.
	Task string
	// Submission is a strict item's directory or tar file, relative paths
	// resolved against the items file's directory.
	Submission string
	// Patch is a compat item's unified diff (SWE-bench model_patch); nil
	// for a strict item. An empty patch grades the repository's base.
	Patch []byte
	// Model is a compat item's model_name_or_path, recorded as given.
	Model string
	// Line is the item's line in the items file (1-based).
	Line int
}

// Compat reports whether the item is a compat (SWE-bench prediction) item.
func (it Item) Compat() bool { return it.Patch != nil }

// LineError is a malformed line of an items file.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("items line %d: %v", e.Line, e.Err) }

// Unwrap returns ErrBadItem and the cause.
func (e *LineError) Unwrap() []error { return []error{ErrBadItem, e.Err} }

// ReadItems reads the JSONL items file at path (see ParseItems).
func ReadItems(path string) ([]Item, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadItem, err)
	}
	defer f.Close()
	return ParseItems(f, filepath.Dir(path))
}

// ParseItems reads items, one JSON object a line; blank lines are
// skipped. A line is either a compat item in the SWE-bench prediction
// shape, {"instance_id", "model_patch", "model_name_or_path"} (an "id" may
// rename it), whose instance_id names a compat task by its spec id; or a
// strict item, {"id" (optional), "task", "submission"}, whose submission is
// a directory or a tar file, relative to base. The first malformed line
// fails the whole read with a *LineError.
func ParseItems(r io.Reader, base string) ([]Item, error) {
	br := bufio.NewReader(r)
	var items []Item
	seen := map[string]int{}
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err == io.EOF && line == nil {
			break
		}
		if err != nil && err != io.EOF {
			return nil, &LineError{n, err}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		it, perr := parseItem(line, base)
		if perr != nil {
			return nil, &LineError{n, perr}
		}
		it.Line = n
		if prev, dup := seen[it.ID]; dup {
			return nil, &LineError{n, fmt.Errorf("item id %q is already line %d's", it.ID, prev)}
		}
		seen[it.ID] = n
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: no items", ErrBadItem)
	}
	return items, nil
}

// readLine reads one line of at most MaxLine bytes, without its newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("longer than %d bytes", MaxLine)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if len(line) == 0 {
				return nil, io.EOF
			}
			return line, nil
		case err != nil:
			return nil, err
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}

func parseItem(line []byte, base string) (Item, error) {
	var raw struct {
		InstanceID *string `json:"instance_id"`
		ModelPatch *string `json:"model_patch"`
		Model      *string `json:"model_name_or_path"`
		ID         *string `json:"id"`
		Task       *string `json:"task"`
		Submission *string `json:"submission"`
	}
	if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
		return Item{}, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Item{}, err
	}
	var it Item
	switch {
	case raw.InstanceID != nil:
		if raw.Task != nil || raw.Submission != nil {
			return Item{}, errors.New(`a SWE-bench prediction (instance_id) takes no "task" or "submission"`)
		}
		if raw.ModelPatch == nil {
			return Item{}, errors.New(`a SWE-bench prediction needs "model_patch"`)
		}
		if *raw.InstanceID == "" {
			return Item{}, errors.New(`empty "instance_id"`)
		}
		it = Item{ID: *raw.InstanceID, Task: *raw.InstanceID, Patch: []byte(*raw.ModelPatch)}
		if raw.Model != nil {
			it.Model = *raw.Model
		}
	case raw.Task != nil || raw.Submission != nil:
		if raw.ModelPatch != nil || raw.Model != nil {
			return Item{}, errors.New(`a strict item takes no "model_patch" or "model_name_or_path"`)
		}
		if raw.Task == nil || *raw.Task == "" || raw.Submission == nil || *raw.Submission == "" {
			return Item{}, errors.New(`a strict item needs "task" and "submission"`)
		}
		sub := filepath.FromSlash(*raw.Submission)
		if !filepath.IsAbs(sub) {
			sub = filepath.Join(base, sub)
		}
		it = Item{ID: *raw.Task + ":" + filepath.ToSlash(filepath.Clean(*raw.Submission)), Task: *raw.Task, Submission: sub}
	default:
		return Item{}, errors.New(`want {"instance_id", "model_patch", "model_name_or_path"} or {"id", "task", "submission"}`)
	}
	if raw.ID != nil {
		it.ID = *raw.ID
	}
	if err := checkID(it.ID); err != nil {
		return Item{}, err
	}
	return it, nil
}

// checkID accepts an item id: 1 to 256 printable characters.
func checkID(id string) error {
	if id == "" || len(id) > 256 {
		return fmt.Errorf("item id %q: want 1 to 256 characters", id)
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("item id %q holds a control character", id)
		}
	}
	return nil
}

// SafeID is the item's directory name under OUT/items: up to 64 of its
// characters, each of A-Z, a-z, 0-9, '.', '_' and '-' kept (a leading dot
// excepted) and any other made '_', for a reader's eye, then '-' and 32
// hex digits (128 bits) of the sha256 of the whole id. The digest makes
// it an injective function of the id (two ids share a directory only if
// sha256 collides), also on a file system that folds letter case, and no
// id can name another's directory: f7459a3 kept a safe id as it was,
// which could equal another id's hashed name.
func SafeID(id string) string {
	var b strings.Builder
	for i, r := range id {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == '.' && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(id))
	return b.String() + "-" + hex.EncodeToString(sum[:16])
}
