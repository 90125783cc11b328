package task

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
)

// Directory layout of a task.
const (
	SpecFile  = "task.json"
	PublicDir = "public"
	HiddenDir = "hidden"
	CasesFile = "cases.json"
)

// SpecSchema is the required value of task.json's "schema" field.
const SpecSchema = "strictgrade.task/v1"

// ErrInvalid is wrapped by every error about a malformed task.
var ErrInvalid = errors.New("task: invalid task")

// ErrNotLoaded is returned when the files of a Task that Load did not make
// are asked for.
var ErrNotLoaded = errors.New("task: no snapshot: the task was not made by Load")

//go:embed task-v1.json
var specSchemaJSON []byte

// SpecSchemaJSON returns a copy of the JSON Schema task.json is validated
// against (task-v1.json).
func SpecSchemaJSON() []byte { return bytes.Clone(specSchemaJSON) }

// Spec is the content of task.json.
type Spec struct {
	Schema    string          `json:"schema"`
	ID        string          `json:"id"`
	Version   string          `json:"version"`
	Title     string          `json:"title,omitempty"`
	Kind      schema.TaskKind `json:"kind"`
	Runtime   string          `json:"runtime"`
	Function  *Function       `json:"function,omitempty"`
	Command   *Command        `json:"command,omitempty"`
	Data      *Data           `json:"data,omitempty"`
	Artifacts []string        `json:"artifacts"`
	// Isolation is "grade" (one candidate container runs every case; the
	// default for function tasks) or "case" (a fresh container per case;
	// always so for command and data tasks).
	Isolation string `json:"isolation,omitempty"`
	Limits    Limits `json:"limits,omitzero"`
	// Disclosure is how much the reasons of this task's verdicts may say
	// (schema.Disclosure). Empty leaves it to the harness, by default
	// digest; "detailed" opts into quoting the candidate's output for
	// human debugging; "digest" insists on the default whatever the
	// harness asks (see controller.Config.Disclosure).
	Disclosure schema.Disclosure `json:"disclosure,omitempty"`
}

// Function names the callable of a function task: module.name, imported
// from the artifacts.
type Function struct {
	Module string `json:"module"`
	Name   string `json:"name"`
}

// Command names the executable of a command task, relative to the
// artifacts.
type Command struct {
	Path string `json:"path"`
}

// Data is the command line of a data task, run in the artifacts directory
// with the case's input files in /input and an empty /output.
type Data struct {
	Argv []string `json:"argv"`
}

// Limits bound each case. Zero fields take the defaults below.
type Limits struct {
	CaseSeconds   float64 `json:"case_seconds,omitempty"`
	MemoryMB      int64   `json:"memory_mb,omitempty"`
	OutputBytes   int64   `json:"output_bytes,omitempty"`
	ArtifactBytes int64   `json:"artifact_bytes,omitempty"`
	PIDs          int64   `json:"pids,omitempty"`
}

// Defaults for Limits.
var DefaultLimits = Limits{CaseSeconds: 10, MemoryMB: 256, OutputBytes: 1 << 20, ArtifactBytes: 16 << 20, PIDs: 64}

// CaseTime returns the per-case wall-clock limit.
func (l Limits) CaseTime() time.Duration {
	return time.Duration(l.CaseSeconds * float64(time.Second))
}

// Task is a loaded, validated task.
type Task struct {
	// Dir is the directory the task was loaded from. Nothing reads it
	// after Load: the task's files come from the snapshot Load took.
	Dir   string
	Spec  Spec
	Cases *judge.Cases
	// Digest is the sha256 (hex) of the canonical archive of the whole
	// task directory as Load read it: the snapshot every later read of
	// the task's files comes from.
	Digest string

	snap *snapshot
}

// Isolation values.
const (
	PerGrade = "grade"
	PerCase  = "case"
)

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource("task-v1.json", bytes.NewReader(specSchemaJSON)); err != nil {
		return nil, err
	}
	return c.Compile("task-v1.json")
})

// maxSpecBytes bounds task.json and cases.json.
const maxSpecBytes = 4 << 20

// ParseSpec validates task.json bytes against the task schema and returns
// the spec with defaults applied.
func ParseSpec(data []byte) (*Spec, error) {
	if err := schema.CheckJSON(data, maxSpecBytes); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, SpecFile, err)
	}
	sch, err := compiled()
	if err != nil {
		return nil, fmt.Errorf("task: embedded schema: %w", err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, SpecFile, err)
	}
	if err := sch.Validate(doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, SpecFile, describe(err))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, SpecFile, err)
	}
	for _, p := range append(append([]string(nil), s.Artifacts...), commandPath(&s)...) {
		if err := checkRel(p); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, SpecFile, err)
		}
	}
	if s.Kind == schema.KindCommand && !contains(s.Artifacts, s.Command.Path) {
		return nil, fmt.Errorf("%w: %s: command path %q is not a declared artifact", ErrInvalid, SpecFile, s.Command.Path)
	}
	if s.Isolation == "" {
		s.Isolation = PerGrade
		if s.Kind != schema.KindFunction {
			s.Isolation = PerCase
		}
	}
	if s.Kind != schema.KindFunction && s.Isolation != PerCase {
		return nil, fmt.Errorf("%w: %s: %s tasks always run a fresh container per case", ErrInvalid, SpecFile, s.Kind)
	}
	s.Limits = s.Limits.withDefaults()
	return &s, nil
}

func commandPath(s *Spec) []string {
	if s.Command != nil {
		return []string{s.Command.Path}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (l Limits) withDefaults() Limits {
	if l.CaseSeconds == 0 {
		l.CaseSeconds = DefaultLimits.CaseSeconds
	}
	if l.MemoryMB == 0 {
		l.MemoryMB = DefaultLimits.MemoryMB
	}
	if l.OutputBytes == 0 {
		l.OutputBytes = DefaultLimits.OutputBytes
	}
	if l.ArtifactBytes == 0 {
		l.ArtifactBytes = DefaultLimits.ArtifactBytes
	}
	if l.PIDs == 0 {
		l.PIDs = DefaultLimits.PIDs
	}
	return l
}

// checkRel refuses "." and ".." components and other unclean paths,
// which the schema's pattern cannot exclude by itself.
func checkRel(p string) error { return judge.CheckRelPath(p) }

// describe flattens a schema validation error into one line per problem.
func describe(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := e.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			lines = append(lines, loc+": "+e.Message)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(lines, "; ")
}

// Load reads the task in dir once, into a snapshot held in memory (the
// canonical archive whose sha256 is the digest), and validates it from
// that snapshot. Everything read from the task afterwards, at grade time
// included, comes from the snapshot: a change to dir after Load is never
// graded under the digest of what was loaded.
func Load(ctx context.Context, dir string) (*Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	snap, err := takeSnapshot(ctx, abs)
	if err != nil {
		return nil, err
	}
	specData, err := snap.file(SpecFile, maxSpecBytes)
	if err != nil {
		return nil, err
	}
	spec, err := ParseSpec(specData)
	if err != nil {
		return nil, err
	}
	casesData, err := snap.file(path.Join(HiddenDir, CasesFile), maxSpecBytes)
	if err != nil {
		return nil, err
	}
	cases, err := judge.LoadCases(casesData, spec.Kind)
	if err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %w", ErrInvalid, HiddenDir, CasesFile, err)
	}
	for _, c := range cases.Cases {
		for _, files := range []map[string]string{c.InputFiles, c.ExpectedFiles} {
			for _, rel := range files {
				if err := checkRel(rel); err != nil {
					return nil, fmt.Errorf("%w: case %s: %v", ErrInvalid, c.ID, err)
				}
				if _, ok := snap.hidden[rel]; !ok {
					return nil, fmt.Errorf("%w: case %s: %s/%s is not a regular file", ErrInvalid, c.ID, HiddenDir, rel)
				}
			}
		}
		// A checker comparator's module must be there too; whether it
		// is a usable module only the judge finds out.
		if cmp := cases.Comparator(c); cmp.Kind == judge.KindChecker {
			if _, ok := snap.hidden[cmp.Module]; !ok {
				return nil, fmt.Errorf("%w: case %s: checker module %s/%s is not a regular file", ErrInvalid, c.ID, HiddenDir, cmp.Module)
			}
		}
	}
	// What the judge reads of hidden/ must be within what it reads of
	// trusted files, or every grade of the task would be an ERROR.
	read := int64(len(casesData))
	for _, rel := range cases.HiddenReads() {
		n := int64(len(snap.hidden[rel]))
		if n > judge.MaxFileSize {
			return nil, fmt.Errorf("%w: %s/%s is %d bytes, more than the judge reads of a file (%d)", ErrInvalid, HiddenDir, rel, n, judge.MaxFileSize)
		}
		read += n
	}
	if read > judge.MaxHiddenSize {
		return nil, fmt.Errorf("%w: cases.json, the expected files and the checker modules are %d bytes, more than the judge reads of hidden files (%d)", ErrInvalid, read, judge.MaxHiddenSize)
	}
	if !snap.dirs[PublicDir] {
		return nil, fmt.Errorf("%w: %s/ is missing", ErrInvalid, PublicDir)
	}
	return &Task{Dir: abs, Spec: *spec, Cases: cases, Digest: snap.digest, snap: snap}, nil
}

// taskPolicy is the firewall policy for a task author's files: roomier
// than a submission's, equally strict about types and names.
var taskPolicy = firewall.Policy{MaxTotalBytes: 1 << 30, MaxFileBytes: 256 << 20}

// WritePublic writes the canonical archive of public/ (entries rooted at
// "public/"), as it was loaded.
func (t *Task) WritePublic(ctx context.Context, w io.Writer) error {
	return t.narrow(w, PublicDir)
}

// HiddenFile returns a copy of one file of hidden/ (for inputs the
// candidate needs), as it was loaded.
func (t *Task) HiddenFile(rel string) ([]byte, error) {
	if err := checkRel(rel); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if t.snap == nil {
		return nil, ErrNotLoaded
	}
	data, ok := t.snap.hidden[rel]
	if !ok {
		return nil, fmt.Errorf("task: %s/%s: %w", HiddenDir, rel, fs.ErrNotExist)
	}
	return bytes.Clone(data), nil
}

// WriteHidden writes the canonical archive of hidden/ (entries rooted at
// "hidden/") for the judge, as it was loaded.
func (t *Task) WriteHidden(ctx context.Context, w io.Writer) error {
	return t.narrow(w, HiddenDir)
}

// narrow writes the entries of the snapshot at or below dir.
func (t *Task) narrow(w io.Writer, dir string) error {
	if t.snap == nil {
		return ErrNotLoaded
	}
	return t.snap.narrow(w, dir)
}

// Tier reports the tier a task of this package is graded in: strict.
func (t *Task) Tier() schema.Tier { return schema.TierStrict }
