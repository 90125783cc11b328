package swebench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/compat/diffgate"
	"github.com/strictgrade/strictgrade/schema"
)

// ErrRefused is wrapped by every error that says an instance cannot be
// made into a fit compat task: the instance (or the clone it names) is at
// fault, not the machine.
var ErrRefused = errors.New("swebench: instance refused")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRefused}, args...)...)
}

// Bounds on an instance.
const (
	// MaxInstanceBytes bounds the JSON document ParseInstance reads.
	MaxInstanceBytes = 32 << 20
	// maxStatementBytes is compat's bound on a description.
	maxStatementBytes = 1 << 20
)

// Instance is one SWE-bench task instance, parsed and checked.
type Instance struct {
	Repo             string
	InstanceID       string
	BaseCommit       string
	Patch            string
	TestPatch        string
	ProblemStatement string
	// FailToPass are the hidden tests' node ids, PassToPass the existing
	// suite's, in the instance's order.
	FailToPass []string
	PassToPass []string
	// Ignored lists, sorted, the instance's fields that are neither used
	// nor known to be informational.
	Ignored []string
}

// Field names of the SWE-bench format.
const (
	fieldRepo       = "repo"
	fieldID         = "instance_id"
	fieldBase       = "base_commit"
	fieldPatch      = "patch"
	fieldTestPatch  = "test_patch"
	fieldStatement  = "problem_statement"
	fieldFailToPass = "FAIL_TO_PASS"
	fieldPassToPass = "PASS_TO_PASS"
)

// informational are SWE-bench fields an import does not need.
var informational = []string{"hints_text", "created_at", "version", "environment_setup_commit"}

var (
	repoPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+$`)
	commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// ParseInstance parses one instance: a strict JSON object (no duplicate
// keys, at most MaxInstanceBytes) with every required field of the right
// type and shape. Every problem found is reported in one error wrapping
// ErrRefused.
func ParseInstance(data []byte) (*Instance, error) {
	if err := schema.CheckJSON(data, MaxInstanceBytes); err != nil {
		return nil, refused("the instance is not strict JSON: %v", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return nil, refused("the instance is not a JSON object")
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	var missing []string
	for _, f := range []string{fieldRepo, fieldID, fieldBase, fieldPatch, fieldTestPatch, fieldStatement, fieldFailToPass, fieldPassToPass} {
		if _, ok := fields[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		bad("missing required field(s): %s", strings.Join(missing, ", "))
	}
	str := func(name string) string {
		raw, ok := fields[name]
		if !ok {
			return ""
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			bad("%s must be a string", name)
			return ""
		}
		if s == "" {
			bad("%s is empty", name)
		}
		return s
	}
	in := &Instance{
		Repo: str(fieldRepo), InstanceID: str(fieldID), BaseCommit: str(fieldBase),
		Patch: str(fieldPatch), TestPatch: str(fieldTestPatch), ProblemStatement: str(fieldStatement),
	}
	if in.Repo != "" && !repoPattern.MatchString(in.Repo) {
		bad("repo %q must be of the form owner/name", clip(in.Repo))
	}
	if in.InstanceID != "" {
		if err := compat.CheckID(in.InstanceID); err != nil {
			bad("instance_id: %v", err)
		}
	}
	if in.BaseCommit != "" && !commitPattern.MatchString(in.BaseCommit) {
		bad("base_commit %q must be a full commit id (40 lowercase hex digits)", clip(in.BaseCommit))
	}
	for _, p := range []struct{ name, text string }{{fieldPatch, in.Patch}, {fieldTestPatch, in.TestPatch}} {
		if len(p.text) > diffgate.MaxDiffBytes {
			bad("%s is %d bytes, more than the %d a compat task accepts", p.name, len(p.text), diffgate.MaxDiffBytes)
		}
	}
	if len(in.ProblemStatement) > maxStatementBytes {
		bad("problem_statement is %d bytes, more than %d", len(in.ProblemStatement), maxStatementBytes)
	}
	var err error
	if raw, ok := fields[fieldFailToPass]; ok {
		if in.FailToPass, err = idList(raw); err != nil {
			bad("%s: %v", fieldFailToPass, err)
		} else if len(in.FailToPass) == 0 {
			bad("%s is empty: an instance needs at least one test the fix makes pass", fieldFailToPass)
		} else if err := checkIDs(in.FailToPass); err != nil {
			bad("%s: %v", fieldFailToPass, err)
		}
	}
	if raw, ok := fields[fieldPassToPass]; ok {
		if in.PassToPass, err = idList(raw); err != nil {
			bad("%s: %v", fieldPassToPass, err)
		} else if err := checkIDs(in.PassToPass); err != nil {
			bad("%s: %v", fieldPassToPass, err)
		}
	}
	for _, id := range in.FailToPass {
		if slices.Contains(in.PassToPass, id) {
			bad("%s is in both FAIL_TO_PASS and PASS_TO_PASS", clip(id))
			break
		}
	}
	for name := range fields {
		if !slices.Contains([]string{fieldRepo, fieldID, fieldBase, fieldPatch, fieldTestPatch, fieldStatement, fieldFailToPass, fieldPassToPass}, name) &&
			!slices.Contains(informational, name) {
			in.Ignored = append(in.Ignored, name)
		}
	}
	slices.Sort(in.Ignored)
	if len(problems) > 0 {
		return nil, refused("%s", strings.Join(problems, "; "))
	}
	return in, nil
}

// idList decodes a list of test ids: a JSON array of strings, or a string
// holding one.
func idList(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errors.New("must be an array of strings or a string holding one")
		}
		if err := schema.CheckJSON([]byte(s), MaxInstanceBytes); err != nil {
			return nil, fmt.Errorf("the string does not hold strict JSON: %v", err)
		}
		raw = []byte(s)
	}
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil || ids == nil {
		return nil, errors.New("must be an array of strings or a string holding one")
	}
	return ids, nil
}

// checkIDs checks a suite's ids as compat.Load will, and says what it
// means when some id is not a pytest node id at all.
func checkIDs(ids []string) error {
	err := compat.CheckTestIDs(ids)
	if err == nil {
		return nil
	}
	for _, id := range ids {
		if file, _, ok := strings.Cut(id, "::"); !ok || !strings.HasSuffix(file, ".py") {
			return fmt.Errorf("%w (only instances whose tests are pytest node ids, path/to/test_x.py::test_name, can be imported)", err)
		}
	}
	return err
}

// clip cuts a value quoted in an error.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
