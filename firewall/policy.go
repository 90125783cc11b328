package firewall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Default limits, applied to every Policy field left at zero.
const (
	// DefaultMaxEntries bounds the entries read from the input, and the
	// distinct paths (entries plus implied parent directories).
	DefaultMaxEntries = 10_000
	// DefaultMaxFileBytes bounds one file's size.
	DefaultMaxFileBytes int64 = 64 << 20
	// DefaultMaxTotalBytes bounds the sum of all file sizes.
	DefaultMaxTotalBytes int64 = 256 << 20
	// DefaultMaxInputBytes bounds the raw input: the default total plus room
	// for the headers, extended headers and padding of DefaultMaxEntries
	// entries and the trailer.
	DefaultMaxInputBytes int64 = 320 << 20
	// DefaultMaxNameLen bounds a canonical path, in bytes.
	DefaultMaxNameLen = 1024
	// DefaultMaxComponentLen bounds one path component, in bytes.
	DefaultMaxComponentLen = 255
	// DefaultMaxDepth bounds the number of components of a path.
	DefaultMaxDepth = 32
)

// Hard ceilings a Policy may not exceed.
const (
	// CeilingMaxFileBytes is the largest MaxFileBytes: the largest size an
	// 11-digit octal USTAR size field holds, so canonical headers never need a
	// PAX size record.
	CeilingMaxFileBytes int64 = 1<<33 - 1
	// CeilingMaxNameLen is the largest MaxNameLen (Linux PATH_MAX).
	CeilingMaxNameLen = 4096
	// CeilingMaxComponentLen is the largest MaxComponentLen (Linux NAME_MAX).
	CeilingMaxComponentLen = 255
	// CeilingMaxDepth is the largest MaxDepth.
	CeilingMaxDepth = 1024
	// CeilingMaxEntries is the largest MaxEntries.
	CeilingMaxEntries = 10_000_000

	maxPatterns = 1024
)

// DenyAction says what happens to an entry whose path matches the denylist.
type DenyAction int

const (
	// DenyReject rejects the whole archive with ErrDenied. It is the zero
	// value.
	DenyReject DenyAction = iota
	// DenyDrop leaves the entry out of the canonical archive and records it
	// in Manifest.Dropped.
	DenyDrop
)

// String returns "reject" or "drop".
func (a DenyAction) String() string {
	switch a {
	case DenyReject:
		return "reject"
	case DenyDrop:
		return "drop"
	}
	return fmt.Sprintf("DenyAction(%d)", int(a))
}

// MarshalText encodes the action as "reject" or "drop".
func (a DenyAction) MarshalText() ([]byte, error) {
	switch a {
	case DenyReject, DenyDrop:
		return []byte(a.String()), nil
	}
	return nil, fmt.Errorf("firewall: unknown deny action %d", int(a))
}

// UnmarshalText decodes "reject" or "drop".
func (a *DenyAction) UnmarshalText(b []byte) error {
	switch string(b) {
	case "reject":
		*a = DenyReject
	case "drop":
		*a = DenyDrop
	default:
		return fmt.Errorf("firewall: unknown deny action %q (want \"reject\" or \"drop\")", b)
	}
	return nil
}

// Policy configures the firewall. The zero value is the strict default: every
// zero limit takes its Default value, there is no denylist, and a deny match
// (if patterns are given) rejects the archive. Negative limits are invalid.
//
// The time budget is not a field: it is the deadline of the context passed
// to Filter or Extract.
//
// Deny holds glob patterns matched against canonical paths:
//
//   - A pattern is split on "/" into segments. Each segment is matched
//     against one path component with path.Match syntax ("*", "?", "[...]",
//     "\\" escapes); "*" never crosses a "/".
//   - A segment "**" matches zero or more whole components.
//   - A pattern with no "/" other than a trailing one matches a component at
//     any depth, as if it started with "**/": "conftest.py" matches
//     "conftest.py" and "a/b/conftest.py"; "*.pth" matches every .pth file.
//   - A pattern with a "/" elsewhere is anchored at the archive root; a
//     leading "/" is allowed and only marks the anchoring: "src/gen/*.py".
//   - A trailing "/" restricts the pattern to directories: ".git/" matches
//     every directory named .git but not a file named .git.
//   - A matching directory denies everything below it.
//   - Matching is case-insensitive: pattern and path are both case-folded
//     (and NFC-normalised), the same equivalence used to detect collisions.
//
// Denied entries are still validated like every other entry (type, name,
// size, duplicates) and still count against the limits.
type Policy struct {
	MaxEntries      int        `json:"max_entries,omitempty"`
	MaxFileBytes    int64      `json:"max_file_bytes,omitempty"`
	MaxTotalBytes   int64      `json:"max_total_bytes,omitempty"`
	MaxInputBytes   int64      `json:"max_input_bytes,omitempty"`
	MaxNameLen      int        `json:"max_name_len,omitempty"`
	MaxComponentLen int        `json:"max_component_len,omitempty"`
	MaxDepth        int        `json:"max_depth,omitempty"`
	Deny            []string   `json:"deny,omitempty"`
	DenyAction      DenyAction `json:"deny_action,omitempty"`
}

// ParsePolicy decodes the JSON form of a Policy (the field names are the
// snake_case json tags of Policy) and validates it. Unknown fields, trailing
// data and invalid values are errors.
func ParsePolicy(data []byte) (Policy, error) {
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("firewall: policy: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Policy{}, errors.New("firewall: policy: trailing data after the JSON object")
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Validate reports whether the policy is usable: no negative limit, no limit
// above its ceiling, a known deny action and well-formed deny patterns.
func (p Policy) Validate() error {
	_, err := p.resolve()
	return err
}

// limits is a Policy with the defaults applied and the patterns compiled.
type limits struct {
	maxEntries      int
	maxFileBytes    int64
	maxTotalBytes   int64
	maxInputBytes   int64
	maxNameLen      int
	maxComponentLen int
	maxDepth        int
	deny            []pattern
	denyAction      DenyAction
}

func (p Policy) resolve() (*limits, error) {
	l := &limits{denyAction: p.DenyAction}
	var problems []string
	pickInt := func(name string, v, def, ceil int) int {
		switch {
		case v < 0:
			problems = append(problems, name+" is negative")
		case v > ceil:
			problems = append(problems, fmt.Sprintf("%s %d is above the ceiling %d", name, v, ceil))
		case v == 0:
			return def
		}
		return v
	}
	pick64 := func(name string, v, def, ceil int64) int64 {
		switch {
		case v < 0:
			problems = append(problems, name+" is negative")
		case v > ceil:
			problems = append(problems, fmt.Sprintf("%s %d is above the ceiling %d", name, v, ceil))
		case v == 0:
			return def
		}
		return v
	}
	const noCeiling = 1<<63 - 1
	l.maxEntries = pickInt("max_entries", p.MaxEntries, DefaultMaxEntries, CeilingMaxEntries)
	l.maxFileBytes = pick64("max_file_bytes", p.MaxFileBytes, DefaultMaxFileBytes, CeilingMaxFileBytes)
	l.maxTotalBytes = pick64("max_total_bytes", p.MaxTotalBytes, DefaultMaxTotalBytes, noCeiling)
	l.maxInputBytes = pick64("max_input_bytes", p.MaxInputBytes, DefaultMaxInputBytes, noCeiling)
	l.maxNameLen = pickInt("max_name_len", p.MaxNameLen, DefaultMaxNameLen, CeilingMaxNameLen)
	l.maxComponentLen = pickInt("max_component_len", p.MaxComponentLen, DefaultMaxComponentLen, CeilingMaxComponentLen)
	l.maxDepth = pickInt("max_depth", p.MaxDepth, DefaultMaxDepth, CeilingMaxDepth)
	if p.DenyAction != DenyReject && p.DenyAction != DenyDrop {
		problems = append(problems, fmt.Sprintf("unknown deny action %d", int(p.DenyAction)))
	}
	if len(p.Deny) > maxPatterns {
		problems = append(problems, fmt.Sprintf("more than %d deny patterns", maxPatterns))
	}
	var f folder
	for _, s := range p.Deny {
		pat, why := compilePattern(s, &f)
		if why != "" {
			problems = append(problems, "deny pattern "+quote(s)+": "+why)
			continue
		}
		l.deny = append(l.deny, pat)
	}
	if len(problems) > 0 {
		return nil, errors.New("firewall: policy: " + strings.Join(problems, "; "))
	}
	return l, nil
}
