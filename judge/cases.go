package judge

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/schema"
)

// Cases is a task's hidden cases: hidden/cases.json. It lives in the
// task's hidden directory, which only the judge container sees whole.
type Cases struct {
	// Compare is the default comparator. When omitted it is json for
	// function tasks, lines for command tasks and exact for data tasks;
	// LoadCases fills it in.
	Compare Comparator `json:"compare"`
	Cases   []Case     `json:"cases"`
}

// Case is one hidden case. Which fields a case may and must have depends on
// the task kind:
//
//   - function: args (a JSON array of positional arguments) and expected
//     (the JSON value the callable must return); compared with json.
//     A case a checker decides may omit expected: the checker then gets
//     none.
//   - command: argv and stdin (both optional) and at least one of
//     expected_stdout and expected_exit (0 when omitted).
//   - data: expected_files (at least one), input_files and expected_exit
//     (optional).
type Case struct {
	// ID names the case in the verdict: 1 to 64 of [A-Za-z0-9._-], unique.
	// A verdict quotes it under every disclosure policy.
	ID string `json:"id"`

	// Args is a JSON array of positional arguments (function).
	Args json.RawMessage `json:"args,omitempty"`
	// Expected is the value the callable must return (function).
	Expected json.RawMessage `json:"expected,omitempty"`

	// Argv are the arguments after the executable (command).
	Argv []string `json:"argv,omitempty"`
	// Stdin is the standard input (command).
	Stdin string `json:"stdin,omitempty"`
	// ExpectedStdout is the standard output the program must print
	// (command); nil means stdout is not compared.
	ExpectedStdout *string `json:"expected_stdout,omitempty"`
	// ExpectedExit is the exit status the program must end with (command,
	// data); nil means 0.
	ExpectedExit *int `json:"expected_exit,omitempty"`

	// InputFiles maps the name of an input file the candidate reads to a
	// path relative to the hidden directory holding its content (data).
	InputFiles map[string]string `json:"input_files,omitempty"`
	// ExpectedFiles maps the name of an output file the candidate must
	// write to a path relative to the hidden directory holding its
	// expected content (data). Other output files are ignored.
	ExpectedFiles map[string]string `json:"expected_files,omitempty"`

	// Compare overrides the default comparator for this case.
	Compare *Comparator `json:"compare,omitempty"`
}

// WantExit returns the exit status the case expects.
func (c Case) WantExit() int {
	if c.ExpectedExit != nil {
		return *c.ExpectedExit
	}
	return 0
}

// Comparator returns the comparator of case c: its own, or the default.
func (cs *Cases) Comparator(c Case) Comparator {
	if c.Compare != nil {
		return *c.Compare
	}
	return cs.Compare
}

// DefaultComparator returns the comparator a task kind uses when
// cases.json names none.
func DefaultComparator(kind schema.TaskKind) Comparator {
	switch kind {
	case schema.KindFunction:
		return Comparator{Kind: KindJSON}
	case schema.KindCommand:
		return Comparator{Kind: KindLines}
	}
	return Comparator{Kind: KindExact}
}

// caseFields lists, per kind, the fields a case may have beyond id and
// compare.
var caseFields = map[schema.TaskKind][]string{
	schema.KindFunction: {"args", "expected"},
	schema.KindCommand:  {"argv", "stdin", "expected_stdout", "expected_exit"},
	schema.KindData:     {"input_files", "expected_files", "expected_exit"},
}

// LoadCases parses hidden/cases.json for a task of the given kind. It is
// strict: duplicate or unknown keys (compared exactly, not ignoring case),
// trailing data, fields that do not belong to the kind, invalid or
// duplicate ids, unusable comparators and unsafe file names are refused
// with an error wrapping ErrCases that names the case.
func LoadCases(data []byte, kind schema.TaskKind) (*Cases, error) {
	allowed, ok := caseFields[kind]
	if !ok {
		return nil, fmt.Errorf("%w: task kind %q has no hidden cases (want function, command or data)", ErrCases, kind)
	}
	var top struct {
		Compare json.RawMessage   `json:"compare"`
		Cases   []json.RawMessage `json:"cases"`
	}
	tree, err := decodeStrict(data, &top)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCases, err)
	}
	obj, _ := tree.(map[string]any)
	if _, ok := obj["cases"]; !ok {
		return nil, fmt.Errorf("%w: the cases field is missing", ErrCases)
	}
	cs := &Cases{Compare: DefaultComparator(kind)}
	if len(top.Compare) > 0 {
		var c Comparator
		if _, err := decodeStrict(top.Compare, &c); err != nil {
			return nil, fmt.Errorf("%w: compare: %v", ErrCases, err)
		}
		if c != (Comparator{}) {
			if err := checkComparator(c, kind); err != nil {
				return nil, fmt.Errorf("%w: compare: %v", ErrCases, err)
			}
			cs.Compare = c
		}
	}
	switch n := len(top.Cases); {
	case n == 0:
		return nil, fmt.Errorf("%w: there are no cases", ErrCases)
	case n > MaxCases:
		return nil, fmt.Errorf("%w: %d cases, more than the limit of %d", ErrCases, n, MaxCases)
	}
	cs.Cases = make([]Case, len(top.Cases))
	seen := make(map[string]int, len(top.Cases))
	rawCases, _ := obj["cases"].([]any)
	for i, raw := range top.Cases {
		c := &cs.Cases[i]
		fields, ok := rawCases[i].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: cases[%d]: not an object", ErrCases, i)
		}
		if _, err := decodeStrict(raw, c); err != nil {
			return nil, fmt.Errorf("%w: cases[%d]: %v", ErrCases, i, err)
		}
		if err := checkID(c.ID); err != nil {
			return nil, fmt.Errorf("%w: cases[%d]: id: %v", ErrCases, i, err)
		}
		if j, dup := seen[c.ID]; dup {
			return nil, fmt.Errorf("%w: cases[%d] (id %q): id already used by cases[%d]", ErrCases, i, c.ID, j)
		}
		seen[c.ID] = i
		if err := checkCase(cs, c, fields, kind, allowed); err != nil {
			return nil, fmt.Errorf("%w: cases[%d] (id %q): %v", ErrCases, i, c.ID, err)
		}
	}
	return cs, nil
}

// checkComparator validates a comparator for a task kind.
func checkComparator(c Comparator, kind schema.TaskKind) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if kind == schema.KindFunction && c.Kind != KindJSON && c.Kind != KindChecker {
		return fmt.Errorf("function tasks compare return values with kind json or checker, not %s", c.Kind)
	}
	if kind == schema.KindData && c.Kind == KindChecker {
		return fmt.Errorf("the checker comparator applies to function and command tasks, not data tasks")
	}
	return nil
}

// checkID enforces [A-Za-z0-9._-]{1,64} (maxIDLen).
func checkID(id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("%s must be 1 to %d characters", quoteString(id), maxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%s may only hold A-Z, a-z, 0-9, '.', '_' and '-'", quoteString(id))
		}
	}
	return nil
}

// checkCase checks the fields of one decoded case against its kind.
func checkCase(cs *Cases, c *Case, fields map[string]any, kind schema.TaskKind, allowed []string) error {
	for _, k := range sortedKeys(fields) {
		if k != "id" && k != "compare" && !contains(allowed, k) {
			return fmt.Errorf("field %s does not apply to %s tasks (allowed: id, compare, %s)", k, kind, strings.Join(allowed, ", "))
		}
	}
	if c.Compare != nil {
		if *c.Compare == (Comparator{}) {
			return fmt.Errorf("compare: kind is missing")
		}
		if err := checkComparator(*c.Compare, kind); err != nil {
			return fmt.Errorf("compare: %v", err)
		}
	}
	has := func(k string) bool { _, ok := fields[k]; return ok }
	if c.ExpectedExit != nil && (*c.ExpectedExit < 0 || *c.ExpectedExit > 255) {
		return fmt.Errorf("expected_exit %d is not in 0..255", *c.ExpectedExit)
	}
	switch kind {
	case schema.KindFunction:
		// A checker may decide a case without an expected value (any
		// valid answer will do); every other comparator needs one.
		if !has("args") || (!has("expected") && cs.Comparator(*c).Kind != KindChecker) {
			return fmt.Errorf("function cases need args and expected (expected may be omitted only when a checker decides the case)")
		}
		if _, ok := fields["args"].([]any); !ok {
			return fmt.Errorf("args must be a JSON array of positional arguments")
		}
	case schema.KindCommand:
		if !has("expected_stdout") && !has("expected_exit") {
			return fmt.Errorf("command cases need expected_stdout, expected_exit or both")
		}
		if has("expected_stdout") && c.ExpectedStdout == nil {
			return fmt.Errorf("expected_stdout must be a string")
		}
		for i, a := range c.Argv {
			if strings.IndexByte(a, 0) >= 0 {
				return fmt.Errorf("argv[%d] holds a NUL byte", i)
			}
		}
		if c.ExpectedStdout != nil {
			if err := checkExpected(cs.Comparator(*c), []byte(*c.ExpectedStdout)); err != nil {
				return fmt.Errorf("expected_stdout: %v", err)
			}
		}
	case schema.KindData:
		if len(c.ExpectedFiles) == 0 {
			return fmt.Errorf("data cases need at least one expected_files entry")
		}
		for _, m := range []struct {
			field string
			files map[string]string
		}{{"input_files", c.InputFiles}, {"expected_files", c.ExpectedFiles}} {
			for _, name := range sortedKeys(m.files) {
				if err := CheckRelPath(name); err != nil {
					return fmt.Errorf("%s: name %v", m.field, err)
				}
				if err := CheckRelPath(m.files[name]); err != nil {
					return fmt.Errorf("%s[%s]: path %v", m.field, quoteString(name), err)
				}
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// CheckRelPath reports whether p is a safe relative file name: valid
// UTF-8 without control characters or backslashes, at most 1024 bytes,
// and a clean slash-separated path (fs.ValidPath) other than ".".
func CheckRelPath(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("%s is empty", quoteString(p))
	case len(p) > 1024:
		return fmt.Errorf("%s is longer than 1024 bytes", quoteString(p))
	case !utf8.ValidString(p):
		return fmt.Errorf("%s is not valid UTF-8", quoteString(p))
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }):
		return fmt.Errorf("%s holds a control character or a backslash", quoteString(p))
	case !fs.ValidPath(p):
		return fmt.Errorf("%s is not a clean relative path (no leading /, no . or .. elements, no empty elements)", quoteString(p))
	}
	return nil
}
