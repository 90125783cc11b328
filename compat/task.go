package compat

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/compat/diffgate"
	"github.com/strictgrade/strictgrade/compat/junit"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/tarball"
	"github.com/strictgrade/strictgrade/schema"
)

// SpecFile is the name of a compat task's spec inside its directory.
const SpecFile = "task.json"

// SpecSchema is the required value of a spec's "schema" field.
const SpecSchema = "strictgrade.compat-task/v1"

// ErrInvalid is wrapped by every error about a malformed task.
var ErrInvalid = errors.New("compat: invalid task")

// Spec is the content of task.json. See the package documentation for the
// meaning of each field.
type Spec struct {
	Schema      string            `json:"schema"`
	ID          string            `json:"id"`
	Version     string            `json:"version"`
	Title       string            `json:"title,omitempty"`
	Runtime     string            `json:"runtime"`
	Description string            `json:"description"`
	Repo        Repo              `json:"repo"`
	Existing    Existing          `json:"existing"`
	Hidden      Hidden            `json:"hidden"`
	Allow       []string          `json:"allow"`
	Deny        []string          `json:"deny,omitempty"`
	Limits      Limits            `json:"limits,omitzero"`
	Env         map[string]string `json:"env,omitempty"`
}

// Repo is the oracle's own copy of the repository.
type Repo struct {
	// Bundle is a complete git bundle (task-relative path) that has Base
	// as one of its ref tips.
	Bundle string `json:"bundle"`
	// Base is the full commit id the diff applies to.
	Base string `json:"base"`
	// PythonPath lists repository directories put on sys.path by the
	// judge-owned pytest configuration; default ["."].
	PythonPath []string `json:"pythonpath,omitempty"`
}

// Existing is the repository's existing suite S, frozen as a list file of
// pytest node ids (one per line) whose sha256 the spec pins.
type Existing struct {
	List   string `json:"list"`
	SHA256 string `json:"sha256"`
}

// Hidden is the hidden suite H: the files the oracle injects into the
// checkout (Dir mirrors repository paths) and the node ids that must pass.
type Hidden struct {
	Dir   string   `json:"dir"`
	Tests []string `json:"tests"`
}

// Limits bound each oracle container and the diff the gate reads. Zero
// fields take DefaultLimits.
type Limits struct {
	WallSeconds int   `json:"wall_seconds,omitempty"`
	MemoryMB    int64 `json:"memory_mb,omitempty"`
	PIDs        int64 `json:"pids,omitempty"`
	TmpfsMB     int64 `json:"tmpfs_mb,omitempty"`
	// DiffBytes and DiffFiles bound the agent's diff: its size in bytes
	// and its number of file sections (see diffgate.Gate).
	DiffBytes int `json:"diff_bytes,omitempty"`
	DiffFiles int `json:"diff_files,omitempty"`
}

// DefaultLimits fill the zero fields of a spec's limits.
var DefaultLimits = Limits{WallSeconds: 120, MemoryMB: 1024, PIDs: 256, TmpfsMB: 256,
	DiffBytes: diffgate.DefaultDiffBytes, DiffFiles: diffgate.DefaultDiffFiles}

// Task is a loaded, validated compat task.
type Task struct {
	// Dir is the absolute path of the task directory.
	Dir  string
	Spec Spec
	// Digest is the sha256 (hex) of the firewall's canonical archive of
	// the whole task directory: spec, bundle, description, suite list and
	// hidden tests.
	Digest string
	// ExistingIDs is S, in list order; HiddenIDs is H, in spec order.
	ExistingIDs []string
	HiddenIDs   []string
	// HiddenFiles are the repository paths of the injected files, sorted.
	HiddenFiles []string
	// BaseTestFiles are the repository paths of the files that hold a
	// hidden test but are not among HiddenFiles, sorted: test files of
	// the base commit, which the hidden suite uses as they are there. The
	// gate protects them as it protects the hidden files.
	BaseTestFiles []string
}

// Bounds on what a task may declare.
const (
	maxSpecBytes     = 1 << 20
	maxListBytes     = 8 << 20
	maxDescBytes     = 1 << 20
	maxTests         = 5000 // per suite; a verdict holds at most 10000 cases
	maxHiddenFiles   = 1000
	maxPatterns      = 256
	maxEnv           = 32
	maxEnvValue      = 4096
	maxPythonPath    = 8
	maxNodeIDBytes   = 1024
	maxArgBytes      = 1 << 20
	bundleHeaderScan = 1 << 20
)

var (
	idPattern      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,255}$`)
	commitPattern  = regexp.MustCompile(`^[0-9a-f]{40}$`)
	sha256Pattern  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	envNamePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	pyPathPattern  = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)
)

// reservedEnv are variables a task may not set: the oracle owns them, or
// they change how the interpreter, pytest, git or the loader behave.
var reservedEnv = map[string]bool{
	"PATH": true, "HOME": true, "TZ": true, "LANG": true, "LANGUAGE": true, "SOURCE_DATE_EPOCH": true,
	"TMPDIR": true, "SHELL": true, "ENV": true, "BASH_ENV": true, "USER": true, "LOGNAME": true,
	"PWD": true, "IFS": true, "CDPATH": true, "GCONV_PATH": true, "HOSTALIASES": true,
	"LOCALDOMAIN": true, "RES_OPTIONS": true, "NLSPATH": true, "TERMINFO": true,
}

var reservedEnvPrefixes = []string{"PYTHON", "PYTEST", "LD_", "LC_", "GIT_", "DYLD_", "MALLOC_", "PIP_", "VIRTUAL_ENV", "COV_", "COVERAGE_"}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// ParseSpec parses and validates task.json bytes (strict JSON: no
// duplicate keys, no unknown fields, no trailing data) and applies the
// defaults. It checks what can be checked without the task directory.
func ParseSpec(data []byte) (*Spec, error) {
	if err := schema.CheckJSON(data, maxSpecBytes); err != nil {
		return nil, invalid("%s: %w", SpecFile, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, invalid("%s: %v", SpecFile, err)
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if s.Schema != SpecSchema {
		bad("schema is %q, want %q", s.Schema, SpecSchema)
	}
	if !idPattern.MatchString(s.ID) {
		bad("id %q must match %s", s.ID, idPattern)
	}
	if s.Version == "" || len(s.Version) > 64 || !safeText(s.Version) {
		bad("version must be 1 to 64 printable characters")
	}
	if len(s.Title) > 256 || !safeText(s.Title) {
		bad("title must be at most 256 printable characters")
	}
	if s.Runtime != "python" {
		bad("runtime is %q; only \"python\" is supported", s.Runtime)
	}
	for _, f := range []struct{ name, path string }{{"description", s.Description}, {"repo.bundle", s.Repo.Bundle},
		{"existing.list", s.Existing.List}, {"hidden.dir", s.Hidden.Dir}} {
		if err := checkRel(f.path); err != nil {
			bad("%s: %v", f.name, err)
		}
	}
	if !commitPattern.MatchString(s.Repo.Base) {
		bad("repo.base must be a full commit id (40 lowercase hex digits)")
	}
	if len(s.Repo.PythonPath) == 0 {
		s.Repo.PythonPath = []string{"."}
	}
	if len(s.Repo.PythonPath) > maxPythonPath {
		bad("repo.pythonpath has more than %d entries", maxPythonPath)
	}
	for _, p := range s.Repo.PythonPath {
		if p != "." && (!pyPathPattern.MatchString(p) || checkRel(p) != nil) {
			bad("repo.pythonpath entry %q must be \".\" or a clean relative path of [A-Za-z0-9._-] components", p)
		}
	}
	if !sha256Pattern.MatchString(s.Existing.SHA256) {
		bad("existing.sha256 must be 64 lowercase hex digits")
	}
	if len(s.Hidden.Tests) == 0 || len(s.Hidden.Tests) > maxTests {
		bad("hidden.tests must list 1 to %d node ids", maxTests)
	}
	if len(s.Allow) == 0 {
		bad("allow must list at least one glob: the diff may touch nothing else")
	}
	if len(s.Allow) > maxPatterns || len(s.Deny) > maxPatterns {
		bad("allow and deny hold at most %d globs each", maxPatterns)
	}
	for _, g := range append(slices.Clone(s.Allow), s.Deny...) {
		// A deny glob is recorded in verdicts as the rule that dropped a hunk.
		if len(g) > 200 || !safeText(g) {
			bad("glob %q must be at most 200 printable characters", g)
		}
	}
	if err := (firewall.Policy{Deny: s.Allow}).Validate(); err != nil {
		bad("allow: %v", err)
	}
	if err := (firewall.Policy{Deny: s.Deny}).Validate(); err != nil {
		bad("deny: %v", err)
	}
	s.Limits = s.Limits.withDefaults()
	if l := s.Limits; l.WallSeconds < 1 || l.WallSeconds > 7200 || l.MemoryMB < 64 || l.MemoryMB > 16384 ||
		l.PIDs < 16 || l.PIDs > 4096 || l.TmpfsMB < 16 || l.TmpfsMB > 4096 ||
		l.DiffBytes < 1024 || l.DiffBytes > diffgate.MaxDiffBytes || l.DiffFiles < 1 || l.DiffFiles > diffgate.MaxDiffFiles {
		bad("limits out of range (wall_seconds 1-7200, memory_mb 64-16384, pids 16-4096, tmpfs_mb 16-4096, diff_bytes 1024-%d, diff_files 1-%d)",
			diffgate.MaxDiffBytes, diffgate.MaxDiffFiles)
	}
	if len(s.Env) > maxEnv {
		bad("env has more than %d variables", maxEnv)
	}
	for _, k := range sortedKeys(s.Env) {
		if err := checkEnv(k, s.Env[k]); err != nil {
			bad("env: %v", err)
		}
	}
	if len(problems) > 0 {
		return nil, invalid("%s: %s", SpecFile, strings.Join(problems, "; "))
	}
	return &s, nil
}

func (l Limits) withDefaults() Limits {
	if l.WallSeconds == 0 {
		l.WallSeconds = DefaultLimits.WallSeconds
	}
	if l.MemoryMB == 0 {
		l.MemoryMB = DefaultLimits.MemoryMB
	}
	if l.PIDs == 0 {
		l.PIDs = DefaultLimits.PIDs
	}
	if l.TmpfsMB == 0 {
		l.TmpfsMB = DefaultLimits.TmpfsMB
	}
	if l.DiffBytes == 0 {
		l.DiffBytes = DefaultLimits.DiffBytes
	}
	if l.DiffFiles == 0 {
		l.DiffFiles = DefaultLimits.DiffFiles
	}
	return l
}

func checkEnv(name, value string) error {
	if !envNamePattern.MatchString(name) {
		return fmt.Errorf("name %q must match %s", name, envNamePattern)
	}
	if reservedEnv[name] {
		return fmt.Errorf("%s is set by the oracle", name)
	}
	for _, p := range reservedEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("%s: names starting with %s are reserved", name, p)
		}
	}
	if len(value) > maxEnvValue || !safeText(value) {
		return fmt.Errorf("%s: value must be at most %d printable characters", name, maxEnvValue)
	}
	return nil
}

// safeText reports whether s is valid UTF-8 without control characters,
// line separators or bidirectional overrides (the verdict schema's text
// rule).
func safeText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r < 0x20, r >= 0x7f && r <= 0x9f, r == 0x2028, r == 0x2029,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return false
		}
	}
	return true
}

// checkRel accepts clean, relative, slash-separated paths only.
func checkRel(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, `\`) {
		return fmt.Errorf("path %q is not relative", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("path %q is not a clean relative path", p)
		}
	}
	return nil
}

// Load reads and validates the task in dir and computes its digest.
func Load(ctx context.Context, dir string) (*Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, invalid("%v", err)
	}
	defer root.Close()
	data, err := readRegular(root, SpecFile, maxSpecBytes)
	if err != nil {
		return nil, err
	}
	spec, err := ParseSpec(data)
	if err != nil {
		return nil, err
	}
	t := &Task{Dir: abs, Spec: *spec}
	if _, err := readRegular(root, spec.Description, maxDescBytes); err != nil {
		return nil, err
	}
	if err := checkBundle(root, spec.Repo); err != nil {
		return nil, err
	}
	list, err := readRegular(root, spec.Existing.List, maxListBytes)
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(list); hex.EncodeToString(sum[:]) != spec.Existing.SHA256 {
		return nil, invalid("%s: sha256 is %x, task.json pins %s", spec.Existing.List, sum, spec.Existing.SHA256)
	}
	if t.ExistingIDs, err = parseIDList(list); err != nil {
		return nil, invalid("%s: %v", spec.Existing.List, err)
	}
	if t.HiddenIDs, err = checkIDs(spec.Hidden.Tests); err != nil {
		return nil, invalid("hidden.tests: %v", err)
	}
	if t.HiddenFiles, err = listFiles(root, spec.Hidden.Dir); err != nil {
		return nil, err
	}
	if err := t.crossCheck(); err != nil {
		return nil, err
	}
	man, err := t.archive(ctx, io.Discard)
	if err != nil {
		return nil, err
	}
	t.Digest = man.ArchiveSHA256
	return t, nil
}

// crossCheck relates the suites to each other and to the hidden files.
func (t *Task) crossCheck() error {
	inS := make(map[string]bool, len(t.ExistingIDs))
	for _, id := range t.ExistingIDs {
		inS[id] = true
	}
	hidden := make(map[string]bool, len(t.HiddenFiles))
	for _, f := range t.HiddenFiles {
		hidden[f] = true
	}
	t.BaseTestFiles = nil
	base := map[string]bool{}
	for _, id := range t.HiddenIDs {
		if inS[id] {
			return invalid("%s is in both the existing and the hidden suite", id)
		}
		// A test in a file that is not under hidden.dir is one of the
		// base commit's, run as it is there; if the base has no such
		// test, the baseline finds it missing (tests_missing) and task
		// check quarantines the task.
		if f := idFile(id); !hidden[f] && !base[f] {
			base[f] = true
			t.BaseTestFiles = append(t.BaseTestFiles, f)
		}
	}
	slices.Sort(t.BaseTestFiles)
	if len(t.ExistingIDs)+len(t.HiddenIDs) > 2*maxTests {
		return invalid("more than %d tests in all", 2*maxTests)
	}
	return nil
}

// Description returns the agent-visible task description.
func (t *Task) Description() ([]byte, error) {
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return readRegular(root, t.Spec.Description, maxDescBytes)
}

// Gate returns the diff gate of the task: its allowlist, the default
// denylist followed by the task's own, the paths of both suites' test
// files, which no diff may touch, and its diff limits.
func (t *Task) Gate() diffgate.Gate {
	g := diffgate.Gate{Allow: slices.Clone(t.Spec.Allow), Deny: append(slices.Clone(diffgate.DefaultDeny), t.Spec.Deny...),
		MaxBytes: t.Spec.Limits.DiffBytes, MaxFiles: t.Spec.Limits.DiffFiles}
	seen := map[string]bool{}
	for _, f := range slices.Concat(t.HiddenFiles, t.BaseTestFiles) {
		seen[f] = true
		g.Protected = append(g.Protected, diffgate.Protected{Path: f, Rule: diffgate.RuleHiddenTest})
	}
	for _, id := range t.ExistingIDs {
		if f := idFile(id); !seen[f] {
			seen[f] = true
			g.Protected = append(g.Protected, diffgate.Protected{Path: f, Rule: diffgate.RuleExistingTest})
		}
	}
	return g
}

func readRegular(root *os.Root, name string, limit int64) ([]byte, error) {
	st, err := root.Lstat(name)
	if err != nil {
		return nil, invalid("%v", err)
	}
	if !st.Mode().IsRegular() {
		return nil, invalid("%s is not a regular file", name)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, invalid("%v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, invalid("%s: %v", name, err)
	}
	if int64(len(data)) > limit {
		return nil, invalid("%s is larger than %d bytes", name, limit)
	}
	return data, nil
}

// checkBundle reads the bundle's header: it must be a complete v2 or v3
// bundle (no prerequisite commits) with the base commit as a ref tip.
func checkBundle(root *os.Root, repo Repo) error {
	st, err := root.Lstat(repo.Bundle)
	if err != nil {
		return invalid("%v", err)
	}
	if !st.Mode().IsRegular() {
		return invalid("%s is not a regular file", repo.Bundle)
	}
	f, err := root.Open(repo.Bundle)
	if err != nil {
		return invalid("%v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, bundleHeaderScan))
	sc.Buffer(make([]byte, 4096), 64<<10)
	first := true
	tip := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case first:
			if line != "# v2 git bundle" && line != "# v3 git bundle" {
				return invalid("%s is not a git bundle (v2 or v3)", repo.Bundle)
			}
			first = false
		case line == "":
			if !tip {
				return invalid("%s: the base commit %s is not one of the bundle's refs", repo.Bundle, repo.Base)
			}
			return nil
		case strings.HasPrefix(line, "@"): // v3 capability
		case strings.HasPrefix(line, "-"):
			return invalid("%s needs prerequisite commits; make a complete bundle", repo.Bundle)
		default:
			sha, _, _ := strings.Cut(line, " ")
			tip = tip || sha == repo.Base
		}
	}
	return invalid("%s: bundle header is truncated or too long", repo.Bundle)
}

// listFiles returns the regular files under dir, relative to it, sorted.
// Anything but regular files and directories makes the task invalid.
func listFiles(root *os.Root, dir string) ([]string, error) {
	st, err := root.Lstat(dir)
	if err != nil || !st.IsDir() {
		return nil, invalid("%s/ is missing", dir)
	}
	var files []string
	err = fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is neither a file nor a directory", p)
		}
		if len(files) == maxHiddenFiles {
			return fmt.Errorf("more than %d files", maxHiddenFiles)
		}
		files = append(files, strings.TrimPrefix(p, dir+"/"))
		return nil
	})
	if err != nil {
		return nil, invalid("%s: %v", dir, err)
	}
	if len(files) == 0 {
		return nil, invalid("%s/ holds no files", dir)
	}
	slices.Sort(files)
	return files, nil
}

// parseIDList parses a frozen suite list: one node id per line, each line
// ending in a newline, no blank lines, no duplicates.
func parseIDList(data []byte) ([]string, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if data[len(data)-1] != '\n' {
		return nil, errors.New("the last line does not end with a newline")
	}
	return checkIDs(strings.Split(string(data[:len(data)-1]), "\n"))
}

// CheckID reports whether id is a valid task id (the spec's "id"): it
// must match [A-Za-z0-9][A-Za-z0-9._:/@+-]*, at most 256 characters.
func CheckID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("task id %q must match %s", id, idPattern)
	}
	return nil
}

// CheckTestIDs validates one suite's pytest node ids as Load does: each of
// the form path.py::name[::name...][params], printable, not starting with
// '-'; no id listed twice; no two with the same JUnit name; at most 5000
// of them. It says nothing of whether the tests exist.
func CheckTestIDs(ids []string) error {
	_, err := checkIDs(ids)
	return err
}

// checkIDs validates node ids: each one well formed and unique, and no two
// with the same JUnit name (the report could not tell them apart).
func checkIDs(ids []string) ([]string, error) {
	if len(ids) > maxTests {
		return nil, fmt.Errorf("more than %d tests", maxTests)
	}
	seen := make(map[string]bool, len(ids))
	keys := make(map[junit.Key]string, len(ids))
	total := 0
	for i, id := range ids {
		// The ids become pytest's command line, which the kernel bounds.
		if total += len(id) + 1; total > maxArgBytes {
			return nil, fmt.Errorf("the node ids add up to more than %d bytes", maxArgBytes)
		}
		if err := checkNodeID(id); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("entry %d: %s is listed twice", i+1, id)
		}
		seen[id] = true
		k := junit.KeyOf(id)
		if other, dup := keys[k]; dup {
			return nil, fmt.Errorf("entry %d: %s and %s have the same JUnit name", i+1, id, other)
		}
		keys[k] = id
	}
	return slices.Clone(ids), nil
}

// checkNodeID accepts pytest node ids of the form path.py::name[::name...]
// with optional parameters, no control characters, and nothing pytest's
// command line would read as an option.
func checkNodeID(id string) error {
	switch {
	case id == "" || len(id) > maxNodeIDBytes:
		return fmt.Errorf("node id must be 1 to %d bytes", maxNodeIDBytes)
	case !safeText(id):
		return fmt.Errorf("node id %q holds control or invalid characters", id)
	case strings.HasPrefix(id, "-"):
		return fmt.Errorf("node id %q starts with '-'", id)
	case strings.TrimSpace(id) != id:
		return fmt.Errorf("node id %q has surrounding white space", id)
	}
	file, rest, ok := strings.Cut(id, "::")
	if !ok || rest == "" {
		return fmt.Errorf("node id %q is not of the form file.py::test", id)
	}
	if err := checkRel(file); err != nil || !strings.HasSuffix(file, ".py") {
		return fmt.Errorf("node id %q: %q is not a clean relative .py path", id, file)
	}
	names, _, _ := strings.Cut(rest, "[")
	for _, n := range strings.Split(names, "::") {
		if n == "" {
			return fmt.Errorf("node id %q has an empty name", id)
		}
	}
	return nil
}

// idFile returns the file part of a node id.
func idFile(id string) string {
	f, _, _ := strings.Cut(id, "::")
	return f
}

// taskPolicy bounds a task directory: roomier than a submission, equally
// strict about types and names.
var taskPolicy = firewall.Policy{MaxTotalBytes: 2 << 30, MaxFileBytes: 1 << 30, MaxInputBytes: 3 << 30}

// archive writes the canonical archive of the whole task directory to w.
func (t *Task) archive(ctx context.Context, w io.Writer) (*firewall.Manifest, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarball.WriteDir(pw, t.Dir, nil)) }()
	defer pr.Close()
	man, err := firewall.Filter(ctx, pr, w, taskPolicy)
	if err != nil {
		return nil, invalid("%s: %w", t.Dir, err)
	}
	return man, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Tier reports the tier a compat task is graded in: compat.
func (t *Task) Tier() schema.Tier { return schema.TierCompat }
