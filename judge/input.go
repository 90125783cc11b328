package judge

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/strictgrade/strictgrade/schema"
)

// DefaultRoot is where the judge's input volume is mounted.
const DefaultRoot = "/judge"

// Read limits of ReadInput. Trusted inputs and candidate outputs never
// share a budget, so that no output can leave the judge without room for a
// file it needs.
const (
	// MaxFileSize is the most the judge reads of one file.
	MaxFileSize = 16 << 20
	// MaxHiddenSize is the most it reads of the task's hidden files
	// (cases.json and expected files) in all.
	MaxHiddenSize = 64 << 20
	// MaxOutputsSize is the most it reads of candidate outputs in all. An
	// output larger than what is left of it fails its case (output_limit).
	MaxOutputsSize = 64 << 20

	// meta.json and each result.json have limits of their own; a result
	// is decoded and dropped, so their number (at most MaxCases) bounds
	// what they hold.
	maxMetaSize   = 1 << 20
	maxResultSize = 64 << 10
)

// limits are the read limits of one ReadInput; tests shrink them.
type limits struct {
	file, hidden, outputs int64
}

var defaultLimits = limits{file: MaxFileSize, hidden: MaxHiddenSize, outputs: MaxOutputsSize}

// Meta is <root>/meta.json, written by the controller.
type Meta struct {
	// Verdict is the skeleton of the verdict: everything only the
	// controller knows (schema, run id, task, tier, submission, images,
	// controller, nonce, timings, the disclosure policy the reasons must
	// be written under, and the order the cases were called in). Judge
	// fills in the outcome, the reasons, the cases and the tests hash,
	// and keeps the rest as it is.
	Verdict schema.Verdict `json:"verdict"`
	// Kind is the task kind: function, command or data.
	Kind schema.TaskKind `json:"kind"`
}

// RunResult is <root>/outputs/<i>/result.json: how case i ran, as the
// controller observed it. The controller writes it, so it is trusted; a
// malformed one is an error, not a FAIL.
type RunResult struct {
	// Exit says how the process ended: exited, signaled, timeout, oom,
	// output_limit or not_run.
	Exit schema.Exit `json:"exit"`
	// ExitCode is the exit status when Exit is exited (0..255).
	ExitCode int `json:"exit_code"`
	// DurationMS is the wall-clock time of the case.
	DurationMS int64 `json:"duration_ms"`
	// CPUMS is the CPU time of the case, where the sandbox measured it.
	CPUMS *int64 `json:"cpu_ms,omitempty"`
	// Limit is the time limit a timeout met: cpu or wall.
	Limit schema.Limit `json:"limit,omitempty"`
	// StdoutTruncated and StderrTruncated say a stream hit its limit. A
	// truncated stdout fails the case (output_limit); stderr is never
	// graded.
	StdoutTruncated bool `json:"stdout_truncated,omitempty"`
	StderrTruncated bool `json:"stderr_truncated,omitempty"`
	// Error, when not empty, is a failure the controller pinned on the
	// candidate, such as output files the firewall rejected. The case
	// fails (rejected_artifact) with this text as its reason.
	Error string `json:"error,omitempty"`
	// TooLarge lists, by their place in Cases.Reads (0-based, ascending),
	// the outputs of the case the controller left out of the judge's
	// input because they are larger than the judge reads (OutputBudget).
	// The judge records each as too large, with the limit its own budget
	// gives it there, as it would have found by reading the file; it
	// reads nothing of it and charges nothing for it.
	TooLarge []int `json:"too_large,omitempty"`
}

// Input is everything the judge decides on.
type Input struct {
	Meta  Meta
	Cases *Cases
	// Hidden holds the expected files and checker modules the cases
	// name, by their path relative to the hidden directory.
	Hidden map[string][]byte
	// Outputs holds what each case produced, by case index; it has one
	// entry per case.
	Outputs []Output
	// OnChecker, when set, is told what every checker run used (task
	// check records the fuel its probes used).
	OnChecker func(CheckerUse)
}

// Output is what one case produced. Only the parts the case is graded on
// are read: stdout for command cases with expected_stdout, the shim's
// record (value.json) for function cases, the expected file names for
// data cases. Stderr is never read.
type Output struct {
	// Result is the controller's record; nil when result.json is missing,
	// meaning the case did not run.
	Result *RunResult
	// Stdout is the candidate's standard output; nil when missing.
	Stdout *Blob
	// Files holds candidate output files by name; a name that is absent
	// was not produced (or is not a regular file).
	Files map[string]*Blob
}

// Blob is candidate bytes.
type Blob struct {
	Data []byte
	// TooLarge says the file was larger than Limit, the most the judge
	// would read of it (MaxFileSize, or what remained of MaxOutputsSize);
	// Data is then empty.
	TooLarge bool
	Limit    int64
}

// Reads lists the candidate files ReadInput reads of case i of a task of
// kind, relative to outputs/<i>/, in the order it reads them: the shim's
// record of a function case; the standard output of a command case graded
// on it (expected_stdout or a checker); the expected files of a data
// case, by name. It reads nothing else, so nothing else of what a
// candidate leaves needs to reach the judge.
func (cs *Cases) Reads(kind schema.TaskKind, i int) []string {
	c := cs.Cases[i]
	switch kind {
	case schema.KindFunction:
		return []string{valuePath}
	case schema.KindCommand:
		if c.ExpectedStdout != nil || cs.Comparator(c).Kind == KindChecker {
			return []string{StdoutFile}
		}
	case schema.KindData:
		names := sortedKeys(c.ExpectedFiles)
		for k, name := range names {
			names[k] = FilesDir + "/" + name
		}
		return names
	}
	return nil
}

// HiddenReads lists the files of the hidden directory ReadInput reads
// after cases.json, in the order it reads them: the expected files the
// cases name, then their checker modules, each once. It reads nothing
// else of the hidden directory (input files, say), so nothing else needs
// to reach the judge.
func (cs *Cases) HiddenReads() []string {
	var out []string
	seen := map[string]bool{}
	add := func(rel string) {
		if !seen[rel] {
			seen[rel] = true
			out = append(out, rel)
		}
	}
	for _, c := range cs.Cases {
		for _, name := range sortedKeys(c.ExpectedFiles) {
			add(c.ExpectedFiles[name])
		}
	}
	for _, c := range cs.Cases {
		if cmp := cs.Comparator(c); cmp.Kind == KindChecker {
			add(cmp.Module)
		}
	}
	return out
}

// OutputBudget is what ReadInput reads of candidate outputs: each file
// whole when it is at most Limit bytes, which is MaxFileSize or what is
// left of MaxOutputsSize, whichever is less, and the files in case order
// and, within a case, in the order of Cases.Reads. A file larger than
// Limit is too large: it fails its case (output_limit), and the budget is
// charged nothing for it, so that the outputs after it are read within
// what remains. A controller walks the outputs with an OutputBudget of its
// own to send the judge only what it reads (RunResult.TooLarge).
type OutputBudget struct {
	file, left int64
}

// NewOutputBudget returns the budget of one ReadInput.
func NewOutputBudget() *OutputBudget { return defaultLimits.outputBudget() }

func (l limits) outputBudget() *OutputBudget { return &OutputBudget{file: l.file, left: l.outputs} }

// Limit is the most the judge reads of the next file.
func (b *OutputBudget) Limit() int64 { return min(b.file, b.left) }

// Take reports whether the next file, of n bytes, is read whole, and
// charges it when it is.
func (b *OutputBudget) Take(n int64) bool {
	if n > b.Limit() {
		return false
	}
	b.left -= n
	return true
}

// Names inside the input root.
const (
	MetaFile    = "meta.json"
	HiddenDir   = "hidden"
	CasesFile   = "cases.json"
	OutputsDir  = "outputs"
	ResultFile  = "result.json"
	StdoutFile  = "stdout"
	FilesDir    = "files"
	ValueFile   = "value.json"
	valuePath   = FilesDir + "/" + ValueFile
	hiddenCases = HiddenDir + "/" + CasesFile
)

// ReadInput reads the judge's input from the directory root (DefaultRoot in
// the judge container):
//
//	meta.json                       Meta (controller)
//	hidden/cases.json               Cases (the task's hidden directory, verbatim)
//	hidden/<path>                   expected files named by expected_files,
//	                                and checker modules (Comparator.Module)
//	outputs/<i>/result.json         RunResult of case i, 0-based (controller)
//	outputs/<i>/stdout              candidate's standard output
//	outputs/<i>/stderr              candidate's standard error (never read)
//	outputs/<i>/files/<name>        data: candidate output files
//	outputs/<i>/files/value.json    function: the shim's record
//
// Every read is bounded, never by a size the file system declares, and
// never follows a symbolic link: MaxFileSize per file (less for meta.json
// and result.json), MaxHiddenSize for the hidden files in all, and
// MaxOutputsSize for candidate outputs in all. Every trusted file is read
// before any candidate output, and the two never share a budget. Trusted
// files (meta.json, cases.json, expected files, result.json) that are
// missing, malformed or too large are an error wrapping ErrInput, ErrCases
// or ErrTooLarge. Candidate files never cause an error: one that is
// missing, not a regular file or too large is recorded as such and fails
// its case.
func ReadInput(root string) (*Input, error) { return readInput(root, defaultLimits) }

func readInput(root string, lim limits) (*Input, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	defer r.Close()
	rd := &reader{root: r, file: lim.file, hidden: lim.hidden, outputs: lim.outputBudget()}

	data, err := rd.trusted(MetaFile, maxMetaSize, nil)
	if err != nil {
		return nil, err
	}
	in := &Input{Hidden: map[string][]byte{}}
	if _, err := decodeStrict(data, &in.Meta); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInput, MetaFile, err)
	}
	if data, err = rd.trusted(hiddenCases, rd.file, &rd.hidden); err != nil {
		return nil, err
	}
	if in.Cases, err = LoadCases(data, in.Meta.Kind); err != nil {
		return nil, fmt.Errorf("%s: %w", hiddenCases, err)
	}
	for _, rel := range in.Cases.HiddenReads() {
		if in.Hidden[rel], err = rd.trusted(HiddenDir+"/"+rel, rd.file, &rd.hidden); err != nil {
			return nil, err
		}
	}
	if err := rd.checkOutputs(len(in.Cases.Cases)); err != nil {
		return nil, err
	}
	in.Outputs = make([]Output, len(in.Cases.Cases))
	for i := range in.Cases.Cases {
		dir := OutputsDir + "/" + strconv.Itoa(i) + "/"
		data, err := rd.trusted(dir+ResultFile, maxResultSize, nil)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not run: the case fails
		}
		if err != nil {
			return nil, err
		}
		res := new(RunResult)
		if _, err := decodeStrict(data, res); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInput, dir+ResultFile, err)
		}
		in.Outputs[i].Result = res
	}
	// Only now the candidate's bytes, in case order.
	for i := range in.Cases.Cases {
		dir := OutputsDir + "/" + strconv.Itoa(i) + "/"
		out := &in.Outputs[i]
		if out.Result == nil {
			continue
		}
		out.Files = map[string]*Blob{}
		reads := in.Cases.Reads(in.Meta.Kind, i)
		tooLarge := out.Result.TooLarge
		if !slices.IsSorted(tooLarge) || len(slices.Compact(slices.Clone(tooLarge))) != len(tooLarge) ||
			len(tooLarge) > 0 && (tooLarge[0] < 0 || tooLarge[len(tooLarge)-1] >= len(reads)) {
			return nil, fmt.Errorf("%w: %s: too_large %v does not name outputs the judge reads (0..%d, ascending)", ErrInput, dir+ResultFile, tooLarge, len(reads)-1)
		}
		for k, rel := range reads {
			var b *Blob
			if _, cut := slices.BinarySearch(tooLarge, k); cut {
				b = &Blob{TooLarge: true, Limit: rd.outputs.Limit()}
			} else {
				b = rd.candidate(dir + rel)
			}
			switch {
			case rel == StdoutFile:
				out.Stdout = b
			case b != nil:
				out.Files[strings.TrimPrefix(rel, FilesDir+"/")] = b
			}
		}
	}
	return in, nil
}

// reader reads files below a root, each within a limit and, for the
// hidden files and the candidate's outputs, within a budget of their own.
type reader struct {
	root *os.Root
	file int64 // per file
	// What is left of the budgets.
	hidden  int64
	outputs *OutputBudget
}

// trusted reads a file the controller or the task provides, at most limit
// bytes and, when budget is not nil, at most what is left of it. A missing
// file is an error matching fs.ErrNotExist (and ErrInput).
func (rd *reader) trusted(name string, limit int64, budget *int64) ([]byte, error) {
	data, tooLarge, err := rd.read(name, limit, budget)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %s is missing: %w", ErrInput, name, fs.ErrNotExist)
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %v", ErrInput, name, err)
	case tooLarge && budget != nil:
		return nil, fmt.Errorf("%w: %s is larger than %d bytes, or than what remains of the %d bytes the judge reads of hidden files", ErrTooLarge, name, limit, MaxHiddenSize)
	case tooLarge:
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, name, limit)
	}
	return data, nil
}

// candidate reads a file the candidate produced, within the outputs
// budget; nil means it is missing or not a regular file.
func (rd *reader) candidate(name string) *Blob {
	limit := rd.outputs.Limit()
	data, tooLarge, err := rd.read(name, limit, nil)
	if err != nil {
		return nil
	}
	if !tooLarge {
		rd.outputs.Take(int64(len(data)))
	}
	return &Blob{Data: data, TooLarge: tooLarge, Limit: limit}
}

// read reads name, refusing symbolic links and anything but a regular file
// along the way, and at most limit bytes (and what is left of *budget,
// which it then charges).
func (rd *reader) read(name string, limit int64, budget *int64) (data []byte, tooLarge bool, err error) {
	parts := strings.Split(name, "/")
	for i := range parts {
		p := path.Join(parts[:i+1]...)
		st, err := rd.root.Lstat(p)
		if err != nil {
			return nil, false, err
		}
		last := i == len(parts)-1
		switch {
		case !last && !st.IsDir():
			return nil, false, fmt.Errorf("%s is not a directory: %w", p, fs.ErrNotExist)
		case last && !st.Mode().IsRegular():
			return nil, false, fmt.Errorf("%s is not a regular file (%s)", p, st.Mode().Type())
		}
	}
	f, err := rd.root.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if budget != nil {
		limit = min(limit, *budget)
	}
	data, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > limit {
		return nil, true, nil
	}
	if budget != nil {
		*budget -= int64(len(data))
	}
	return data, false, nil
}

// checkOutputs refuses an outputs directory that holds anything but the
// directories 0..n-1: the controller and the task disagree.
func (rd *reader) checkOutputs(n int) error {
	st, err := rd.root.Lstat(OutputsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no case ran
	}
	if err != nil || !st.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrInput, OutputsDir)
	}
	f, err := rd.root.Open(OutputsDir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInput, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(n + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: %v", ErrInput, OutputsDir, err)
	}
	if len(entries) > n {
		return fmt.Errorf("%w: %s holds more than %d entries, one per case", ErrInput, OutputsDir, n)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	slices.Sort(names)
	for _, name := range names {
		i, err := strconv.Atoi(name)
		if err != nil || i < 0 || i >= n || strconv.Itoa(i) != name {
			return fmt.Errorf("%w: %s/%s is not the directory of a case (0..%d)", ErrInput, OutputsDir, quoteString(name), n-1)
		}
	}
	return nil
}
