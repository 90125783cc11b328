package diffgate

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/schema"
)

// ErrDiff is wrapped by every error Gate.Filter returns: the diff is
// malformed, too large or names a path no repository file can have. It is
// the candidate's doing (a FAIL), never an infrastructure error.
var ErrDiff = errors.New("diffgate: diff refused")

// ErrDiffTooLarge is wrapped by the error for a diff over the gate's size
// or file-section limit. It matches ErrDiff too.
var ErrDiffTooLarge = fmt.Errorf("%w: too large", ErrDiff)

// Bounds on the diffs a gate reads. A compat task may set its own limits
// (its spec's limits.diff_bytes and limits.diff_files) up to MaxDiffBytes
// and MaxDiffFiles; the defaults apply otherwise.
const (
	DefaultDiffBytes = 4 << 20
	DefaultDiffFiles = 1000
	MaxDiffBytes     = 8 << 20
	MaxDiffFiles     = 50_000
)

// maxDropped bounds the dropped-hunk records Filtered keeps; DroppedTotal
// and DroppedByRule count past it.
const maxDropped = 4096

// Rules the gate records for a dropped file section (schema.DroppedHunk's
// Rule). A denylist match is recorded as RuleDenyPrefix followed by the
// pattern, e.g. "denylist:conftest.py".
const (
	RuleBinary       = "binary"          // a binary patch: never applied
	RuleSymlink      = "symlink"         // creates or changes a symbolic link
	RuleSubmodule    = "submodule"       // creates or changes a gitlink
	RuleHiddenTest   = "hidden_test"     // touches a file of the hidden suite
	RuleExistingTest = "existing_test"   // touches a file of the existing suite
	RuleNotAllowed   = "not_allowlisted" // a path no allow glob matches
	RuleDenyPrefix   = "denylist:"
)

// DefaultDeny is the denylist every compat task starts with (firewall glob
// syntax: a pattern without an inner "/" matches at any depth, a trailing
// "/" matches directories and everything below them, matching ignores
// case). It keeps tests, test and tool configuration, interpreter start-up
// hooks, packaging and build scripts, CI files, bytecode and git metadata
// out of a diff, whatever the task's allowlist says.
var DefaultDeny = []string{
	// Tests and test configuration (V1.1, V3.1-V3.3).
	"tests/", "test/", "testing/", "test_*.py", "*_test.py", "conftest.py",
	"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg",
	"pyproject.toml", "noxfile.py", ".coveragerc",
	// Interpreter start-up hooks and bytecode (V4.2, V4.3, V1.12).
	"sitecustomize.py", "usercustomize.py", "*.pth", "__pycache__/", "*.pyc", "*.pyo",
	// Packaging and entry points: a pytest11 entry point autoloads a plugin (V3.4).
	"setup.py", "*.egg-info/", "*.dist-info/", "entry_points.txt", "MANIFEST.in",
	// Build scripts and environment files the harness might source (V3.7, V4.4).
	"Makefile", "GNUmakefile", "*.mk", ".env", ".envrc", "*.sh",
	// Version control metadata and CI.
	".git", ".gitattributes", ".gitmodules", ".github/", ".gitlab-ci.yml", ".gitlab/",
	".circleci/", ".travis.yml", "azure-pipelines.yml", "Jenkinsfile", ".pre-commit-config.yaml",
}

// Gate decides which file sections of a diff reach the repository. A
// section is dropped when it is a binary patch, creates or changes a
// symbolic link or gitlink, touches a Protected path, touches a path a Deny
// glob matches, or touches a path no Allow glob matches; everything else is
// kept verbatim. The zero Gate keeps nothing.
//
// MaxBytes and MaxFiles bound the gate's work: a diff larger than MaxBytes
// is refused before it is parsed, and one with more than MaxFiles file
// sections as soon as the parser meets the first section too many, before
// any path is judged. Zero means DefaultDiffBytes and DefaultDiffFiles.
type Gate struct {
	Allow     []string
	Deny      []string
	Protected []Protected
	MaxBytes  int
	MaxFiles  int
}

// Protected is a path no diff may touch, with the rule recorded when one
// does.
type Protected struct {
	Path string
	Rule string
}

// Filtered is the gate's output.
type Filtered struct {
	// Diff is the kept file sections, byte for byte as received, each
	// ending with a newline. It is what the oracle applies.
	Diff []byte
	// SHA256 is the lowercase hex digest of Diff.
	SHA256 string
	// Paths lists every path the kept sections name, sorted: after
	// applying Diff, no other file of the checkout may have changed.
	Paths []string
	// Dropped records each dropped hunk (a section without text hunks
	// counts as one) with the path and the rule that dropped it, in diff
	// order, at most 4096 of them; DroppedTotal counts them all and
	// DroppedByRule counts them by rule. A verdict records fewer (see
	// compat.Grade).
	Dropped       []schema.DroppedHunk
	DroppedTotal  int
	DroppedByRule map[string]int
	// Sections is the number of file sections read; Ignored the number of
	// lines outside any section (a commit message, a diffstat), which are
	// not passed on.
	Sections int
	Ignored  int
}

// DiffError locates a problem in a diff.
type DiffError struct {
	Line int // 1-based; 0 when the problem is not on one line
	Msg  string
}

func (e *DiffError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("diffgate: malformed diff: line %d: %s", e.Line, e.Msg)
	}
	return "diffgate: malformed diff: " + e.Msg
}

// Unwrap makes a DiffError match ErrDiff.
func (e *DiffError) Unwrap() error { return ErrDiff }

// section is one file section of a diff.
type section struct {
	first, last int      // line indexes, inclusive
	names       []string // every path the section names, prefix stripped
	binary      bool
	modes       []string
	hunks       int
}

// Filter parses diff as a unified diff in git's format (traditional
// "---"/"+++" sections are accepted too) and applies the gate to each file
// section. It returns an error wrapping ErrDiff when the diff is malformed,
// and one wrapping ErrDiffTooLarge when it is over the gate's limits. Its
// work is linear in the size of the diff, plus a bounded number of
// firewall checks per file section.
func (g Gate) Filter(diff []byte) (*Filtered, error) {
	maxBytes, maxFiles := g.limits()
	if len(diff) > maxBytes {
		return nil, fmt.Errorf("%w: the diff is %d bytes; this task accepts at most %d", ErrDiffTooLarge, len(diff), maxBytes)
	}
	p := newParser(diff)
	p.maxSections = maxFiles
	secs, err := p.parse()
	if err != nil {
		return nil, err
	}
	if len(secs) == 0 && len(bytes.TrimSpace(diff)) > 0 {
		return nil, &DiffError{Msg: "no file sections found"}
	}
	m, err := g.compile()
	if err != nil {
		return nil, err
	}
	out := &Filtered{Sections: len(secs), Ignored: p.ignored, Dropped: []schema.DroppedHunk{}, DroppedByRule: map[string]int{}}
	var kept bytes.Buffer
	paths := map[string]bool{}
	for _, s := range secs {
		path, rule, err := m.judge(s)
		if err != nil {
			return nil, &DiffError{Line: s.first + 1, Msg: err.Error()}
		}
		if rule == "" {
			b := p.bytes(s.first, s.last)
			kept.Write(b)
			if len(b) > 0 && b[len(b)-1] != '\n' {
				kept.WriteByte('\n')
			}
			for _, n := range s.names {
				paths[n] = true
			}
			continue
		}
		n := max(s.hunks, 1)
		out.DroppedTotal += n
		out.DroppedByRule[rule] += n
		for range min(n, maxDropped-len(out.Dropped)) {
			out.Dropped = append(out.Dropped, schema.DroppedHunk{Path: path, Rule: rule})
		}
	}
	out.Diff = kept.Bytes()
	if out.Diff == nil {
		out.Diff = []byte{}
	}
	sum := sha256.Sum256(out.Diff)
	out.SHA256 = hex.EncodeToString(sum[:])
	out.Paths = sortedKeys(paths)
	return out, nil
}

// limits returns the gate's size and file-section limits.
func (g Gate) limits() (size, files int) {
	size, files = g.MaxBytes, g.MaxFiles
	if size <= 0 {
		size = DefaultDiffBytes
	}
	if files <= 0 {
		files = DefaultDiffFiles
	}
	return size, files
}

// matcher is a compiled Gate. It remembers what it found for each path,
// since a section usually names its path twice and every lookup is a
// firewall run.
type matcher struct {
	allow, deny, protected globs
	rules                  []string // rule of each protected pattern
	seen                   map[string]*pathFacts
}

// pathFacts is what the matcher knows about one path. Each list is
// matched once, when first needed.
type pathFacts struct {
	err                 error // the firewall's verdict on the name itself
	protected, deny     int   // index of the first matching pattern, or -1
	denyDone, allowDone bool
	allowed             bool
}

func (m *matcher) facts(p string) *pathFacts {
	if f, ok := m.seen[p]; ok {
		return f
	}
	// Matching the protected list also passes the name through the
	// firewall's name rules, so it is always done first.
	f := &pathFacts{deny: -1}
	f.protected, f.err = m.protected.first(p)
	m.seen[p] = f
	return f
}

func (m *matcher) denied(p string) int {
	f := m.facts(p)
	if !f.denyDone {
		f.deny, _ = m.deny.first(p)
		f.denyDone = true
	}
	return f.deny
}

func (m *matcher) allowed(p string) bool {
	f := m.facts(p)
	if !f.allowDone {
		f.allowed, _ = dropped(p, m.allow)
		f.allowDone = true
	}
	return f.allowed
}

func (g Gate) compile() (*matcher, error) {
	m := &matcher{allow: globs(g.Allow), deny: globs(g.Deny), seen: map[string]*pathFacts{}}
	for _, p := range g.Protected {
		m.protected = append(m.protected, "/"+escapeGlob(p.Path))
		m.rules = append(m.rules, p.Rule)
	}
	for _, gl := range []globs{m.allow, m.deny, m.protected} {
		if err := (firewall.Policy{Deny: gl}).Validate(); err != nil {
			return nil, fmt.Errorf("diffgate: %w", err)
		}
	}
	return m, nil
}

// judge returns the path and rule that drop s, or an empty rule to keep it.
// An error means a name no repository file can have.
func (m *matcher) judge(s section) (string, string, error) {
	for _, n := range s.names {
		if err := m.facts(n).err; err != nil {
			return "", "", fmt.Errorf("path %s: %v", strconv.Quote(n), err)
		}
	}
	primary := s.names[len(s.names)-1]
	switch {
	case s.binary:
		return primary, RuleBinary, nil
	case slices.Contains(s.modes, "120000"):
		return primary, RuleSymlink, nil
	case slices.Contains(s.modes, "160000"):
		return primary, RuleSubmodule, nil
	}
	for _, n := range s.names {
		if i := m.facts(n).protected; i >= 0 {
			return n, m.rules[i], nil
		}
	}
	for _, n := range s.names {
		if i := m.denied(n); i >= 0 {
			return n, RuleDenyPrefix + m.deny[i], nil
		}
	}
	for _, n := range s.names {
		if !m.allowed(n) {
			return n, RuleNotAllowed, nil
		}
	}
	return "", "", nil
}

// globs are patterns in the firewall's denylist syntax. They are matched
// by the firewall itself, on a one-entry archive holding the path, so that
// the gate and the firewall can never disagree about what a glob means, and
// so that the path passes the firewall's name rules (no "..", no absolute
// or non-canonical names, no control characters, NFC only).
type globs []string

// first returns the index of the first pattern matching the file path p,
// or -1. The error is the firewall's verdict on the name itself.
func (g globs) first(p string) (int, error) {
	hit, err := dropped(p, g)
	if err != nil || !hit {
		return -1, err
	}
	for i := range g {
		if hit, _ := dropped(p, g[i:i+1]); hit {
			return i, nil
		}
	}
	return -1, nil
}

func dropped(p string, patterns []string) (bool, error) {
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	if err := tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: 0o644, Format: tar.FormatPAX}); err != nil {
		return false, err
	}
	if err := tw.Close(); err != nil {
		return false, err
	}
	man, err := firewall.Filter(context.Background(), &in, io.Discard, firewall.Policy{Deny: patterns, DenyAction: firewall.DenyDrop})
	if err != nil {
		return false, err
	}
	return len(man.Dropped) > 0, nil
}

// sortedKeys returns the keys of m, sorted; never nil.
func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// escapeGlob makes p a literal pattern.
func escapeGlob(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// diffParser reads a diff line by line.
type diffParser struct {
	data        []byte
	starts      []int // byte offset of each line; one more entry for the end
	ignored     int
	maxSections int // more is an error; zero means no limit
}

func newParser(data []byte) *diffParser {
	p := &diffParser{data: data}
	for off := 0; off < len(data); {
		p.starts = append(p.starts, off)
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			off = len(data)
		} else {
			off += i + 1
		}
	}
	p.starts = append(p.starts, len(data))
	return p
}

func (p *diffParser) n() int { return len(p.starts) - 1 }

// text returns line i without its newline.
func (p *diffParser) text(i int) string {
	b := p.data[p.starts[i]:p.starts[i+1]]
	return string(bytes.TrimSuffix(b, []byte("\n")))
}

// bytes returns lines first..last, inclusive, with their newlines.
func (p *diffParser) bytes(first, last int) []byte {
	return p.data[p.starts[first]:p.starts[last+1]]
}

func errAt(i int, format string, args ...any) error {
	return &DiffError{Line: i + 1, Msg: fmt.Sprintf(format, args...)}
}

func (p *diffParser) parse() ([]section, error) {
	var secs []section
	for i := 0; i < p.n(); {
		l := p.text(i)
		var s section
		var err error
		switch {
		case strings.HasPrefix(l, "diff --git "):
			s, err = p.gitSection(i)
		case strings.HasPrefix(l, "--- ") && i+1 < p.n() && strings.HasPrefix(p.text(i+1), "+++ "):
			s, err = p.plainSection(i)
		case strings.HasPrefix(l, "@@ "):
			return nil, errAt(i, "hunk outside a file section")
		case l == "GIT binary patch", strings.HasPrefix(l, "Binary files "):
			return nil, errAt(i, "binary patch outside a file section")
		default:
			p.ignored++
			i++
			continue
		}
		if err != nil {
			return nil, err
		}
		if p.maxSections > 0 && len(secs) == p.maxSections {
			return nil, fmt.Errorf("%w: the diff has more than %d file sections (line %d starts one more); this task accepts at most %d",
				ErrDiffTooLarge, p.maxSections, i+1, p.maxSections)
		}
		secs = append(secs, s)
		i = s.last + 1
	}
	return secs, nil
}

// Extended header lines of a git file section.
var extended = []string{"old mode ", "new mode ", "deleted file mode ", "new file mode ", "copy from ", "copy to ",
	"rename from ", "rename to ", "rename old ", "rename new ", "similarity index ", "dissimilarity index ", "index "}

var (
	hunkHeader = regexp.MustCompile(`^@@ -([0-9]{1,9})(?:,([0-9]{1,9}))? \+([0-9]{1,9})(?:,([0-9]{1,9}))? @@`)
	binaryLine = regexp.MustCompile("^(?:(?:literal|delta) [0-9]{1,12}|[A-Za-z][0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~-]*|)$")
	modeValue  = regexp.MustCompile(`^[0-7]{6}$`)
)

func (p *diffParser) gitSection(i int) (section, error) {
	s := section{first: i}
	if a, b, ok := splitGitHeader(p.text(i)[len("diff --git "):]); ok {
		for _, raw := range []string{a, b} {
			n, err := stripPrefix(raw)
			if err != nil {
				return s, errAt(i, "%v", err)
			}
			s.names = append(s.names, n)
		}
	}
	j := i + 1
	// git writes each extended header line at most once; allowing repeats
	// would let one section name any number of paths.
	seen := make([]bool, len(extended))
header:
	for ; j < p.n(); j++ {
		l := p.text(j)
		for k, pre := range extended {
			if !strings.HasPrefix(l, pre) {
				continue
			}
			if seen[k] {
				return s, errAt(j, "repeated %q line", strings.TrimSpace(pre))
			}
			seen[k] = true
			v := l[len(pre):]
			switch pre {
			case "old mode ", "new mode ", "deleted file mode ", "new file mode ":
				if !modeValue.MatchString(v) {
					return s, errAt(j, "bad mode %q", v)
				}
				s.modes = append(s.modes, v)
			case "index ":
				if _, mode, ok := strings.Cut(v, " "); ok {
					if !modeValue.MatchString(mode) {
						return s, errAt(j, "bad mode %q", mode)
					}
					s.modes = append(s.modes, mode)
				}
			case "similarity index ", "dissimilarity index ":
			default: // copy/rename: a full path, no prefix to strip
				n, err := unquoteName(v)
				if err != nil {
					return s, errAt(j, "%v", err)
				}
				s.names = append(s.names, n)
			}
			continue header
		}
		break
	}
	switch {
	case j < p.n() && p.text(j) == "GIT binary patch":
		s.binary = true
		for j++; j < p.n() && binaryLine.MatchString(p.text(j)); j++ {
		}
		s.last = j - 1
	case j < p.n() && strings.HasPrefix(p.text(j), "Binary files ") && strings.HasSuffix(p.text(j), " differ"):
		s.binary = true
		s.last = j
	case j < p.n() && strings.HasPrefix(p.text(j), "--- "):
		last, err := p.fileHeaders(&s, j, true)
		if err != nil {
			return s, err
		}
		s.last = last
	default:
		s.last = j - 1
	}
	if len(s.names) == 0 {
		return s, errAt(i, "cannot tell which file this section changes")
	}
	return s, nil
}

func (p *diffParser) plainSection(i int) (section, error) {
	s := section{first: i}
	last, err := p.fileHeaders(&s, i, false)
	if err != nil {
		return s, err
	}
	s.last = last
	return s, nil
}

// fileHeaders reads the "---" and "+++" lines at j and the hunks after
// them, and returns the index of the section's last line.
func (p *diffParser) fileHeaders(s *section, j int, git bool) (int, error) {
	if j+1 >= p.n() || !strings.HasPrefix(p.text(j+1), "+++ ") {
		return 0, errAt(j, `"---" without "+++"`)
	}
	for k := j; k <= j+1; k++ {
		n, null, err := headerName(p.text(k)[4:], git)
		if err != nil {
			return 0, errAt(k, "%v", err)
		}
		if !null {
			s.names = append(s.names, n)
		}
	}
	if len(s.names) == 0 {
		return 0, errAt(j, "both sides are /dev/null")
	}
	k := j + 2
	for k < p.n() && strings.HasPrefix(p.text(k), "@@ ") {
		next, err := p.hunk(k)
		if err != nil {
			return 0, err
		}
		s.hunks++
		k = next
	}
	if s.hunks == 0 {
		return 0, errAt(j, "file header without hunks")
	}
	return k - 1, nil
}

// hunk reads the hunk whose header is line j and returns the index of the
// line after it.
func (p *diffParser) hunk(j int) (int, error) {
	m := hunkHeader.FindStringSubmatch(p.text(j))
	if m == nil {
		return 0, errAt(j, "bad hunk header")
	}
	count := func(s string) int {
		if s == "" {
			return 1
		}
		n, _ := strconv.Atoi(s)
		return n
	}
	old, nw := count(m[2]), count(m[4])
	if old == 0 && nw == 0 {
		return 0, errAt(j, "empty hunk")
	}
	k := j + 1
	for old > 0 || nw > 0 {
		if k >= p.n() {
			return 0, errAt(j, "hunk is truncated (%d old and %d new lines missing)", old, nw)
		}
		l := p.text(k)
		switch {
		case l == "" || l[0] == ' ': // git reads an empty line as empty context
			old--
			nw--
		case l[0] == '-':
			old--
		case l[0] == '+':
			nw--
		case l[0] == '\\' && k > j+1:
		default:
			return 0, errAt(k, "hunk ends early (%d old and %d new lines missing)", max(old, 0), max(nw, 0))
		}
		if old < 0 || nw < 0 {
			return 0, errAt(k, "hunk has more lines than its header says")
		}
		k++
	}
	if k < p.n() && strings.HasPrefix(p.text(k), `\`) {
		k++
	}
	return k, nil
}

// splitGitHeader splits the names of a "diff --git" line. Unquoted names
// with spaces are split where the two halves name the same file, as git
// does; ok is false when that is ambiguous, and the names must then come
// from the other header lines.
func splitGitHeader(h string) (a, b string, ok bool) {
	if strings.HasPrefix(h, `"`) {
		a, rest, err := unquoteC(h)
		if err != nil || !strings.HasPrefix(rest, " ") {
			return "", "", false
		}
		rest = rest[1:]
		if strings.HasPrefix(rest, `"`) {
			b, tail, err := unquoteC(rest)
			return a, b, err == nil && tail == ""
		}
		return a, rest, rest != ""
	}
	if i := strings.Index(h, ` "`); i >= 0 && strings.HasSuffix(h, `"`) {
		if b, tail, err := unquoteC(h[i+1:]); err == nil && tail == "" {
			return h[:i], b, true
		}
	}
	found := sameNameSplits(h)
	if len(found) == 0 && strings.Count(h, " ") == 1 {
		found = append(found, strings.IndexByte(h, ' '))
	}
	if len(found) != 1 {
		return "", "", false
	}
	return h[:found[0]], h[found[0]+1:], true
}

// sameNameSplits returns the spaces of h at which it splits into two
// names that are the same once their first component is stripped: "a/x y"
// and "b/x y" in "a/x y b/x y". There is at most one, and finding it takes
// one pass. For a split at i the left name is h[s+1:i], where s is h's
// first slash, and the right one, h[q+1:] where q is the first slash after
// i, must have the same length, so q = len(h)-i+s. As i grows the first
// slash after it never moves left while len(h)-i+s moves left, so they
// meet at most once and only that split needs its names compared.
func sameNameSplits(h string) []int {
	s := strings.IndexByte(h, '/')
	if s < 0 {
		return nil
	}
	next := len(h) // the first slash after i
	for i := len(h) - 1; i >= s+2; i-- {
		switch h[i] {
		case '/':
			next = i
		case ' ':
			if next == len(h)-i+s && next < len(h)-1 && h[s+1:i] == h[next+1:] {
				return []int{i}
			}
		}
	}
	return nil
}

// headerName reads the name of a "---" or "+++" line: C-quoted, or up to a
// tab. Traditional diffs may not have spaces in names, which git would
// split by heuristics. null reports /dev/null.
func headerName(v string, git bool) (name string, null bool, err error) {
	var raw string
	if strings.HasPrefix(v, `"`) {
		var rest string
		raw, rest, err = unquoteC(v)
		if err != nil {
			return "", false, err
		}
		if rest != "" && !strings.HasPrefix(rest, "\t") {
			return "", false, errors.New("text after a quoted name")
		}
	} else {
		raw, _, _ = strings.Cut(v, "\t")
		if !git && strings.Contains(raw, " ") {
			return "", false, errors.New("a name with spaces in a non-git diff; use git diff")
		}
	}
	if raw == "/dev/null" {
		return "", true, nil
	}
	name, err = stripPrefix(raw)
	return name, false, err
}

// unquoteName reads the path of a rename or copy line.
func unquoteName(v string) (string, error) {
	if !strings.HasPrefix(v, `"`) {
		return v, nil
	}
	n, rest, err := unquoteC(v)
	if err == nil && rest != "" {
		err = errors.New("text after a quoted name")
	}
	return n, err
}

// stripPrefix removes the first path component ("a/", "b/"), as git apply
// does by default (-p1).
func stripPrefix(raw string) (string, error) {
	i := strings.IndexByte(raw, '/')
	if i < 0 || i == len(raw)-1 {
		return "", fmt.Errorf("name %s has no directory prefix to strip", strconv.Quote(raw))
	}
	return raw[i+1:], nil
}

// unquoteC reads a C-quoted name as git writes it (\a \b \t \n \v \f \r
// \" \\ and three-digit octal escapes) and returns it with the rest of s.
func unquoteC(s string) (string, string, error) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", errors.New("not a quoted name")
	}
	var b []byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return string(b), s[i+1:], nil
		case '\\':
			if i+1 >= len(s) {
				return "", "", errors.New("unterminated escape in quoted name")
			}
			i++
			switch e := s[i]; e {
			case 'a':
				b = append(b, '\a')
			case 'b':
				b = append(b, '\b')
			case 't':
				b = append(b, '\t')
			case 'n':
				b = append(b, '\n')
			case 'v':
				b = append(b, '\v')
			case 'f':
				b = append(b, '\f')
			case 'r':
				b = append(b, '\r')
			case '"', '\\':
				b = append(b, e)
			case '0', '1', '2', '3':
				if i+2 >= len(s) || s[i+1] < '0' || s[i+1] > '7' || s[i+2] < '0' || s[i+2] > '7' {
					return "", "", errors.New("bad octal escape in quoted name")
				}
				b = append(b, (e-'0')<<6|(s[i+1]-'0')<<3|(s[i+2]-'0'))
				i += 2
			default:
				return "", "", fmt.Errorf("unknown escape \\%c in quoted name", e)
			}
		default:
			b = append(b, c)
		}
	}
	return "", "", errors.New("unterminated quoted name")
}
