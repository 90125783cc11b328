package swebench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/compat/diffgate"
)

// Names of the files Import writes into a task directory, besides those
// compat.Load reads (SpecFile, the description, the lists, hidden/ and the
// bundle).
const (
	// ReferenceFile is the reference fix, the instance's patch: task
	// check grades it and requires PASS.
	ReferenceFile = "reference.diff"
	// SourceFile records where the task came from.
	SourceFile = "swebench.json"

	descriptionFile = "description.md"
	existingFile    = "existing-tests.txt"
	hiddenDir       = "hidden"
	bundleFile      = "repo.bundle"
)

// ErrOutNotEmpty is returned when Options.Out exists and is not an empty
// directory: Import never writes into a directory that holds something.
var ErrOutNotEmpty = errors.New("swebench: the output directory exists and is not empty")

// CheckFunc checks a task Import built, before Import puts it in place: t
// is loaded from a temporary directory and reference is the instance's
// patch. It returns nil when the task is fit to grade. Whatever else it
// returns, Import removes the task and returns that error as it is.
type CheckFunc func(ctx context.Context, t *compat.Task, reference []byte) error

// Options configures Import.
type Options struct {
	// Repo is a local clone of the instance's repository that holds
	// base_commit (required). Import reads it and never writes to it.
	Repo string
	// Out is the task directory to make (required): it must not exist or
	// be an empty directory; its parent is made if missing.
	Out string
	// Check decides whether the built task is fit (required); the command
	// line runs the baseline and grades the reference with it, as task
	// check does.
	Check CheckFunc
	// Limits are the task's limits; zero fields take compat.DefaultLimits.
	Limits compat.Limits
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

// Result describes an imported task.
type Result struct {
	// Dir is the task directory (Options.Out, absolute).
	Dir string `json:"dir"`
	// ID is the task id (the instance id), Digest the task's digest.
	ID     string `json:"id"`
	Digest string `json:"digest"`
	// Base is the task's repo.base, the commit Import made of
	// BaseCommit's tree (BaseTree).
	Base       string `json:"base"`
	BaseCommit string `json:"base_commit"`
	BaseTree   string `json:"base_tree"`
	// HiddenFiles are the repository paths of the files under hidden/.
	HiddenFiles []string `json:"hidden_files"`
	// Hidden and Existing count the suites' tests.
	Hidden   int `json:"hidden_tests"`
	Existing int `json:"existing_tests"`
	// PythonPath is the task's repo.pythonpath.
	PythonPath []string `json:"pythonpath"`
	// Ignored are the instance's fields the task does not use.
	Ignored []string `json:"ignored_fields,omitempty"`
}

// Source is the content of SourceFile.
type Source struct {
	Format     string `json:"format"`
	Repo       string `json:"repo"`
	InstanceID string `json:"instance_id"`
	BaseCommit string `json:"base_commit"`
	BaseTree   string `json:"base_tree"`
	Base       string `json:"base"`
}

// Import builds the compat task of in from the clone opts.Repo, checks it
// with opts.Check and moves it to opts.Out. An instance it cannot serve is
// refused with an error wrapping ErrRefused; see the package documentation
// for what it checks. Nothing is left at opts.Out unless the whole task
// was built and the check accepted it.
func Import(ctx context.Context, in *Instance, opts Options) (*Result, error) {
	if in == nil || opts.Repo == "" || opts.Out == "" || opts.Check == nil {
		return nil, errors.New("swebench: Import needs an instance, Options.Repo, Options.Out and Options.Check")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out, err := filepath.Abs(opts.Out)
	if err != nil {
		return nil, err
	}
	// git runs elsewhere: a relative path must not change its meaning.
	if opts.Repo, err = filepath.Abs(opts.Repo); err != nil {
		return nil, err
	}
	if err := CheckOut(out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".strictgrade-import-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	b := &builder{in: in, opts: opts, log: log, tmp: tmp, dir: filepath.Join(tmp, "task")}
	res, err := b.build(ctx)
	if err != nil {
		return nil, err
	}
	t, err := compat.Load(ctx, b.dir)
	if err != nil {
		if errors.Is(err, compat.ErrInvalid) {
			return nil, refused("the task it makes does not load: %v", err)
		}
		return nil, err
	}
	if err := gateReference(t, []byte(in.Patch)); err != nil {
		return nil, err
	}
	log.Info("checking the task", "id", t.Spec.ID)
	if err := opts.Check(ctx, t, []byte(in.Patch)); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Out may have been made meanwhile; only an empty directory gives way.
	if err := os.Remove(out); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s: %v", ErrOutNotEmpty, out, err)
	}
	if err := os.Rename(b.dir, out); err != nil {
		return nil, err
	}
	res.Dir, res.Digest = out, t.Digest
	log.Info("imported", "id", res.ID, "dir", out, "digest", t.Digest)
	return res, nil
}

// CheckOut accepts a task directory path that does not exist or is an
// empty directory, and returns an error wrapping ErrOutNotEmpty otherwise.
func CheckOut(out string) error {
	entries, err := os.ReadDir(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %s: %v", ErrOutNotEmpty, out, err)
	case len(entries) > 0:
		return fmt.Errorf("%w: %s holds %d entries", ErrOutNotEmpty, out, len(entries))
	}
	return nil
}

// gateReference refuses a reference fix an agent could not submit: one the
// task's diff gate would not keep whole.
func gateReference(t *compat.Task, patch []byte) error {
	f, err := t.Gate().Filter(patch)
	if err != nil {
		return refused("patch: %v", err)
	}
	if f.Sections == 0 {
		return refused("patch holds no file sections")
	}
	if f.DroppedTotal > 0 {
		var what []string
		for _, d := range f.Dropped[:min(len(f.Dropped), 5)] {
			what = append(what, fmt.Sprintf("%s (%s)", d.Path, d.Rule))
		}
		if f.DroppedTotal > len(what) {
			what = append(what, fmt.Sprintf("and %d more", f.DroppedTotal-len(what)))
		}
		return refused("patch touches what the diff gate drops from an agent's diff, so no agent could submit this fix: %s", strings.Join(what, ", "))
	}
	return nil
}

// builder holds the state of one build.
type builder struct {
	in   *Instance
	opts Options
	log  *slog.Logger
	tmp  string // scratch space, removed by Import
	dir  string // the task being built, inside tmp
	sc   *scratch
	// blobs caches file contents by object id.
	blobs map[string][]byte
}

// build writes the whole task into b.dir.
func (b *builder) build(ctx context.Context) (*Result, error) {
	in := b.in
	b.log.Info("reading the repository", "repo", b.opts.Repo, "base_commit", in.BaseCommit)
	sc, err := newScratch(ctx, b.opts.Repo, filepath.Join(b.tmp, "git"))
	if err != nil {
		return nil, err
	}
	b.sc, b.blobs = sc, map[string][]byte{}
	if got, err := sc.git(ctx, nil, "rev-parse", "--verify", "--quiet", in.BaseCommit+"^{commit}"); err != nil || strings.TrimSpace(string(got)) != in.BaseCommit {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, refused("base_commit %s is not a commit of the clone at %s (fetch it there first: the import uses no network)", in.BaseCommit, b.opts.Repo)
	}
	baseFiles, err := sc.lsTree(ctx, in.BaseCommit)
	if err != nil {
		return nil, err
	}
	for p, e := range baseFiles {
		if e.mode == "160000" {
			return nil, refused("the repository has a submodule at %s: the oracle's bundle cannot carry it", p)
		}
	}
	tree, err := sc.git(ctx, nil, "rev-parse", "--verify", in.BaseCommit+"^{tree}")
	if err != nil {
		return nil, err
	}
	res := &Result{ID: in.InstanceID, BaseCommit: in.BaseCommit, BaseTree: strings.TrimSpace(string(tree)),
		Hidden: len(in.FailToPass), Existing: len(in.PassToPass), Ignored: in.Ignored}
	if res.Base, err = b.commit(ctx, res.BaseTree); err != nil {
		return nil, err
	}

	// The hidden files: what the test patch adds or changes, and every file
	// of a hidden test.
	after, touched, err := b.applyTestPatch(ctx)
	if err != nil {
		return nil, err
	}
	hidden := map[string]bool{}
	for _, p := range touched {
		e, ok := after[p]
		switch {
		case !ok:
			return nil, refused("test_patch deletes or renames away %s: hidden tests can add and replace files, not remove them", p)
		case e.mode != "100644" && e.mode != "100755":
			return nil, refused("test_patch leaves %s as a %s entry, not a regular file", p, e.mode)
		}
		hidden[p] = true
	}
	if err := b.checkTests(ctx, after, fieldFailToPass, in.FailToPass); err != nil {
		return nil, err
	}
	if err := b.checkTests(ctx, after, fieldPassToPass, in.PassToPass); err != nil {
		return nil, err
	}
	for _, id := range in.FailToPass {
		hidden[idFile(id)] = true
	}
	res.HiddenFiles = slices.Sorted(func(yield func(string) bool) {
		for p := range hidden {
			if !yield(p) {
				return
			}
		}
	})
	if err := b.checkReference(ctx); err != nil {
		return nil, err
	}

	// Write the task.
	b.log.Info("writing the task", "hidden_files", len(res.HiddenFiles))
	if err := os.Mkdir(b.dir, 0o755); err != nil {
		return nil, err
	}
	for _, p := range res.HiddenFiles {
		data, err := b.blob(ctx, after[p].object)
		if err != nil {
			return nil, err
		}
		if err := writeFile(b.dir, path.Join(hiddenDir, p), data); err != nil {
			return nil, err
		}
	}
	// One pack thread: the same objects give the same bundle bytes.
	if _, err := sc.git(ctx, nil, "-c", "pack.threads=1", "bundle", "create", "--quiet",
		filepath.Join(b.dir, bundleFile), baseRef); err != nil {
		return nil, err
	}
	existing := ""
	for _, id := range in.PassToPass {
		existing += id + "\n"
	}
	sum := sha256.Sum256([]byte(existing))
	res.PythonPath = pythonPath(baseFiles)
	spec := compat.Spec{
		Schema: compat.SpecSchema, ID: in.InstanceID, Version: "1", Title: title(in),
		Runtime: "python", Description: descriptionFile,
		Repo:     compat.Repo{Bundle: bundleFile, Base: res.Base, PythonPath: res.PythonPath},
		Existing: compat.Existing{List: existingFile, SHA256: hex.EncodeToString(sum[:])},
		Hidden:   compat.Hidden{Dir: hiddenDir, Tests: in.FailToPass},
		Allow:    []string{"**"},
		Limits:   b.opts.Limits,
	}
	specJSON, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, err
	}
	source, err := json.MarshalIndent(Source{Format: "swebench", Repo: in.Repo, InstanceID: in.InstanceID,
		BaseCommit: in.BaseCommit, BaseTree: res.BaseTree, Base: res.Base}, "", "  ")
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{compat.SpecFile, append(specJSON, '\n')},
		{descriptionFile, []byte(in.ProblemStatement)},
		{existingFile, []byte(existing)},
		{ReferenceFile, []byte(in.Patch)},
		{SourceFile, append(source, '\n')},
	} {
		if err := writeFile(b.dir, f.name, f.data); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// commit makes the task's base: a commit of tree with no parent and a
// fixed author, committer, date and message, under baseRef.
func (b *builder) commit(ctx context.Context, tree string) (string, error) {
	env := []string{"GIT_AUTHOR_NAME=" + commitName, "GIT_AUTHOR_EMAIL=" + commitEmail, "GIT_AUTHOR_DATE=" + commitDate,
		"GIT_COMMITTER_NAME=" + commitName, "GIT_COMMITTER_EMAIL=" + commitEmail, "GIT_COMMITTER_DATE=" + commitDate}
	msg := fmt.Sprintf("%s at %s\n", b.in.Repo, b.in.BaseCommit)
	out, err := b.sc.git(ctx, env, "commit-tree", "-m", msg, tree)
	if err != nil {
		return "", err
	}
	c := strings.TrimSpace(string(out))
	if _, err := b.sc.git(ctx, nil, "update-ref", baseRef, c); err != nil {
		return "", err
	}
	return c, nil
}

// applyTestPatch checks the shape of the test patch, applies it to an
// index of the base and returns the tree after it and the paths it names.
func (b *builder) applyTestPatch(ctx context.Context) (map[string]treeEntry, []string, error) {
	g := diffgate.Gate{Allow: []string{"**"}, MaxBytes: diffgate.MaxDiffBytes, MaxFiles: diffgate.MaxDiffFiles}
	f, err := g.Filter([]byte(b.in.TestPatch))
	if err != nil {
		return nil, nil, refused("test_patch: %v", err)
	}
	if f.DroppedTotal > 0 {
		d := f.Dropped[0]
		return nil, nil, refused("test_patch holds what hidden files cannot carry: %s (%s)", d.Path, d.Rule)
	}
	if f.Sections == 0 {
		return nil, nil, refused("test_patch holds no file sections")
	}
	tree, err := b.apply(ctx, "test", fieldTestPatch, b.in.TestPatch)
	if err != nil {
		return nil, nil, err
	}
	after, err := b.sc.lsTree(ctx, tree)
	if err != nil {
		return nil, nil, err
	}
	return after, f.Paths, nil
}

// checkReference checks that the patch applies at the base.
func (b *builder) checkReference(ctx context.Context) error {
	_, err := b.apply(ctx, "reference", fieldPatch, b.in.Patch)
	return err
}

// apply applies patch to a fresh index of the base as the oracle applies
// a diff (git apply -p1, no fuzz, no three-way merge) and returns the
// resulting tree.
func (b *builder) apply(ctx context.Context, name, field, patch string) (string, error) {
	file := filepath.Join(b.tmp, name+".patch")
	if err := os.WriteFile(file, []byte(patch), 0o600); err != nil {
		return "", err
	}
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(b.tmp, name+".index")}
	if _, err := b.sc.git(ctx, index, "read-tree", baseRef); err != nil {
		return "", err
	}
	if _, err := b.sc.git(ctx, index, "apply", "--cached", "--check", "--whitespace=nowarn", "-p1", file); err != nil {
		var ge *gitError
		if errors.As(err, &ge) {
			return "", refused("%s does not apply at base_commit: %s", field, ge.message())
		}
		return "", err
	}
	if _, err := b.sc.git(ctx, index, "apply", "--cached", "--whitespace=nowarn", "-p1", file); err != nil {
		return "", err
	}
	tree, err := b.sc.git(ctx, index, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(tree)), nil
}

// checkTests refuses ids whose file does not exist after the test patch or
// does not mention the test's first name.
func (b *builder) checkTests(ctx context.Context, after map[string]treeEntry, field string, ids []string) error {
	for _, id := range ids {
		file := idFile(id)
		e, ok := after[file]
		if !ok {
			return refused("%s test %s: %s does not exist at base_commit after the test patch", field, clip(id), clip(file))
		}
		if e.mode != "100644" && e.mode != "100755" {
			return refused("%s test %s: %s is not a regular file", field, clip(id), clip(file))
		}
		data, err := b.blob(ctx, e.object)
		if err != nil {
			return err
		}
		if name := firstName(id); !mentions(data, name) {
			return refused("%s test %s: %s has nothing named %s after the test patch", field, clip(id), clip(file), clip(name))
		}
	}
	return nil
}

// blob returns a file's content by object id.
func (b *builder) blob(ctx context.Context, object string) ([]byte, error) {
	if data, ok := b.blobs[object]; ok {
		return data, nil
	}
	data, err := b.sc.git(ctx, nil, "cat-file", "blob", object)
	if err != nil {
		return nil, err
	}
	b.blobs[object] = data
	return data, nil
}

// idFile is the file part of a node id, firstName the first name after it
// without parameters.
func idFile(id string) string {
	f, _, _ := strings.Cut(id, "::")
	return f
}

func firstName(id string) string {
	_, rest, _ := strings.Cut(id, "::")
	name, _, _ := strings.Cut(rest, "::")
	name, _, _ = strings.Cut(name, "[")
	return name
}

// mentions reports whether name occurs in data as a whole identifier.
func mentions(data []byte, name string) bool {
	if name == "" {
		return false
	}
	ident := func(c byte) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
	}
	s := string(data)
	for i := 0; ; {
		j := strings.Index(s[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !ident(s[start-1])) && (end == len(s) || !ident(s[end])) {
			return true
		}
		i = start + 1
	}
}

// pythonPath is ["."], with "src" added when the base has a Python package
// or module directly under src/.
func pythonPath(files map[string]treeEntry) []string {
	for p := range files {
		rest, ok := strings.CutPrefix(p, "src/")
		if !ok {
			continue
		}
		if dir, file, ok := strings.Cut(rest, "/"); ok && file == "__init__.py" && dir != "" || !ok && strings.HasSuffix(rest, ".py") && rest != "__init__.py" {
			return []string{".", "src"}
		}
	}
	return []string{"."}
}

// title is a one-line title: the repository and the first line of the
// problem statement, printable, at most 200 bytes.
func title(in *Instance) string {
	line := ""
	for l := range strings.SplitSeq(in.ProblemStatement, "\n") {
		// A Markdown heading's marks are not part of the title.
		if l = strings.TrimSpace(strings.TrimLeft(l, "# \t")); l != "" {
			line = l
			break
		}
	}
	var sb strings.Builder
	for _, r := range in.Repo + " " + in.InstanceID + ": " + line {
		switch {
		case r == utf8.RuneError, r < 0x20, r >= 0x7f && r <= 0x9f, r == 0x2028, r == 0x2029,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			r = ' '
		}
		if sb.Len()+utf8.RuneLen(r) > 200 {
			break
		}
		sb.WriteRune(r)
	}
	return strings.TrimSpace(sb.String())
}

// writeFile writes data to dir/name (slash-separated), making parents.
func writeFile(dir, name string, data []byte) error {
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}
