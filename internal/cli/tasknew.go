package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/compat/diffgate"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// The kinds task new scaffolds: the strict tier's three and compat.
const kindCompat = "compat"

var newKinds = []string{string(schema.KindFunction), string(schema.KindCommand), string(schema.KindData), kindCompat}

// referenceDir is where a strict task keeps its reference solution, and
// referenceDiff a compat task's: in the task directory, outside public/
// and hidden/. Neither tier's loader reads them; the digest covers them.
const (
	referenceDir  = "reference"
	referenceTar  = "reference.tar"
	referenceDiff = "reference.diff"
)

func runTaskNew(ctx context.Context, args []string, stdio IO) error {
	var kind string
	fs := flagSet(stdio.Stderr, "task new", "--kind function|command|data|compat DIR",
		"Writes a scaffold task into DIR (new or empty): task.json, public/README.md, hidden/cases.json with two\n"+
			"example cases, a reference/ solution that passes (strict kinds) and a README.md explaining the format.\n"+
			"A compat scaffold needs the repository's git bundle before it loads; its README.md says how to make it.\n"+
			"Check the task with strictgrade task check DIR.")
	fs.StringVar(&kind, "kind", "", "the task's kind: "+strings.Join(newKinds, ", ")+" (required)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("takes one directory")
	}
	if !slices.Contains(newKinds, kind) {
		return usagef("--kind must be one of %s", strings.Join(newKinds, ", "))
	}
	dir := pos[0]
	if err := emptyDir(dir); err != nil {
		return err
	}
	files, err := scaffold(kind, taskID(dir))
	if err != nil {
		return err
	}
	if err := writeFiles(dir, files); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, f.name)
	}
	fmt.Fprintf(stdio.Stdout, "wrote a %s task to %s: %s\n", kind, dir, strings.Join(names, ", "))
	if kind == kindCompat {
		fmt.Fprintf(stdio.Stdout, "the task does not load yet: add the repository as %s (git bundle create %s --all, see %s),\n"+
			"set repo.base to its base commit and list the real tests; then run strictgrade task check %s\n",
			filepath.Join(dir, "repo.bundle"), filepath.Join(dir, "repo.bundle"), filepath.Join(dir, "README.md"), dir)
		return nil
	}
	fmt.Fprintf(stdio.Stdout, "next: edit it (see %s), then run strictgrade task check %s\n", filepath.Join(dir, "README.md"), dir)
	return nil
}

// parseInterspersed parses flags that may come before or after the
// positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// emptyDir accepts a directory that is missing or empty.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usagef("%s: %v", dir, err)
	case len(entries) > 0:
		return usagef("%s is not empty: task new writes into a new or empty directory", dir)
	}
	return nil
}

// taskID makes a task id from the directory's name.
func taskID(dir string) string {
	id := strings.ToLower(filepath.Base(filepath.Clean(dir)))
	id = regexp.MustCompile(`[^a-z0-9._-]+`).ReplaceAllString(id, "-")
	id = strings.TrimLeft(id, "._-")
	if len(id) > 64 {
		id = id[:64]
	}
	if id == "" {
		return "my-task"
	}
	return id
}

// file is one file of a scaffold.
type file struct {
	name string // slash-separated, relative to the task directory
	data []byte
	mode os.FileMode
}

func writeFiles(dir string, files []file) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// scaffold returns the files of a new task of kind.
func scaffold(kind, id string) ([]file, error) {
	if kind == kindCompat {
		return compatScaffold(id)
	}
	k := schema.TaskKind(kind)
	spec := task.Spec{Schema: task.SpecSchema, ID: id, Version: "1", Kind: k, Runtime: "python", Limits: task.DefaultLimits}
	var public, cases string
	var ref []file
	switch k {
	case schema.KindFunction:
		spec.Title = "Add two integers"
		spec.Function = &task.Function{Module: "solution", Name: "solve"}
		spec.Artifacts = []string{"solution.py"}
		public = "# " + spec.Title + "\n\nWrite `solution.py` with a function `solve(a, b)` that returns the sum of the integers `a` and `b`.\n"
		cases = `{
  "compare": {"kind": "json"},
  "cases": [
    {"id": "small", "args": [2, 3], "expected": 5},
    {"id": "negative", "args": [-4, 1], "expected": -3}
  ]
}
`
		ref = []file{{name: "solution.py", data: []byte("def solve(a, b):\n    return a + b\n"), mode: 0o644}}
	case schema.KindCommand:
		spec.Title = "Upper-case standard input"
		spec.Command = &task.Command{Path: "solution"}
		spec.Artifacts = []string{"solution"}
		public = "# " + spec.Title + "\n\nWrite an executable `solution` (start it with `#!/usr/bin/env python3`) that copies its standard input\nto its standard output in upper case and exits 0.\n"
		cases = `{
  "compare": {"kind": "lines"},
  "cases": [
    {"id": "hello", "stdin": "hello\n", "expected_stdout": "HELLO\n"},
    {"id": "two-lines", "argv": ["--ignored"], "stdin": "a b\nc\n", "expected_stdout": "A B\nC\n", "expected_exit": 0}
  ]
}
`
		ref = []file{{name: "solution", data: []byte("#!/usr/bin/env python3\nimport sys\n\nsys.stdout.write(sys.stdin.read().upper())\n"), mode: 0o755}}
	case schema.KindData:
		spec.Title = "Total of a file of numbers"
		spec.Data = &task.Data{Argv: []string{"python3", "-I", "solution.py"}}
		spec.Artifacts = []string{"solution.py"}
		public = "# " + spec.Title + "\n\nWrite `solution.py`, run as `python3 -I solution.py`: it reads `/input/numbers.txt` (one number a line)\nand writes their total to `/output/total.txt`.\n"
		cases = `{
  "compare": {"kind": "numbers", "abs_tol": 1e-9},
  "cases": [
    {"id": "small", "input_files": {"numbers.txt": "cases/small/numbers.txt"}, "expected_files": {"total.txt": "cases/small/total.txt"}},
    {"id": "fractions", "input_files": {"numbers.txt": "cases/fractions/numbers.txt"}, "expected_files": {"total.txt": "cases/fractions/total.txt"}}
  ]
}
`
		ref = []file{{name: "solution.py", data: []byte(`with open("/input/numbers.txt") as f:
    total = sum(float(line) for line in f if line.strip())
with open("/output/total.txt", "w") as f:
    f.write("%r\n" % total)
`), mode: 0o644}}
	}
	isolation, err := defaultIsolation(k)
	if err != nil {
		return nil, err
	}
	spec.Isolation = isolation
	specJSON, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, err
	}
	readme, err := strictReadme(k)
	if err != nil {
		return nil, err
	}
	files := []file{
		{name: task.SpecFile, data: append(specJSON, '\n'), mode: 0o644},
		{name: "README.md", data: []byte(readme), mode: 0o644},
		{name: task.PublicDir + "/README.md", data: []byte(public), mode: 0o644},
		{name: task.HiddenDir + "/" + task.CasesFile, data: []byte(cases), mode: 0o644},
	}
	if k == schema.KindData {
		for _, f := range []struct{ name, data string }{
			{"cases/small/numbers.txt", "1\n2\n3\n"}, {"cases/small/total.txt", "6.0\n"},
			{"cases/fractions/numbers.txt", "0.5\n0.25\n"}, {"cases/fractions/total.txt", "0.75\n"},
		} {
			files = append(files, file{name: task.HiddenDir + "/" + f.name, data: []byte(f.data), mode: 0o644})
		}
	}
	for _, f := range ref {
		f.name = referenceDir + "/" + f.name
		files = append(files, f)
	}
	return files, nil
}

// defaultIsolation is what task.ParseSpec makes of an omitted isolation
// for kind.
func defaultIsolation(k schema.TaskKind) (string, error) {
	spec := map[string]any{"schema": task.SpecSchema, "id": "x", "version": "1", "kind": k, "runtime": "python", "artifacts": []string{"a"}}
	switch k {
	case schema.KindFunction:
		spec["function"] = map[string]string{"module": "a", "name": "f"}
	case schema.KindCommand:
		spec["command"] = map[string]string{"path": "a"}
	case schema.KindData:
		spec["data"] = map[string][]string{"argv": {"a"}}
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	s, err := task.ParseSpec(data)
	if err != nil {
		return "", err
	}
	return s.Isolation, nil
}

// compatScaffold is what can be written of a compat task without its
// repository: the bundle and the real base commit are the author's to add.
func compatScaffold(id string) ([]file, error) {
	existing := "tests/test_existing.py::test_still_works\n"
	sum := sha256.Sum256([]byte(existing))
	spec := compat.Spec{
		Schema: compat.SpecSchema, ID: id, Version: "1", Title: "Fix mypackage so the hidden tests pass", Runtime: "python",
		Description: "description.md",
		Repo:        compat.Repo{Bundle: "repo.bundle", Base: "REPLACE-WITH-THE-40-HEX-BASE-COMMIT", PythonPath: []string{"."}},
		Existing:    compat.Existing{List: "existing-tests.txt", SHA256: hex.EncodeToString(sum[:])},
		Hidden:      compat.Hidden{Dir: "hidden", Tests: []string{"tests/test_hidden.py::test_new_behaviour"}},
		Allow:       []string{"mypackage/**"},
		Deny:        []string{},
		Limits:      compat.DefaultLimits,
	}
	specJSON, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, err
	}
	readme, err := compatReadme()
	if err != nil {
		return nil, err
	}
	return []file{
		{name: compat.SpecFile, data: append(specJSON, '\n'), mode: 0o644},
		{name: "README.md", data: []byte(readme), mode: 0o644},
		{name: "description.md", data: []byte("# Fix mypackage\n\nThe task statement the agent reads: what to change, not how it is tested.\n"), mode: 0o644},
		{name: "existing-tests.txt", data: []byte(existing), mode: 0o644},
		{name: "hidden/tests/test_hidden.py", data: []byte("from mypackage import answer\n\n\ndef test_new_behaviour():\n    assert answer() == 42\n"), mode: 0o644},
	}, nil
}

// strictReadme explains the strict task format, from the code: the task
// schema's properties, task.DefaultLimits, the judge's comparators.
func strictReadme(k schema.TaskKind) (string, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# A strictgrade %s task\n\n", k)
	b.WriteString(`This directory is a strict-tier task. ` + "`strictgrade task new`" + ` wrote it; edit it, then check it:

` + "```sh\nstrictgrade task check .\n```" + `

## Layout

- ` + "`task.json`" + `: the spec (fields below), validated against ` + "`task/task-v1.json`" + `.
- ` + "`public/`" + `: what the agent sees (its working copy starts as these files). Required, may be empty.
- ` + "`hidden/cases.json`" + `: the cases and the comparator; only the judge sees it. Expected files and a data task's
  input files go under ` + "`hidden/`" + ` too, named by their path relative to it.
- ` + "`reference/`" + `: a solution that must PASS (the artifacts, as a submission would hold them). ` + "`task check`" + ` grades it;
  no grade ever hands it to an agent, a candidate or the judge (the public view holds ` + "`public/`" + ` only, the judge
  ` + "`hidden/`" + ` only). The task digest is of the whole directory, so it covers ` + "`reference/`" + ` and this README
  too: changing them changes the digest.

`)
	format, err := strictFormat("##")
	if err != nil {
		return "", err
	}
	b.WriteString(format)
	b.WriteString("\n## Checker comparators\n\n" + checkerProtocol("###"))
	b.WriteString(`
## Checking the task

` + "`strictgrade task check DIR`" + ` grades ` + "`reference/`" + ` (or ` + "`--reference PATH`" + `, a directory or a tar) and requires
PASS, and grades an empty submission and requires FAIL (` + "`--noop=false`" + ` skips that). Before that, when a checker
decides cases, it runs the checker on the host: it must accept every expected output and answer, and in each case
reject at least one of, three wrong outputs made from it (no output, the expected output with garbage added, a
kilobyte of garbage), and answer within its fuel outputs as large as the task allows. Exit 0: the task is fit;
4: it is not (the reason is printed); 3: a grade could not be made (ERROR); 2: the task or the command line is
malformed. Then ` + "`strictgrade grade --task DIR --submission WORKSPACE`" + ` grades real work.
`)
	return b.String(), nil
}

// strictFormat is the strict task format, from the code: the task
// schema's properties, task.DefaultLimits, the judge's comparators, with
// headings at level h ("##" in a scaffold's README, deeper in the
// project's).
func strictFormat(h string) (string, error) {
	var b bytes.Buffer
	b.WriteString(h + " task.json\n\n")
	if err := writeSchemaFields(&b); err != nil {
		return "", err
	}
	b.WriteString(`
` + h + ` Kinds: how the candidate is called

The submission's declared artifacts (only they) reach a fresh candidate container, read-only at ` + "`/artifacts`" + `,
which is also the working directory. Expected values never enter it.

- ` + "`function`" + `: a trusted shim imports ` + "`function.module`" + ` from ` + "`/artifacts`" + ` and calls ` + "`function.name`" + ` with each
  case's ` + "`args`" + ` (a JSON array of positional arguments); the return value, as JSON, is compared with ` + "`expected`" + `.
  With isolation ` + "`grade`" + ` one process calls every case, in an order drawn from the grade's nonce; with ` + "`case`" + `
  each case gets a fresh container. What the callable prints goes to standard error and is not compared.
  The shim encodes the value with Python's ` + "`json`" + ` module and no NaN: a tuple becomes an array, non-string dict
  keys become strings, and a value holding NaN or an infinity (or a set, bytes, any object ` + "`json`" + ` cannot
  encode) is no value: the case FAILs as if the callable had raised (decided by ` + "`exception`" + `, reason code
  ` + "`runtime_error`" + `, "return value is not JSON"), whatever ` + "`allow_nan`" + ` says. A task that wants NaN returned
  must ask for a string such as ` + "`\"NaN\"`" + `.
- ` + "`command`" + `: ` + "`/artifacts/<command.path>`" + ` is executed (it needs its executable bit and a ` + "`#!`" + ` line) with
  the case's ` + "`argv`" + ` after it and its ` + "`stdin`" + `, in a fresh container per case; ` + "`expected_stdout`" + ` (when given)
  is compared with standard output, and the exit status must be ` + "`expected_exit`" + ` (0 when omitted).
- ` + "`data`" + `: ` + "`data.argv`" + ` is run in ` + "`/artifacts`" + `, in a fresh container per case, with the case's ` + "`input_files`" + `
  in ` + "`/input`" + ` (by the names the case gives them) and an empty ` + "`/output`" + `; each of ` + "`expected_files`" + ` must be
  written to ` + "`/output`" + ` and is compared with its expected content. Other output files are ignored.

` + h + ` hidden/cases.json

` + "```json\n" + `{"compare": {"kind": "..."}, "cases": [{"id": "...", ...}]}` + "\n```" + `

Each case has an ` + "`id`" + ` (1 to 64 of ` + "`[A-Za-z0-9._-]`" + `, quoted in verdicts) and may override ` + "`compare`" + `.
The fields a case may have, by kind:

`)
	for _, kind := range []schema.TaskKind{schema.KindFunction, schema.KindCommand, schema.KindData} {
		fmt.Fprintf(&b, "- %s: %s\n", kind, caseFieldsDoc[kind])
	}
	b.WriteString("\n" + h + " Comparators\n\n`compare.kind` is one of:\n\n")
	for _, c := range comparatorKinds {
		fmt.Fprintf(&b, "- `%s`: %s\n", c, comparatorDocs[c])
	}
	b.WriteString("\nWithout `compare`, ")
	var defs []string
	for _, kind := range []schema.TaskKind{schema.KindFunction, schema.KindCommand, schema.KindData} {
		defs = append(defs, fmt.Sprintf("a %s task uses `%s`", kind, judge.DefaultComparator(kind).Kind))
	}
	b.WriteString(strings.Join(defs, ", ") + ". Options (an option that does not apply to the kind is refused):\n\n")
	for _, name := range jsonFields(reflect.TypeFor[judge.Comparator]()) {
		if name == "kind" {
			continue
		}
		fmt.Fprintf(&b, "- `%s`: %s\n", name, comparatorOptionDocs[name])
	}
	b.WriteString(`
` + h + ` The runtime

` + "`runtime`" + ` is ` + "`python`" + `: the candidate runs in strictgrade's Python image (Debian bookworm's python3 and pytest,
built by ` + "`strictgrade images build`" + `), as an unprivileged user with a read-only root filesystem, no network
and no capabilities, under the limits above.
`)
	return b.String(), nil
}

var caseFieldsDoc = map[schema.TaskKind]string{
	schema.KindFunction: "`args` (a JSON array) and `expected` (the JSON value to return; it may be omitted when a checker decides the case, which then gets none).",
	schema.KindCommand:  "`argv` and `stdin` (both optional), and at least one of `expected_stdout` and `expected_exit` (0 when omitted).",
	schema.KindData:     "`expected_files` (at least one: output name to a path under `hidden/`), `input_files` (input name to a path under `hidden/`) and `expected_exit`, both optional.",
}

// comparatorKinds are the judge's comparator kinds, in the order its
// errors name them (TestComparatorKinds checks them against the judge; the
// judge package is left alone, as its source hash names the judge image).
var comparatorKinds = []string{judge.KindExact, judge.KindLines, judge.KindTokens, judge.KindNumbers, judge.KindJSON, judge.KindUnorderedLines, judge.KindCSV, judge.KindChecker}

var comparatorDocs = map[string]string{
	judge.KindExact:          "the bytes must be identical.",
	judge.KindLines:          "line by line; CRLF counts as LF, trailing white space on each line and trailing empty lines are dropped.",
	judge.KindTokens:         "the tokens separated by ASCII white space must be equal.",
	judge.KindNumbers:        "white-space separated numbers must be equal (as decimal values, or within the tolerances).",
	judge.KindJSON:           "the output parses as JSON and equals the expected value (objects by key; numbers as decimal values or within the tolerances).",
	judge.KindUnorderedLines: "the same lines (normalised as for lines) in any order.",
	judge.KindCSV:            "strict RFC 4180 CSV, row by row and cell by cell: a cell whose expected text is a number is compared as a number, any other as text.",
	judge.KindChecker:        "the task's own checker, a WebAssembly (WASI) module among the hidden files, accepts or rejects the output (function and command tasks; see \"Checker comparators\" for its protocol); a checker that fails makes the grade ERROR.",
}

var comparatorOptionDocs = map[string]string{
	"abs_tol":          "numbers are equal when |a-b| <= abs_tol (numbers, json, csv).",
	"rel_tol":          "numbers are equal when |a-b| <= rel_tol*max(|a|,|b|), below 1 (numbers, json, csv).",
	"allow_nan":        "NaN equals NaN (numbers, csv); otherwise NaN equals nothing.",
	"unordered_arrays": "JSON arrays compare as multisets (json).",
	"ignore_case":      "text compares after Unicode case folding (lines, tokens, unordered_lines, csv).",
	"csv_header":       "the first row is a header, compared exactly (csv).",
	"module":           "the checker module's path below hidden/ (checker, required).",
	"memory_pages": fmt.Sprintf("the checker's memory in 64 KiB pages, 1 to %d; default %d (%d MiB) (checker).",
		judge.MaxCheckerMemoryPages, judge.DefaultCheckerMemoryPages, judge.DefaultCheckerMemoryPages/16),
	"timeout_ms": fmt.Sprintf("a wall-clock backstop per case in milliseconds (fuel decides how much a checker may do), 1 to %d; default %d; all checker runs of a grade share %.0f s (checker).",
		judge.MaxCheckerTimeoutMS, judge.DefaultCheckerTimeoutMS, judge.CheckerTotalTime.Seconds()),
	"fuel": fmt.Sprintf("how much work one checker run may do, in metered units, the same on every machine; 1 to %s; default %s; all checker runs of a grade share %s; running out fails the case (%s) (checker).",
		checkerFuel.max, checkerFuel.def, checkerFuel.total, checkerFuel.code),
	"output_bytes": fmt.Sprintf("the most the checker may write as its answer, 1 to %d bytes; default %d (checker).",
		judge.MaxCheckerOutputBytes, judge.DefaultCheckerOutputBytes),
}

// fieldDocs describes task.json's properties; writeSchemaFields adds what
// the schema says of each (required, values, ranges) and the defaults.
var fieldDocs = map[string]string{
	"schema":                "identifies the format.",
	"id":                    "the task's name, quoted in every verdict.",
	"version":               "the task's version; change it when the cases change.",
	"title":                 "a one-line title for people.",
	"kind":                  "how the candidate is called (see Kinds below).",
	"runtime":               "the image the candidate runs in (see The runtime below).",
	"function":              "function tasks only (and required there): the callable, imported from the artifacts.",
	"function.module":       "the module to import: `solution` for `solution.py`.",
	"function.name":         "the callable in it.",
	"command":               "command tasks only (and required there): the executable.",
	"command.path":          "its path relative to the submission root; it must be one of `artifacts`.",
	"data":                  "data tasks only (and required there): the command line.",
	"data.argv":             "the command line, run in `/artifacts`, for instance `[\"python3\", \"-I\", \"solution.py\"]`.",
	"artifacts":             "the files, relative to the submission root, a submission must hold; only they are graded, and a missing one FAILs the grade.",
	"isolation":             "`grade`: one candidate container runs every case (function tasks only); `case`: a fresh container per case (always so for command and data tasks).",
	"disclosure":            "how much a verdict's reasons may say. Omitted: the harness decides (digest by default). `digest` quotes positions and digests of the candidate's output only, whatever the harness asks; `detailed` allows escaped excerpts of it, for debugging. The judge never quotes expected values; under `detailed` a checker's reject message is quoted, and it is task text that may quote them.",
	"limits":                "what each case may use; an omitted field takes its default.",
	"limits.case_seconds":   "CPU seconds per case: its CPU-time budget, with a wall-clock backstop of twice it plus 2 s for a candidate that sleeps ([Time limits](docs/time-limits.md)).",
	"limits.memory_mb":      "memory of the candidate container, MiB.",
	"limits.output_bytes":   "the most output a case may produce.",
	"limits.artifact_bytes": "the most bytes the submission's artifacts may hold in all.",
	"limits.pids":           "the most processes in the candidate container.",
}

// writeSchemaFields writes one line per property of task-v1.json, nested
// objects' properties indented, with what the schema says of each.
func writeSchemaFields(w io.Writer) error {
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(task.SpecSchemaJSON()))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return err
	}
	defs, _ := root["$defs"].(map[string]any)
	defaults := map[string]any{}
	for name, v := range jsonValues(task.DefaultLimits) {
		defaults["limits."+name] = v
	}
	var isos []string
	for _, k := range []schema.TaskKind{schema.KindFunction, schema.KindCommand, schema.KindData} {
		iso, err := defaultIsolation(k)
		if err != nil {
			return err
		}
		isos = append(isos, fmt.Sprintf("`%s` for %s tasks", iso, k))
	}
	defaults["isolation"] = strings.Join(isos, ", ")
	var walk func(obj map[string]any, prefix, indent string)
	walk = func(obj map[string]any, prefix, indent string) {
		props, _ := obj["properties"].(map[string]any)
		required := map[string]bool{}
		if req, ok := obj["required"].([]any); ok {
			for _, r := range req {
				required[fmt.Sprint(r)] = true
			}
		}
		for _, name := range orderedKeys(props, prefix) {
			p, _ := props[name].(map[string]any)
			full := prefix + name
			req := "optional"
			if required[name] {
				req = "required"
			}
			doc := fieldDocs[full]
			if doc == "" {
				doc = "see `task/task-v1.json`."
			}
			fmt.Fprintf(w, "%s- `%s` (%s): %s%s", indent, name, req, doc, constraints(p, defs))
			if d, ok := defaults[full]; ok {
				fmt.Fprintf(w, " Default: %v.", d)
			}
			fmt.Fprintln(w)
			if _, ok := p["properties"]; ok {
				walk(p, full+".", indent+"  ")
			}
		}
	}
	walk(root, "", "")
	return nil
}

// orderedKeys lists props in fieldDocs' documented order (the order of
// task.Spec and its types), then any the docs do not know, sorted.
func orderedKeys(props map[string]any, prefix string) []string {
	order := append([]string{"schema", "id", "version", "title", "kind", "runtime", "function", "command", "data", "artifacts", "isolation", "disclosure", "limits"},
		jsonFields(reflect.TypeFor[task.Limits]())...)
	order = append(order, "module", "name", "path", "argv")
	var keys []string
	for _, k := range order {
		if _, ok := props[k]; ok && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range props {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(keys, rest...)
}

// constraints says in words what a property's schema requires.
func constraints(p, defs map[string]any) string {
	if ref, ok := p["$ref"].(string); ok {
		if d, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any); ok {
			return " A clean relative path:" + strings.TrimPrefix(constraints(d, defs), " Schema:")
		}
	}
	var parts []string
	if c, ok := p["const"]; ok {
		parts = append(parts, fmt.Sprintf("always `%v`", c))
	}
	if e, ok := p["enum"].([]any); ok {
		var vs []string
		for _, v := range e {
			vs = append(vs, fmt.Sprintf("`%v`", v))
		}
		parts = append(parts, "one of "+strings.Join(vs, ", "))
	}
	if t, ok := p["type"].(string); ok && t != "object" {
		article := "a "
		if strings.ContainsAny(t[:1], "aeiou") {
			article = "an "
		}
		parts = append(parts, article+t)
	}
	if pat, ok := p["pattern"].(string); ok {
		parts = append(parts, "matching `"+pat+"`")
	}
	for _, r := range []struct{ key, text string }{
		{"minLength", "at least %v characters"}, {"maxLength", "at most %v characters"},
		{"minItems", "at least %v items"}, {"maxItems", "at most %v items"},
		{"exclusiveMinimum", "above %v"}, {"minimum", "at least %v"}, {"maximum", "at most %v"},
	} {
		if v, ok := p[r.key]; ok {
			parts = append(parts, fmt.Sprintf(r.text, v))
		}
	}
	if u, ok := p["uniqueItems"].(bool); ok && u {
		parts = append(parts, "no duplicates")
	}
	if items, ok := p["items"].(map[string]any); ok {
		if s := constraints(items, defs); s != "" {
			parts = append(parts, "each item"+strings.TrimPrefix(strings.TrimSuffix(s, "."), " Schema"))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " Schema: " + strings.Join(parts, ", ") + "."
}

// jsonFields lists the JSON names of a struct type's fields, in order.
func jsonFields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// jsonValues maps the JSON names of a struct's fields to their values.
func jsonValues(v any) map[string]any {
	rv := reflect.ValueOf(v)
	m := map[string]any{}
	for i, f := range slices.Collect(rv.Type().Fields()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = rv.Field(i).Interface()
		}
	}
	return m
}

// compatFieldDocs describes compat task.json's fields, by JSON path.
var compatFieldDocs = map[string]string{
	"schema":              "always `" + compat.SpecSchema + "`.",
	"id":                  "the task's name (`[A-Za-z0-9][A-Za-z0-9._:/@+-]`, at most 256 characters).",
	"version":             "1 to 64 printable characters.",
	"title":               "a one-line title, at most 256 characters.",
	"runtime":             "`python`, the only runtime.",
	"description":         "the agent-visible task statement (a file in this directory); everything else here is the oracle's alone.",
	"repo":                "the oracle's own copy of the repository; the agent's working copy is never used.",
	"repo.bundle":         "a complete git bundle (no prerequisite commits) with repo.base as one of its ref tips.",
	"repo.base":           "the full (40 hex digits) commit id the agent's diff applies to.",
	"repo.pythonpath":     "repository directories put on sys.path by the judge-owned pytest configuration; `[\".\"]` by default, `[\"src\"]` for a src layout.",
	"existing":            "the repository's existing suite, which must keep passing.",
	"existing.list":       "a file of pytest node ids, one per line, each ending in a newline.",
	"existing.sha256":     "the sha256 of that file (`sha256sum existing-tests.txt`); change it with the list.",
	"hidden":              "the hidden suite, which must pass after the diff and fail at the base.",
	"hidden.dir":          "a directory mirroring repository paths; its files are copied into the checkout after the diff is applied.",
	"hidden.tests":        "the node ids that must pass, each in a file under hidden.dir or in a test file of the base commit, used unchanged.",
	"allow":               "globs of the paths a diff may touch (at least one); nothing else passes the diff gate.",
	"deny":                "globs added to the default deny list (tests, test configuration, conftest.py, sitecustomize.py, *.pth, build and CI files), which always applies.",
	"limits":              "per oracle container, and the largest diff the gate reads; an omitted field takes its default.",
	"limits.wall_seconds": "CPU seconds per container, its CPU-time budget, with a wall-clock backstop of twice it plus 2 s ([Time limits](docs/time-limits.md)) (1-7200).",
	"limits.memory_mb":    "memory per container, MiB (64-16384).",
	"limits.pids":         "processes per container (16-4096; never more than one per 4 MiB of memory).",
	"limits.tmpfs_mb":     "size of /tmp, MiB (16-4096).",
	"limits.diff_bytes":   fmt.Sprintf("the largest diff, bytes (1024-%d).", diffgate.MaxDiffBytes),
	"limits.diff_files":   fmt.Sprintf("the most file sections in a diff (1-%d).", diffgate.MaxDiffFiles),
	"env":                 "extra deterministic environment variables the tests need; upper-case names; PATH, HOME, PYTHON*, PYTEST*, LD_*, LC_*, GIT_* and the like are refused.",
}

// compatFormat is the compat task format, from compat.Spec and
// compat.DefaultLimits, with headings at level h, and what the runtime
// image holds besides the tested code.
func compatFormat(h string) string {
	var b bytes.Buffer
	b.WriteString(h + " task.json\n\n")
	defaults := jsonValues(compat.DefaultLimits)
	var walk func(t reflect.Type, prefix, indent string)
	walk = func(t reflect.Type, prefix, indent string) {
		for f := range t.Fields() {
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" || name == "-" {
				continue
			}
			full := prefix + name
			req := "required"
			if strings.Contains(opts, "omit") {
				req = "optional"
			}
			doc := compatFieldDocs[full]
			if doc == "" {
				doc = "see the compat package's documentation."
			}
			fmt.Fprintf(&b, "%s- `%s` (%s): %s", indent, name, req, doc)
			if prefix == "limits." {
				fmt.Fprintf(&b, " Default: %v.", defaults[name])
			}
			fmt.Fprintln(&b)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, full+".", indent+"  ")
			}
		}
	}
	walk(reflect.TypeFor[compat.Spec](), "", "")
	b.WriteString(`
Globs (allow, deny) use the firewall's syntax: a pattern without an inner "/" matches at any depth, "**" spans
directories, a trailing "/" matches a directory and everything below it, and matching ignores case.

A hidden test id names a test in a file under ` + "`hidden/`" + ` or, unchanged, in a test file of the base commit
(` + "`tests/test_core.py::test_x`" + ` need not be copied under ` + "`hidden/`" + `): the diff gate protects both alike.

` + h + ` The runtime

` + "`runtime`" + ` is ` + "`python`" + `: the tests run in strictgrade's Python image, Debian bookworm's python3 and pytest. Its
own Python packages are on every test's ` + "`sys.path`" + ` besides the checkout, and those pytest imports before any
test (such as ` + "`pluggy`" + `, ` + "`iniconfig`" + ` and ` + "`packaging`" + `) are already imported when the tests start:
`)
	pkgs := make([]string, len(images.PythonPackages))
	for i, p := range images.PythonPackages {
		pkgs[i] = "`" + p + "`"
	}
	b.WriteString(strings.Join(pkgs, ", ") + ".\n")
	b.WriteString(`
A repository with a top-level package of one of these names (at its top or in ` + "`src/`" + `), or whose package
` + "`repo.pythonpath`" + ` does not reach (a src layout needs ` + "`[\"src\"]`" + `), would have a copy outside the checkout
tested instead of its own: the baseline looks where each top-level package of the checkout resolves when the
tests run and QUARANTINES such a task (reason code ` + "`packages_shadowed`" + `, naming the package and where it
resolves).
`)
	return b.String()
}

// compatReadme explains the compat task format, from compat.Spec and
// compat.DefaultLimits.
func compatReadme() (string, error) {
	var b bytes.Buffer
	b.WriteString(`# A strictgrade compat task

A compat-tier task is "fix this repository so the hidden tests pass": the agent's unified diff is filtered by
the diff gate, applied to the oracle's own checkout of the repository, the hidden tests are copied in, and the
existing suite then the hidden one run under pytest in fresh, read-only, network-less containers of
strictgrade's Python image. ` + "`strictgrade task new`" + ` wrote what can be written without the repository.

## What you must add

**This task does not load until you add ` + "`repo.bundle`" + `.** Make it from the repository, at the commit the agent
starts from:

` + "```sh" + `
cd path/to/repo
git rev-parse HEAD                                  # the base commit: put it in task.json as repo.base
git bundle create /path/to/this/task/repo.bundle HEAD --all   # a complete bundle: no prerequisite commits
git bundle verify /path/to/this/task/repo.bundle
` + "```" + `

Then:

- list the repository's existing tests, one pytest node id per line, in ` + "`existing-tests.txt`" + `
  (` + "`pytest --collect-only -q`" + ` prints them), and put ` + "`sha256sum existing-tests.txt`" + ` in ` + "`existing.sha256`" + `;
- put the hidden tests under ` + "`hidden/`" + ` at the repository paths they belong at (` + "`hidden/tests/test_x.py`" + `
  becomes ` + "`tests/test_x.py`" + ` in the checkout) and list their node ids in ` + "`hidden.tests`" + `; no hidden test
  may be in the existing list;
- set ` + "`allow`" + ` to the paths a fix may touch, and write the task statement in ` + "`description.md`" + `;
- optionally, put a diff that fixes the task in ` + "`reference.diff`" + ` (` + "`git diff > reference.diff`" + ` in a fixed
  checkout): ` + "`task check`" + ` grades it and requires PASS. It is never handed to the oracle's containers (they
  receive the bundle and ` + "`hidden/`" + ` only); the task digest, of the whole directory, covers it.

`)
	b.WriteString(compatFormat("##"))
	b.WriteString(`
## Checking the task

` + "`strictgrade task check DIR`" + ` runs the baseline (no diff): a fit task's hidden tests fail at the base for the
right reason, its existing suite passes and its packages come from the checkout. With ` + "`reference.diff`" + ` (or
` + "`--reference FILE`" + `) it also grades that diff and requires PASS. Exit 0: fit; 4: QUARANTINED (the reason is printed);
3: ERROR; 2: malformed task. It records the baseline it computed (by task digest and runtime image) in
strictgrade's cache directory, where ` + "`strictgrade grade`" + ` and ` + "`strictgrade run`" + ` find it: their verdicts then
record the baseline and whether the patch flipped it.
`)
	return b.String(), nil
}
