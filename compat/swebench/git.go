package swebench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The commit Import makes from base_commit's tree: fixed, so that the same
// instance always gives the same repo.base.
const (
	commitName  = "strictgrade import"
	commitEmail = "import@strictgrade.invalid"
	commitDate  = "315532800 +0000" // compat.SourceDateEpoch
	baseRef     = "refs/heads/base"
)

// maxGitOutput bounds what one git command may print to standard output
// (a tree listing of a very large repository, a hidden file).
const maxGitOutput = 256 << 20

// errTooMuchOutput is returned when git prints more than maxGitOutput.
var errTooMuchOutput = errors.New("output too large")

// scratch is a bare repository that borrows the user's clone's objects
// (git clone --shared): git writes only here.
type scratch struct {
	gitDir string
	env    []string
}

// gitEnv is the environment of every git command: the caller's, without
// any GIT_* variable, with no system or global configuration, no prompt,
// and C messages.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "LC_ALL=") || strings.HasPrefix(kv, "LANGUAGE=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0",
		"GIT_ALLOW_PROTOCOL=file", "LC_ALL=C",
		// A partial clone's missing objects are an error, never a fetch.
		"GIT_NO_LAZY_FETCH=1",
		// The clone may belong to another user; git reads from it only.
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
		"GIT_CONFIG_KEY_1=core.hooksPath", "GIT_CONFIG_VALUE_1="+os.DevNull,
	)
}

// gitError is a git command that failed, with what it printed.
type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), msg)
}

func (e *gitError) Unwrap() error { return e.err }

// message is what git said, for an error shown to a person.
func (e *gitError) message() string {
	msg := strings.TrimSpace(e.stderr)
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	if msg == "" {
		return e.err.Error()
	}
	return msg
}

// runGit runs git with env (plus extra) and returns its standard output.
func runGit(ctx context.Context, env, extra []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(append([]string(nil), env...), extra...)
	cmd.Dir = os.TempDir()
	var stdout limitedBuffer
	stdout.limit = maxGitOutput
	var stderr limitedBuffer
	stderr.limit = 64 << 10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stdout.over {
		return nil, &gitError{args: args, err: errTooMuchOutput}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &gitError{args: args, err: err, stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

// limitedBuffer keeps at most limit bytes and notes that more came.
type limitedBuffer struct {
	bytes.Buffer
	limit int
	over  bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// newScratch makes a bare repository in dir that shares the objects of the
// clone at repo. Nothing is written to repo.
func newScratch(ctx context.Context, repo, dir string) (*scratch, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("swebench: the git command is needed to read the repository: install git")
	}
	env := gitEnv()
	if _, err := runGit(ctx, env, nil, "clone", "--quiet", "--bare", "--shared", "--no-tags", "--template=", "--", repo, dir); err != nil {
		var ge *gitError
		if errors.As(err, &ge) {
			return nil, refused("%s is not a git repository git can read: %s", repo, ge.message())
		}
		return nil, err
	}
	s := &scratch{gitDir: dir, env: append(env, "GIT_DIR="+dir)}
	format, err := s.git(ctx, nil, "rev-parse", "--show-object-format")
	if err != nil {
		return nil, err
	}
	if f := strings.TrimSpace(string(format)); f != "sha1" {
		return nil, refused("%s uses %s object ids; compat tasks name commits by SHA-1", repo, f)
	}
	return s, nil
}

// git runs a git command in the scratch repository.
func (s *scratch) git(ctx context.Context, extra []string, args ...string) ([]byte, error) {
	return runGit(ctx, s.env, extra, args...)
}

// treeEntry is one entry of a recursive tree listing.
type treeEntry struct {
	mode, typ, object string
}

// lsTree lists a tree recursively: path → entry.
func (s *scratch) lsTree(ctx context.Context, treeish string) (map[string]treeEntry, error) {
	out, err := s.git(ctx, nil, "ls-tree", "-r", "-z", "--full-tree", treeish)
	if err != nil {
		return nil, err
	}
	entries := map[string]treeEntry{}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("swebench: unexpected git ls-tree output %q", rec)
		}
		entries[string(path)] = treeEntry{mode: f[0], typ: f[1], object: f[2]}
	}
	return entries, nil
}
