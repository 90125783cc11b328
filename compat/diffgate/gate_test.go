package diffgate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/strictgrade/strictgrade/schema"
)

// testGate is the textkit task's gate.
var testGate = Gate{
	Allow: []string{"textkit/**"},
	Deny:  DefaultDeny,
	Protected: []Protected{
		{Path: "tests/test_slugify_hidden.py", Rule: RuleHiddenTest},
		{Path: "tests/test_core.py", Rule: RuleExistingTest},
	},
}

const modifyCore = `diff --git a/textkit/core.py b/textkit/core.py
index 9e7c120..962e910 100644
--- a/textkit/core.py
+++ b/textkit/core.py
@@ -1,3 +1,3 @@
 import re
-x = 1
+x = 2
 y = 3
`

// newFile is a git section adding path with one line.
func newFile(path string) string {
	return "diff --git a/" + path + " b/" + path + "\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n+++ b/" + path +
		"\n@@ -0,0 +1 @@\n+pass\n"
}

func drop(path, rule string) schema.DroppedHunk { return schema.DroppedHunk{Path: path, Rule: rule} }

func TestGateFilter(t *testing.T) {
	tests := []struct {
		name    string
		diff    string
		paths   []string
		dropped []schema.DroppedHunk
		ignored int
	}{
		{name: "empty diff", diff: "", paths: []string{}},
		{name: "modify allowed", diff: modifyCore, paths: []string{"textkit/core.py"}},
		{name: "new allowed file", diff: newFile("textkit/extra.py"), paths: []string{"textkit/extra.py"}},
		{name: "root conftest", diff: newFile("conftest.py"), paths: []string{}, dropped: []schema.DroppedHunk{drop("conftest.py", "denylist:conftest.py")}},
		{name: "conftest in an allowed dir", diff: newFile("textkit/conftest.py"), paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit/conftest.py", "denylist:conftest.py")}},
		{name: "deny ignores case", diff: newFile("textkit/ConfTest.PY"), paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit/ConfTest.PY", "denylist:conftest.py")}},
		{name: "hidden test file", diff: newFile("tests/test_slugify_hidden.py"), paths: []string{}, dropped: []schema.DroppedHunk{drop("tests/test_slugify_hidden.py", RuleHiddenTest)}},
		{name: "existing test file deleted", diff: "diff --git a/tests/test_core.py b/tests/test_core.py\ndeleted file mode 100644\nindex 1111111..0000000\n--- a/tests/test_core.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n",
			paths: []string{}, dropped: []schema.DroppedHunk{drop("tests/test_core.py", RuleExistingTest)}},
		{name: "tests dir at any depth", diff: newFile("textkit/tests/helper.py"), paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit/tests/helper.py", "denylist:tests/")}},
		{name: "test module in package", diff: newFile("textkit/test_x.py"), paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit/test_x.py", "denylist:test_*.py")}},
		{name: "pytest.ini", diff: newFile("pytest.ini"), paths: []string{}, dropped: []schema.DroppedHunk{drop("pytest.ini", "denylist:pytest.ini")}},
		{name: "pyproject", diff: newFile("pyproject.toml"), paths: []string{}, dropped: []schema.DroppedHunk{drop("pyproject.toml", "denylist:pyproject.toml")}},
		{name: "setup.cfg", diff: newFile("setup.cfg"), paths: []string{}, dropped: []schema.DroppedHunk{drop("setup.cfg", "denylist:setup.cfg")}},
		{name: "tox.ini", diff: newFile("tox.ini"), paths: []string{}, dropped: []schema.DroppedHunk{drop("tox.ini", "denylist:tox.ini")}},
		{name: "sitecustomize", diff: newFile("sitecustomize.py"), paths: []string{}, dropped: []schema.DroppedHunk{drop("sitecustomize.py", "denylist:sitecustomize.py")}},
		{name: "usercustomize in package", diff: newFile("textkit/usercustomize.py"), paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit/usercustomize.py", "denylist:usercustomize.py")}},
		{name: "pth in package", diff: newFile("textkit/hook.pth"), paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit/hook.pth", "denylist:*.pth")}},
		{name: "bytecode", diff: newFile("textkit/__pycache__/core.cpython-311.pyc"), paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit/__pycache__/core.cpython-311.pyc", "denylist:__pycache__/")}},
		{name: "ci workflow", diff: newFile(".github/workflows/ci.yml"), paths: []string{}, dropped: []schema.DroppedHunk{drop(".github/workflows/ci.yml", "denylist:.github/")}},
		{name: "makefile", diff: newFile("Makefile"), paths: []string{}, dropped: []schema.DroppedHunk{drop("Makefile", "denylist:Makefile")}},
		{name: "setup.py", diff: newFile("setup.py"), paths: []string{}, dropped: []schema.DroppedHunk{drop("setup.py", "denylist:setup.py")}},
		{name: "entry points", diff: newFile("textkit.egg-info/entry_points.txt"), paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit.egg-info/entry_points.txt", "denylist:*.egg-info/")}},
		{name: "git metadata", diff: newFile("textkit/.git/config"), paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit/.git/config", "denylist:.git")}},
		{name: "not allowlisted", diff: newFile("README.md"), paths: []string{}, dropped: []schema.DroppedHunk{drop("README.md", RuleNotAllowed)}},
		{name: "rename into a denied name", diff: "diff --git a/textkit/a.py b/conftest.py\nsimilarity index 100%\nrename from textkit/a.py\nrename to conftest.py\n",
			paths: []string{}, dropped: []schema.DroppedHunk{drop("conftest.py", "denylist:conftest.py")}},
		{name: "rename out of an existing test", diff: "diff --git a/tests/test_core.py b/textkit/t.py\nsimilarity index 100%\nrename from tests/test_core.py\nrename to textkit/t.py\n",
			paths: []string{}, dropped: []schema.DroppedHunk{drop("tests/test_core.py", RuleExistingTest)}},
		{name: "rename within the allowlist", diff: "diff --git a/textkit/a.py b/textkit/b.py\nsimilarity index 90%\nrename from textkit/a.py\nrename to textkit/b.py\nindex 1111111..2222222 100644\n--- a/textkit/a.py\n+++ b/textkit/b.py\n@@ -1 +1 @@\n-a\n+b\n",
			paths: []string{"textkit/a.py", "textkit/b.py"}},
		{name: "mode change only", diff: "diff --git a/textkit/core.py b/textkit/core.py\nold mode 100644\nnew mode 100755\n", paths: []string{"textkit/core.py"}},
		{name: "symlink", diff: "diff --git a/textkit/link.py b/textkit/link.py\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/textkit/link.py\n@@ -0,0 +1 @@\n+../tests/test_core.py\n\\ No newline at end of file\n",
			paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit/link.py", RuleSymlink)}},
		{name: "submodule", diff: "diff --git a/textkit/sub b/textkit/sub\nnew file mode 160000\nindex 0000000..1111111\n--- /dev/null\n+++ b/textkit/sub\n@@ -0,0 +1 @@\n+Subproject commit 1111111111111111111111111111111111111111\n",
			paths: []string{}, dropped: []schema.DroppedHunk{drop("textkit/sub", RuleSubmodule)}},
		{name: "binary marker", diff: "diff --git a/textkit/x.bin b/textkit/x.bin\nindex 1111111..2222222 100644\nBinary files a/textkit/x.bin and b/textkit/x.bin differ\n" + modifyCore,
			paths: []string{"textkit/core.py"}, dropped: []schema.DroppedHunk{drop("textkit/x.bin", RuleBinary)}},
		{name: "git binary patch", diff: "diff --git a/textkit/x.bin b/textkit/x.bin\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 5\nMcmZQzWMX9j0000D00RI3\n\nliteral 0\nHcmV?d00001\n\n" + modifyCore,
			paths: []string{"textkit/core.py"}, dropped: []schema.DroppedHunk{drop("textkit/x.bin", RuleBinary)}},
		{name: "one record per dropped hunk", diff: "diff --git a/setup.py b/setup.py\n--- a/setup.py\n+++ b/setup.py\n@@ -1 +1 @@\n-a\n+b\n@@ -5 +5 @@\n-c\n+d\n",
			paths: []string{}, dropped: []schema.DroppedHunk{drop("setup.py", "denylist:setup.py"), drop("setup.py", "denylist:setup.py")}},
		{name: "name with spaces", diff: "diff --git a/textkit/my file.py b/textkit/my file.py\n--- a/textkit/my file.py\t\n+++ b/textkit/my file.py\t\n@@ -1 +1 @@\n-a\n+b\n",
			paths: []string{"textkit/my file.py"}},
		{name: "quoted octal name", diff: "diff --git \"a/textkit/caf\\303\\251.py\" \"b/textkit/caf\\303\\251.py\"\n--- \"a/textkit/caf\\303\\251.py\"\n+++ \"b/textkit/caf\\303\\251.py\"\n@@ -1 +1 @@\n-a\n+b\n",
			paths: []string{"textkit/café.py"}},
		{name: "traditional diff", diff: "--- a/textkit/core.py\t2024-01-01 00:00:00\n+++ b/textkit/core.py\t2024-01-02 00:00:00\n@@ -1 +1 @@\n-a\n+b\n",
			paths: []string{"textkit/core.py"}},
		{name: "commit message and diffstat ignored", diff: "From 1111 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n\n---\n textkit/core.py | 2 +-\n\n" + modifyCore + "-- \n2.39.2\n",
			paths: []string{"textkit/core.py"}, ignored: 8},
		{name: "no newline markers and empty context", diff: "diff --git a/textkit/core.py b/textkit/core.py\n--- a/textkit/core.py\n+++ b/textkit/core.py\n@@ -1,3 +1,3 @@\n a\n\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
			paths: []string{"textkit/core.py"}},
		{name: "deleted line that looks like a header", diff: "diff --git a/textkit/core.py b/textkit/core.py\n--- a/textkit/core.py\n+++ b/textkit/core.py\n@@ -1,2 +1 @@\n--- a/conftest.py\n-x\n+++ b/conftest.py\n",
			paths: []string{"textkit/core.py"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := testGate.Filter([]byte(tt.diff))
			if err != nil {
				t.Fatal(err)
			}
			if tt.dropped == nil {
				tt.dropped = []schema.DroppedHunk{}
			}
			if diff := cmp.Diff(tt.dropped, f.Dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.paths, f.Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			if f.Ignored != tt.ignored {
				t.Errorf("ignored %d lines, want %d", f.Ignored, tt.ignored)
			}
			if len(tt.dropped) == 0 && tt.ignored == 0 && string(f.Diff) != tt.diff {
				t.Errorf("kept diff differs from the input:\n%s", f.Diff)
			}
			checkIdempotent(t, testGate, f)
		})
	}
}

// checkIdempotent filters the gate's output again: nothing more may be
// dropped or changed.
func checkIdempotent(t *testing.T, g Gate, f *Filtered) {
	t.Helper()
	again, err := g.Filter(f.Diff)
	if err != nil {
		t.Fatalf("the gate rejects its own output: %v", err)
	}
	if !bytes.Equal(again.Diff, f.Diff) || again.DroppedTotal != 0 || !slicesEqual(again.Paths, f.Paths) {
		t.Fatalf("filtering twice is not filtering once:\n%q\n%q", f.Diff, again.Diff)
	}
}

func slicesEqual(a, b []string) bool { return cmp.Equal(a, b) }

func TestGateKeepsSectionsVerbatim(t *testing.T) {
	d := newFile("conftest.py") + modifyCore + newFile("sitecustomize.py")
	f, err := testGate.Filter([]byte(d))
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Diff) != modifyCore {
		t.Fatalf("kept %q, want exactly the textkit section", f.Diff)
	}
	if f.Sections != 3 || f.DroppedTotal != 2 {
		t.Fatalf("sections %d, dropped %d", f.Sections, f.DroppedTotal)
	}
	if f.SHA256 != sha256Hex([]byte(modifyCore)) {
		t.Fatal("SHA256 is not the digest of the kept diff")
	}
	// A section cut off without a final newline is passed on with one.
	f, err = testGate.Filter([]byte(strings.TrimSuffix(modifyCore, "\n")))
	if err != nil || string(f.Diff) != modifyCore {
		t.Fatalf("got %q, %v", f.Diff, err)
	}
}

func TestGateMalformed(t *testing.T) {
	tests := []struct {
		name, diff, want string
	}{
		{"not a diff", "hello\nworld\n", "no file sections"},
		{"hunk outside a section", "@@ -1 +1 @@\n-a\n+b\n", "hunk outside a file section"},
		{"bad hunk header", "--- a/textkit/x.py\n+++ b/textkit/x.py\n@@ -1 +1 @\n-a\n+b\n", "bad hunk header"},
		{"truncated hunk", "--- a/textkit/x.py\n+++ b/textkit/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n", "truncated"},
		{"hunk ends early", "--- a/textkit/x.py\n+++ b/textkit/x.py\n@@ -1,2 +1,2 @@\n a\nzzz\n", "hunk ends early"},
		{"marker first", "--- a/textkit/x.py\n+++ b/textkit/x.py\n@@ -1 +1 @@\n\\ No newline at end of file\n", "hunk ends early"},
		{"too many lines", "--- a/textkit/x.py\n+++ b/textkit/x.py\n@@ -1 +1,2 @@\n a\n-b\n+c\n", "more lines"},
		{"empty hunk", "--- a/textkit/x.py\n+++ b/textkit/x.py\n@@ -0,0 +0,0 @@\n", "empty hunk"},
		{"headers without hunks", "diff --git a/textkit/x.py b/textkit/x.py\n--- a/textkit/x.py\n+++ b/textkit/x.py\n", "without hunks"},
		{"minus without plus", "diff --git a/textkit/x.py b/textkit/x.py\n--- a/textkit/x.py\n@@ -1 +1 @@\n-a\n+b\n", `"---" without "+++"`},
		{"both sides null", "--- /dev/null\n+++ /dev/null\n@@ -1 +1 @@\n-a\n+b\n", "both sides"},
		{"unknown names", "diff --git a/x b/y c/z\nold mode 100644\nnew mode 100755\n", "cannot tell which file"},
		{"traversal", newFile("textkit/../conftest.py"), "path"},
		{"dot component", newFile("textkit/./x.py"), "path"},
		{"control character", "--- \"a/textkit/x\\001.py\"\n+++ \"b/textkit/x\\001.py\"\n@@ -1 +1 @@\n-a\n+b\n", "path"},
		{"not NFC", newFile("textkit/cafe\u0301.py"), "path"},
		{"no prefix", "--- x.py\n+++ x.py\n@@ -1 +1 @@\n-a\n+b\n", "no directory prefix"},
		{"space in a traditional name", "--- a/textkit/my file.py\n+++ b/textkit/my file.py\n@@ -1 +1 @@\n-a\n+b\n", "spaces"},
		{"bad mode", "diff --git a/textkit/x.py b/textkit/x.py\nnew mode 9\n", "bad mode"},
		{"bad quoting", "diff --git \"a/textkit/x.py b/textkit/x.py\n--- \"a/textkit/x\n+++ b/textkit/x.py\n@@ -1 +1 @@\n-a\n+b\n", "unterminated"},
		{"binary outside a section", "GIT binary patch\nliteral 0\n", "binary patch outside"},
		{"repeated rename lines", "diff --git a/textkit/a.py b/textkit/b.py\nrename from textkit/a.py\nrename to textkit/b.py\nrename to textkit/c.py\n", "repeated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := testGate.Filter([]byte(tt.diff))
			if !errors.Is(err, ErrDiff) {
				t.Fatalf("got %v, want an error matching ErrDiff", err)
			}
			var de *DiffError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// sections returns a diff of n sections adding files at the given paths.
func sections(n int, path func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(newFile(path(i)))
	}
	return b.String()
}

func TestGateLimits(t *testing.T) {
	inPackage := func(i int) string { return fmt.Sprintf("textkit/f%d.py", i) }
	small := Gate{Allow: testGate.Allow, Deny: testGate.Deny, MaxBytes: 2048, MaxFiles: 3}
	tests := []struct {
		name string
		gate Gate
		diff string
		want string // empty: accepted
	}{
		{name: "at the default size", gate: testGate, diff: modifyCore + strings.Repeat("x\n", (DefaultDiffBytes-len(modifyCore))/2)},
		{name: "over the default size", gate: testGate, diff: strings.Repeat("x", DefaultDiffBytes+1), want: "4194305 bytes; this task accepts at most 4194304"},
		{name: "over the largest size, unparsed", gate: testGate, diff: "@@ not even a diff" + strings.Repeat("\n", MaxDiffBytes), want: "this task accepts at most 4194304"},
		{name: "at the default file count", gate: testGate, diff: sections(DefaultDiffFiles, inPackage)},
		{name: "over the default file count", gate: testGate, diff: sections(DefaultDiffFiles+1, inPackage), want: "more than 1000 file sections"},
		{name: "dropped sections count too", gate: testGate, diff: sections(DefaultDiffFiles+1, func(i int) string { return fmt.Sprintf("docs/f%d.md", i) }),
			want: "more than 1000 file sections"},
		{name: "a task's own size limit", gate: small, diff: modifyCore + strings.Repeat("x\n", 1024), want: "this task accepts at most 2048"},
		{name: "a task's own file limit", gate: small, diff: sections(4, inPackage), want: "more than 3 file sections"},
		{name: "within a task's own limits", gate: small, diff: sections(3, inPackage)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := tt.gate.Filter([]byte(tt.diff))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrDiffTooLarge) || !errors.Is(err, ErrDiff) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v (%v), want an error matching ErrDiffTooLarge that mentions %q", err, f, tt.want)
			}
		})
	}
}

// TestGateHostileShapes runs the gate on diffs at the default size limit
// shaped against its parser: each finishes in one pass, so this test
// would run for hours, not seconds, if one did not.
func TestGateHostileShapes(t *testing.T) {
	fill := func(prefix, unit, suffix string) string {
		n := (DefaultDiffBytes - len(prefix) - len(suffix)) / len(unit)
		return prefix + strings.Repeat(unit, n) + suffix
	}
	tests := []struct {
		name string
		diff string
		ok   bool
	}{
		{name: "header of spaces", diff: fill("diff --git a/", " ", "\nold mode 100644\nnew mode 100755\n")},
		{name: "header of names and spaces", diff: fill("diff --git a/", "x ", "\nold mode 100644\nnew mode 100755\n")},
		{name: "header of slashes and spaces", diff: fill("diff --git a/", "/ ", "\nold mode 100644\nnew mode 100755\n")},
		{name: "quoted header", diff: fill("diff --git \"a/", `\303\251`, "\" b/x\nold mode 100644\nnew mode 100755\n")},
		{name: "one long hunk line", diff: fill("diff --git a/textkit/x.py b/textkit/x.py\n--- a/textkit/x.py\n+++ b/textkit/x.py\n@@ -1 +1 @@\n-a\n+", "b", "\n"), ok: true},
		{name: "many hunks", diff: fill("diff --git a/textkit/x.py b/textkit/x.py\n--- a/textkit/x.py\n+++ b/textkit/x.py\n", "@@ -1 +1 @@\n-a\n+b\n", ""), ok: true},
		{name: "many dropped hunks", diff: fill("diff --git a/setup.py b/setup.py\n--- a/setup.py\n+++ b/setup.py\n", "@@ -1 +1 @@\n-a\n+b\n", ""), ok: true},
		{name: "a long binary patch", diff: fill("diff --git a/textkit/x b/textkit/x\nGIT binary patch\nliteral 1\n", "Icmx\n", ""), ok: true},
		{name: "lines outside any section", diff: fill("", "x\n", modifyCore), ok: true},
		{name: "empty lines", diff: fill("", "\n", modifyCore), ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := testGate.Filter([]byte(tt.diff))
			if tt.ok && err != nil || !tt.ok && !errors.Is(err, ErrDiff) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// TestSameNameSplits checks the one-pass split of a "diff --git" line
// against the obvious quadratic search, on short random lines.
func TestSameNameSplits(t *testing.T) {
	naive := func(h string) []int {
		var found []int
		for i := 0; i < len(h); i++ {
			if h[i] != ' ' {
				continue
			}
			x, errX := stripPrefix(h[:i])
			y, errY := stripPrefix(h[i+1:])
			if errX == nil && errY == nil && x == y {
				found = append(found, i)
			}
		}
		return found
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		b := make([]byte, rng.IntN(14))
		for i := range b {
			b[i] = "ab/ "[rng.IntN(4)]
		}
		h := string(b)
		if got, want := sameNameSplits(h), naive(h); !cmp.Equal(got, want, cmpopts.EquateEmpty()) {
			t.Fatalf("%q: got %v, want %v", h, got, want)
		}
	}
	for _, h := range []string{"a/x y b/x y", "a/b b/b", "a/b c/d", "a/ b/", "x/a b c/a b", "a/a a/a a a/a a/a"} {
		if got, want := sameNameSplits(h), naive(h); !cmp.Equal(got, want, cmpopts.EquateEmpty()) {
			t.Errorf("%q: got %v, want %v", h, got, want)
		}
	}
}

// TestGateCountsDroppedHunks checks the counts past the records Filtered
// keeps.
func TestGateCountsDroppedHunks(t *testing.T) {
	var b strings.Builder
	b.WriteString("diff --git a/setup.py b/setup.py\n--- a/setup.py\n+++ b/setup.py\n")
	for range 5000 {
		b.WriteString("@@ -1 +1 @@\n-a\n+b\n")
	}
	b.WriteString(newFile("conftest.py") + newFile("README.md") + modifyCore)
	f, err := testGate.Filter([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"denylist:setup.py": 5000, "denylist:conftest.py": 1, RuleNotAllowed: 1}
	if f.DroppedTotal != 5002 || len(f.Dropped) != maxDropped || !cmp.Equal(f.DroppedByRule, want) {
		t.Fatalf("total %d, records %d, by rule %v", f.DroppedTotal, len(f.Dropped), f.DroppedByRule)
	}
	if string(f.Diff) != modifyCore {
		t.Fatalf("kept %q", f.Diff)
	}
}

func TestGateZeroValueKeepsNothing(t *testing.T) {
	f, err := Gate{}.Filter([]byte(modifyCore))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Diff) != 0 || len(f.Dropped) != 1 || f.Dropped[0].Rule != RuleNotAllowed {
		t.Fatalf("zero gate kept %q, dropped %v", f.Diff, f.Dropped)
	}
}

func TestGateExampleDiffs(t *testing.T) {
	for _, name := range []string{"honest", "wrong", "does-not-apply"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "compat-textkit", "diffs", name+".diff"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := testGate.Filter(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(f.Diff, data) || f.DroppedTotal != 0 {
			t.Fatalf("%s: the gate changed an honest diff", name)
		}
	}
}

func FuzzDiffGate(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "..", "examples", "compat-textkit", "diffs", "*.diff"))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{modifyCore, newFile("conftest.py"), newFile("textkit/x.py") + newFile("tests/t.py"),
		"diff --git \"a/textkit/q\\\"x.py\" b/textkit/q\"x.py\nnew file mode 100644\n",
		"--- a/textkit/a.py\n+++ b/textkit/a.py\n@@ -1,2 +1 @@\n a\n-b\n\\ No newline at end of file\n",
		"diff --git a/textkit/x b/textkit/x\nGIT binary patch\nliteral 1\nIcmZQz0000\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := testGate.Filter(data)
		if err != nil {
			if !errors.Is(err, ErrDiff) {
				t.Fatalf("error not matching ErrDiff: %v", err)
			}
			return
		}
		if len(out.Diff) > len(data)+out.Sections {
			t.Fatalf("kept %d bytes out of %d", len(out.Diff), len(data))
		}
		for _, p := range out.Paths {
			if i, _ := globs(testGate.Deny).first(p); i >= 0 {
				t.Fatalf("kept %q, which the denylist matches", p)
			}
			if i, _ := globs(testGate.Allow).first(p); i < 0 {
				t.Fatalf("kept %q, which the allowlist does not match", p)
			}
		}
		checkIdempotent(t, testGate, out)
	})
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
