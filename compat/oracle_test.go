//go:build engine

package compat_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/compat/diffgate"
	"github.com/strictgrade/strictgrade/grading"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
)

// These tests grade real diffs in real oracle containers. A missing Docker
// daemon or Python image fails them; it never skips them.

var (
	example     = filepath.Join("..", "examples", "compat-textkit")
	exampleTask = filepath.Join(example, "task")
)

type env struct {
	eng    *engine.Docker
	image  string
	signer *attest.Signer
	slots  chan struct{} // bounds concurrent grades: each runs up to four containers
}

var setup = sync.OnceValues(func() (*env, error) {
	ctx := context.Background()
	eng, err := engine.NewDocker(ctx, engine.Config{})
	if err != nil {
		return nil, fmt.Errorf("the compat tests need a Docker daemon: %w", err)
	}
	image, err := images.Ensure(ctx, eng, images.Python{}, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("the compat tests need the Python image: %w", err)
	}
	priv, _, err := attest.GenerateKey(attest.KeyEd25519, nil)
	if err != nil {
		return nil, err
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		return nil, err
	}
	return &env{eng: eng, image: image, signer: signer, slots: make(chan struct{}, 3)}, nil
})

func oracle(t testing.TB) *env {
	t.Helper()
	e, err := setup()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func runID() string {
	b := make([]byte, 5)
	rand.Read(b)
	return "t-" + hex.EncodeToString(b)
}

func load(t testing.TB, dir string) *compat.Task {
	t.Helper()
	tk, err := compat.Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// grade runs Grade (diff != nil) or Check (diff == nil) and checks what
// every outcome must satisfy: a schema-valid verdict that signs and
// verifies for this task and tier, bound to the diff's digest, and no
// container or volume left behind.
func grade(t *testing.T, tk *compat.Task, diff []byte, baseline schema.Outcome) *compat.Outcome {
	t.Helper()
	e := oracle(t)
	e.slots <- struct{}{}
	defer func() { <-e.slots }()
	req := compat.Request{Header: grading.Header{Run: runID(), Runtime: "docker/runc"}, Task: tk, Image: e.image, Diff: diff, BaselineOutcome: baseline}
	var out *compat.Outcome
	var err error
	if diff == nil {
		out, err = compat.Check(t.Context(), e.eng, req)
	} else {
		out, err = compat.Grade(t.Context(), e.eng, req)
	}
	assertClean(t, req.Run)
	if err != nil {
		t.Fatalf("could not grade: %v", err)
	}
	v := out.Verdict
	if v.RunID != req.Run || v.Tier != schema.TierCompat || v.Task.Digest != tk.Digest || v.Task.Kind != schema.KindRepository {
		t.Fatalf("verdict not bound to the request: %+v", v)
	}
	if want := sha256Hex(diff); v.Submission.SHA256 != want || v.Submission.Kind != schema.SubmissionDiff {
		t.Fatalf("submission %+v, want diff %s", v.Submission, want)
	}
	if v.Images.Oracle != "" && v.Images.Oracle != e.image {
		t.Fatalf("oracle image %s, want %s", v.Images.Oracle, e.image)
	}
	signed, err := e.signer.Sign(t.Context(), v, attest.SignOptions{})
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	if _, err := attest.Verify(signed.Bundle, e.signer.PublicKey(), attest.Expect{
		SubmissionSHA256: v.Submission.SHA256, TaskDigest: tk.Digest, Tier: schema.TierCompat, Nonce: v.Nonce,
	}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if t.Failed() || testing.Verbose() {
		logOutcome(t, out)
	}
	return out
}

func logOutcome(t *testing.T, out *compat.Outcome) {
	v := out.Verdict
	t.Logf("%s %s: %s", v.Outcome, v.ReasonCode, v.Reason)
	for _, c := range v.Cases {
		if c.Outcome != schema.OutcomePass || len(c.Flags) > 0 {
			t.Logf("  %s %s %s by %s %v %s", c.Suite, c.ID, c.Outcome, c.DecidedBy, c.Flags, c.Reason)
		}
	}
	for _, d := range v.Compat.DroppedHunks {
		t.Logf("  dropped %s (%s)", d.Path, d.Rule)
	}
	if t.Failed() {
		for _, e := range out.Log {
			if s, ok := e.Attrs["output_tail"].(string); ok {
				t.Logf("  %s output: %s", e.Phase, s)
			}
		}
	}
}

// assertClean fails if anything labelled with the run survived.
func assertClean(t testing.TB, run string) {
	t.Helper()
	left, err := oracle(t).eng.Leftovers(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("run %s left %v", run, left)
	}
}

func readDiff(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(example, "diffs", name+".diff"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func cases(v *schema.Verdict, suite schema.Suite) []schema.Case {
	var out []schema.Case
	for _, c := range v.Cases {
		if c.Suite == suite {
			out = append(out, c)
		}
	}
	return out
}

func TestExample(t *testing.T) {
	tk := load(t, exampleTask)
	t.Run("baseline", func(t *testing.T) {
		t.Parallel()
		out := grade(t, tk, nil, "")
		v := out.Verdict
		if !out.Fit() || v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonWrongAnswer || v.Compat.Mode != schema.ModeBaseline {
			t.Fatalf("baseline %s %s, want a fit task (FAIL wrong_answer)", v.Outcome, v.ReasonCode)
		}
		for _, c := range cases(v, schema.SuiteExisting) {
			if c.Outcome != schema.OutcomePass {
				t.Errorf("existing %s: %s", c.ID, c.Outcome)
			}
		}
		for _, c := range cases(v, schema.SuiteHidden) {
			if c.Outcome != schema.OutcomeFail || len(c.Flags) > 0 || !strings.Contains(c.Reason, "AssertionError") {
				t.Errorf("hidden %s: %s %v %s, want an assertion failure", c.ID, c.Outcome, c.Flags, c.Reason)
			}
		}
		if v.Compat.BaselineOutcome != schema.OutcomeFail || v.Compat.Flipped {
			t.Fatalf("compat %+v", v.Compat)
		}
	})
	t.Run("honest", func(t *testing.T) {
		t.Parallel()
		v := grade(t, tk, readDiff(t, "honest"), schema.OutcomeFail).Verdict
		if v.Outcome != schema.OutcomePass || !v.Compat.Flipped || v.Compat.BaselineOutcome != schema.OutcomeFail {
			t.Fatalf("honest diff: %s, flipped %v", v.Outcome, v.Compat.Flipped)
		}
		if len(v.Cases) != 12 || v.Timings.OracleMS == 0 || v.Compat.AppliedDiffSHA256 != sha256Hex(readDiff(t, "honest")) {
			t.Fatalf("cases %d, timings %+v, applied %s", len(v.Cases), v.Timings, v.Compat.AppliedDiffSHA256)
		}
	})
	t.Run("wrong", func(t *testing.T) {
		t.Parallel()
		v := grade(t, tk, readDiff(t, "wrong"), schema.OutcomeFail).Verdict
		if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonWrongAnswer || v.Compat.Flipped {
			t.Fatalf("wrong diff: %s %s", v.Outcome, v.ReasonCode)
		}
		counts := map[schema.Outcome]int{}
		for _, c := range cases(v, schema.SuiteHidden) {
			counts[c.Outcome]++
		}
		if counts[schema.OutcomePass] != 1 || counts[schema.OutcomeFail] != 2 {
			t.Fatalf("hidden outcomes %v, want 1 pass and 2 failures", counts)
		}
	})
	t.Run("does-not-apply", func(t *testing.T) {
		t.Parallel()
		v := grade(t, tk, readDiff(t, "does-not-apply"), "").Verdict
		if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonDiffDoesNotApply ||
			!strings.Contains(v.Reason, "patch does not apply") || v.Cases[0].DecidedBy != compat.DecidedByGitApply {
			t.Fatalf("got %s %s %s", v.Outcome, v.ReasonCode, v.Reason)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		t.Parallel()
		out := grade(t, tk, []byte("diff --git a/textkit/core.py b/textkit/core.py\n--- a/textkit/core.py\n+++ b/textkit/core.py\n@@ -1,3 +1,3 @@\n x\n"), "")
		v := out.Verdict
		if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonRejectedArtifact || v.Images.Oracle != "" || out.Filtered != nil {
			t.Fatalf("got %s %s (image %q)", v.Outcome, v.ReasonCode, v.Images.Oracle)
		}
	})
}

// variant copies the example task, adds hidden files and appends their
// tests to the hidden suite.
func variant(t *testing.T, files map[string]string, tests []string, edit func(spec map[string]any)) *compat.Task {
	t.Helper()
	return load(t, variantDir(t, files, tests, edit))
}

// variantDir lays out variant's task directory.
func variantDir(t *testing.T, files map[string]string, tests []string, edit func(spec map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(exampleTask)); err != nil {
		t.Fatal(err)
	}
	for rel, content := range files {
		p := filepath.Join(dir, "hidden", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, compat.SpecFile)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	h := spec["hidden"].(map[string]any)
	for _, id := range tests {
		h["tests"] = append(h["tests"].([]any), id)
	}
	if edit != nil {
		edit(spec)
	}
	if data, err = json.Marshal(spec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBaselineQuarantines(t *testing.T) {
	coins := make([]string, 24)
	for i := range coins {
		coins[i] = fmt.Sprintf("tests/test_coin.py::test_coin[%d]", i)
	}
	tests := []struct {
		name  string
		files map[string]string
		ids   []string
		code  string
		flags map[string][]schema.Flag // hidden test -> flags it must carry
	}{
		{
			// 24 coin flips per run: the two runs agree on all of them
			// with probability 2^-24.
			name:  "flaky",
			files: map[string]string{"tests/test_coin.py": "import os\n\nimport pytest\n\n\n@pytest.mark.parametrize(\"n\", range(24))\ndef test_coin(n):\n    assert os.urandom(1)[0] % 2 == 0\n"},
			ids:   coins,
			code:  schema.ReasonFlaky,
		},
		{
			// The module cannot be imported at the base: pytest stops,
			// and no hidden test fails for the right reason.
			name:  "import error at collection",
			files: map[string]string{"tests/test_titlecase.py": "from textkit import titlecase\n\n\ndef test_titlecase():\n    assert titlecase(\"a b\") == \"A B\"\n"},
			ids:   []string{"tests/test_titlecase.py::test_titlecase"},
			code:  schema.ReasonWrongFailure,
			flags: map[string][]schema.Flag{"tests/test_titlecase.py::test_titlecase": {schema.FlagMissing, schema.FlagImportError}},
		},
		{
			name: "import error and missing fixture in test bodies",
			files: map[string]string{"tests/test_reasons.py": "def test_new_helper():\n    from textkit import titlecase\n    assert titlecase(\"a b\") == \"A B\"\n\n\n" +
				"def test_needs_fixture(slug_cases):\n    assert slug_cases\n"},
			ids:  []string{"tests/test_reasons.py::test_new_helper", "tests/test_reasons.py::test_needs_fixture"},
			code: schema.ReasonWrongFailure,
			flags: map[string][]schema.Flag{
				"tests/test_reasons.py::test_new_helper":                          {schema.FlagImportError},
				"tests/test_reasons.py::test_needs_fixture":                       {schema.FlagMissingFixture},
				"tests/test_slugify_hidden.py::test_collapses_runs_of_separators": nil,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tk := variant(t, tt.files, tt.ids, nil)
			out := grade(t, tk, nil, "")
			v := out.Verdict
			if v.Outcome != schema.OutcomeQuarantined || v.ReasonCode != tt.code || out.Fit() {
				t.Fatalf("got %s %s, want QUARANTINED %s", v.Outcome, v.ReasonCode, tt.code)
			}
			for _, c := range v.Cases {
				if want, ok := tt.flags[c.ID]; ok && !slices.Equal(c.Flags, want) {
					t.Errorf("%s: flags %v, want %v", c.ID, c.Flags, want)
				}
			}
			if tt.code == schema.ReasonFlaky && !slices.ContainsFunc(v.Cases, func(c schema.Case) bool { return slices.Contains(c.Flags, schema.FlagFlaky) }) {
				t.Error("no case carries the flaky flag")
			}
		})
	}
}

// The diffs below are built against the example's base files.

func baseFile(t testing.TB, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(example, "repo", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
}

// hunk replaces all of old by all of new.
func hunk(old, new string) string {
	o, n := lines(old), lines(new)
	span := func(l []string) string {
		if len(l) == 0 {
			return "0,0"
		}
		return fmt.Sprintf("1,%d", len(l))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@@ -%s +%s @@\n", span(o), span(n))
	for _, l := range o {
		b.WriteString("-" + strings.TrimSuffix(l, "\n") + "\n")
	}
	for _, l := range n {
		b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}

func addFile(path, content string) string {
	return "diff --git a/" + path + " b/" + path + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + path + "\n" + hunk("", content)
}

func replaceFile(path, old, new string) string {
	return "diff --git a/" + path + " b/" + path + "\n--- a/" + path + "\n+++ b/" + path + "\n" + hunk(old, new)
}

func deleteFile(path, old string) string {
	return "diff --git a/" + path + " b/" + path + "\ndeleted file mode 100644\n--- a/" + path + "\n+++ /dev/null\n" + hunk(old, "")
}

const forcePassConftest = `import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
`

const patchReports = `"""textkit: small text helpers."""

import _pytest.reports

_original = _pytest.reports.TestReport.from_item_and_call.__func__


def _always_passed(cls, item, call):
    report = _original(cls, item, call)
    if call.when == "call":
        report.outcome = "passed"
        report.longrepr = None
    return report


_pytest.reports.TestReport.from_item_and_call = classmethod(_always_passed)

from textkit.core import slugify, truncate, word_count

__all__ = ["slugify", "truncate", "word_count"]
`

const alwaysEqual = `"""The helpers themselves."""


class _Anything(str):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__


def slugify(text: str) -> str:
    return _Anything()


def word_count(text: str) -> int:
    return len(text.split())


def truncate(text: str, width: int, suffix: str = "...") -> str:
    if width < len(suffix):
        raise ValueError("width is smaller than the suffix")
    if len(text) <= width:
        return text
    return text[: width - len(suffix)] + suffix
`

// TestAttacks grades one real diff per attack and checks the layer that
// stopped it: the diff gate (a dropped hunk with its rule) or the JUnit
// check (the flag every hidden test carries). The last rows succeed by
// design: code the tests import runs in pytest's own process.
func TestAttacks(t *testing.T) {
	tk := load(t, exampleTask)
	init := baseFile(t, "textkit/__init__.py")
	prepend := func(code string) string {
		return replaceFile("textkit/__init__.py", init, code+init)
	}
	tests := []struct {
		name    string
		diff    func(t *testing.T) string
		want    schema.Outcome
		code    string
		dropped schema.DroppedHunk // gate: this hunk was dropped
		flag    schema.Flag        // junit: every hidden test carries it
	}{
		{name: "V1.1 root conftest forces passed", diff: func(*testing.T) string { return addFile("conftest.py", forcePassConftest) },
			want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "conftest.py", Rule: "denylist:conftest.py"}},
		{name: "V3.2 plant the hidden test file", diff: func(*testing.T) string {
			return addFile("tests/test_slugify_hidden.py", "def test_collapses_runs_of_separators():\n    pass\n")
		}, want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "tests/test_slugify_hidden.py", Rule: diffgate.RuleHiddenTest}},
		{name: "V3.1 weaken an existing test", diff: func(t *testing.T) string {
			old := baseFile(t, "tests/test_core.py")
			return replaceFile("tests/test_core.py", old, strings.ReplaceAll(old, "assert ", "assert True or "))
		}, want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "tests/test_core.py", Rule: diffgate.RuleExistingTest}},
		{name: "V3.1 delete an existing test", diff: func(t *testing.T) string { return deleteFile("tests/test_core.py", baseFile(t, "tests/test_core.py")) },
			want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "tests/test_core.py", Rule: diffgate.RuleExistingTest}},
		{name: "V3.3 pytest.ini deselects", diff: func(*testing.T) string {
			return addFile("pytest.ini", "[pytest]\naddopts = -k \"not hidden\" -p no:junitxml\n")
		}, want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "pytest.ini", Rule: "denylist:pytest.ini"}},
		{name: "V3.3 pyproject pytest table deselects", diff: func(t *testing.T) string {
			old := baseFile(t, "pyproject.toml")
			return replaceFile("pyproject.toml", old, old+"addopts = \"--deselect tests/test_slugify_hidden.py\"\n")
		}, want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "pyproject.toml", Rule: "denylist:pyproject.toml"}},
		{name: "V3.3 setup.cfg deselects", diff: func(*testing.T) string {
			return addFile("setup.cfg", "[tool:pytest]\naddopts = --ignore=tests/test_slugify_hidden.py\n")
		}, want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "setup.cfg", Rule: "denylist:setup.cfg"}},
		{name: "V4.2 sitecustomize", diff: func(*testing.T) string {
			return addFile("sitecustomize.py", "import builtins\nbuiltins.__import__ = __import__\n")
		}, want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "sitecustomize.py", Rule: "denylist:sitecustomize.py"}},
		{name: "V4.3 pth start-up hook", diff: func(*testing.T) string {
			return addFile("textkit/zz_hook.pth", "import os; os.environ['PYTEST_ADDOPTS'] = '-p no:junitxml'\n")
		}, want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "textkit/zz_hook.pth", Rule: "denylist:*.pth"}},
		{name: "V1.5 sys.exit(0) at import", diff: func(*testing.T) string { return prepend("import sys\n\nsys.exit(0)\n") },
			want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, flag: schema.FlagMissing},
		{name: "V1.5 os._exit(0) at import", diff: func(*testing.T) string { return prepend("import os\n\nos._exit(0)\n") },
			want: schema.OutcomeFail, code: schema.ReasonTestsMissing, flag: schema.FlagMissing},
		{name: "V1.6 pytest.skip at import", diff: func(*testing.T) string {
			return prepend("import pytest\n\npytest.skip(\"not today\", allow_module_level=True)\n")
		}, want: schema.OutcomeFail, code: schema.ReasonTestsMissing, flag: schema.FlagSkipped},
		{name: "gate keeps the fix and drops the conftest", diff: func(*testing.T) string {
			return addFile("conftest.py", forcePassConftest) + string(readDiff(t, "honest"))
		}, want: schema.OutcomePass, dropped: schema.DroppedHunk{Path: "conftest.py", Rule: "denylist:conftest.py"}},
		// Succeeds by design: the returned object compares equal to
		// anything, and the comparison happens in the test's process.
		{name: "V2.1 always-equal object succeeds", diff: func(t *testing.T) string {
			return replaceFile("textkit/core.py", baseFile(t, "textkit/core.py"), alwaysEqual)
		}, want: schema.OutcomePass},
		// Succeeds by design: importing the package patches pytest's
		// report class before any test runs; the bug is not fixed.
		{name: "V1.2 TestReport patched at import succeeds", diff: func(*testing.T) string {
			return replaceFile("textkit/__init__.py", init, patchReports)
		}, want: schema.OutcomePass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := grade(t, tk, []byte(tt.diff(t)), schema.OutcomeFail)
			v := out.Verdict
			if v.Outcome != tt.want || v.ReasonCode != tt.code {
				t.Fatalf("got %s %q, want %s %q", v.Outcome, v.ReasonCode, tt.want, tt.code)
			}
			if tt.dropped.Path != "" && !slices.Contains(v.Compat.DroppedHunks, tt.dropped) {
				t.Errorf("the gate did not record %+v: %v", tt.dropped, v.Compat.DroppedHunks)
			}
			if tt.dropped.Path != "" && !slices.ContainsFunc(out.Log, func(e compat.Entry) bool {
				return e.Phase == "gate" && e.Attrs["path"] == tt.dropped.Path && e.Attrs["rule"] == tt.dropped.Rule
			}) {
				t.Errorf("the log does not name the dropped hunk")
			}
			if tt.flag != "" {
				if len(v.Compat.DroppedHunks) != 0 {
					t.Errorf("the gate dropped %v; the attack should reach the tests", v.Compat.DroppedHunks)
				}
				for _, c := range cases(v, schema.SuiteHidden) {
					if c.Outcome != schema.OutcomeFail || c.DecidedBy != schema.DecidedByJUnit || !slices.Contains(c.Flags, tt.flag) {
						t.Errorf("%s: %s by %s %v, want FAIL by junit with %s", c.ID, c.Outcome, c.DecidedBy, c.Flags, tt.flag)
					}
				}
			}
			if v.Compat.Flipped != (v.Outcome == schema.OutcomePass) {
				t.Errorf("flipped %v for %s after a FAIL baseline", v.Compat.Flipped, v.Outcome)
			}
		})
	}
}

// TestTimeout: a hidden test that hangs is a FAIL timeout naming the hidden
// run. The limit leaves the existing suite, which does not hang, room to
// finish on a loaded machine (it took more than 6 s at a load of 10 on two
// cores).
func TestTimeout(t *testing.T) {
	t.Parallel()
	tk := variant(t, nil, nil, func(spec map[string]any) { spec["limits"] = map[string]any{"wall_seconds": 20} })
	old := baseFile(t, "textkit/core.py")
	hang := strings.Replace(old, "    ascii_text = ", "    while \"!\" in text:\n        pass\n    ascii_text = ", 1)
	v := grade(t, tk, []byte(replaceFile("textkit/core.py", old, hang)), "").Verdict
	if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonTimeout || !strings.Contains(v.Reason, "hidden run exceeded the CPU-time limit of 20s") {
		t.Fatalf("got %s %s %s", v.Outcome, v.ReasonCode, v.Reason)
	}
	for _, c := range cases(v, schema.SuiteHidden) {
		if c.Exit != schema.ExitTimeout {
			t.Errorf("%s: exit %s", c.ID, c.Exit)
		}
	}
}

// TestDeterminism grades the honest diff five times.
func TestDeterminism(t *testing.T) {
	tk := load(t, exampleTask)
	diff := readDiff(t, "honest")
	outs := make([]*schema.Verdict, 5)
	t.Run("grades", func(t *testing.T) {
		for i := range outs {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				outs[i] = grade(t, tk, diff, "").Verdict
			})
		}
	})
	type summary struct {
		Outcome   schema.Outcome
		Code      string
		TestsHash string
		Applied   string
		Cases     []string
	}
	sum := func(v *schema.Verdict) summary {
		s := summary{v.Outcome, v.ReasonCode, v.TestsHash, v.Compat.AppliedDiffSHA256, nil}
		for _, c := range v.Cases {
			s.Cases = append(s.Cases, fmt.Sprintf("%s %s %s %v", c.ID, c.Outcome, c.DecidedBy, c.Flags))
		}
		return s
	}
	if outs[0] == nil {
		t.Fatal("no verdict")
	}
	first := sum(outs[0])
	if first.Outcome != schema.OutcomePass {
		t.Fatalf("honest diff: %s", first.Outcome)
	}
	for i, v := range outs[1:] {
		if v == nil {
			t.Fatal("no verdict")
		}
		if got := sum(v); !slices.Equal(got.Cases, first.Cases) || got.Outcome != first.Outcome || got.TestsHash != first.TestsHash || got.Applied != first.Applied {
			t.Fatalf("grade %d differs:\n%+v\n%+v", i+1, got, first)
		}
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// oracleProbe runs inside the oracle as a hidden test: it checks the
// interpreter flags, the environment, the import path and the read-only
// checkout from the point of view of the code under test.
const oracleProbe = `import os
import sys


def test_interpreter_flags():
    assert sys.flags.hash_randomization == 0
    assert sys.flags.safe_path and sys.flags.no_user_site and sys.flags.dont_write_bytecode
    assert sys.pycache_prefix == "/tmp/pycache"


def test_environment():
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST")
    env.pop("HOSTNAME", None)  # set by the container runtime
    assert env == {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/tmp", "TZ": "UTC", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "SOURCE_DATE_EPOCH": "315532800",
        "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/tmp/pycache",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "TEXTKIT_MODE": "strict",
    }


def test_imports_come_from_the_checkout():
    import textkit

    assert textkit.__file__ == "/work/repo/textkit/__init__.py"
    assert "" not in sys.path
    assert "/work/repo" in sys.path


def test_judge_files_and_checkout_are_read_only(request):
    assert str(request.config.inipath) == "/work/pytest.ini"
    assert str(request.config.rootpath) == "/work/repo"
    for path in ("/work/repo/textkit/core.py", "/work/pytest.ini", "/work/repo/conftest.py"):
        try:
            open(path, "a").close()
        except OSError:
            continue
        raise AssertionError(path + " is writable")
`

func TestOracleEnvironment(t *testing.T) {
	t.Parallel()
	ids := []string{
		"tests/test_oracle_env.py::test_interpreter_flags", "tests/test_oracle_env.py::test_environment",
		"tests/test_oracle_env.py::test_imports_come_from_the_checkout", "tests/test_oracle_env.py::test_judge_files_and_checkout_are_read_only",
	}
	tk := variant(t, map[string]string{"tests/test_oracle_env.py": oracleProbe}, ids,
		func(spec map[string]any) { spec["env"] = map[string]string{"TEXTKIT_MODE": "strict"} })
	out := grade(t, tk, readDiff(t, "honest"), "")
	if v := out.Verdict; v.Outcome != schema.OutcomePass {
		t.Fail()
		logOutcome(t, out)
		t.Fatalf("got %s %s", v.Outcome, v.ReasonCode)
	}
}

// slowApply is a diff that git applies in time proportional to the
// product of its two halves: a new file, then hunks whose stated line is
// far from where their context is, so that git searches most of the file
// for each. At 3.5 MB it keeps git busy for most of a minute.
func slowApply() string {
	const lines, hunks = 400_000, 40_000
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/textkit/big.py b/textkit/big.py\nnew file mode 100644\n--- /dev/null\n+++ b/textkit/big.py\n@@ -0,0 +1,%d @@\n", lines)
	for i := range lines - 3*hunks {
		fmt.Fprintf(&b, "+a%d\n", i%7)
	}
	for k := range hunks {
		fmt.Fprintf(&b, "+p%d\n+b%d\n+q%d\n", k, k, k)
	}
	b.WriteString("diff --git a/textkit/big.py b/textkit/big.py\n--- a/textkit/big.py\n+++ b/textkit/big.py\n")
	for k := range hunks {
		fmt.Fprintf(&b, "@@ -2,3 +2,3 @@\n p%d\n-b%d\n+c%d\n q%d\n", k, k, k, k)
	}
	return b.String()
}

// manyFiles is a diff adding n allowed files whose paths are long enough
// for their list to pass a megabyte.
func manyFiles(n int) string {
	var b strings.Builder
	for i := range n {
		p := fmt.Sprintf("textkit/generated/module_%05d_with_a_longer_name.py", i)
		fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1 @@\n+X = %d\n", p, p, p, i)
	}
	return b.String()
}

// TestPrepareFaults grades diffs that make the preparation of the
// checkout fail after it started on the diff: each is the candidate's
// doing, a signed FAIL with a candidate-side reason, never an ERROR.
func TestPrepareFaults(t *testing.T) {
	limits := func(l map[string]any) func(spec map[string]any) {
		return func(spec map[string]any) { spec["limits"] = l }
	}
	tests := []struct {
		name      string
		files     map[string]string // hidden files added to the task
		ids       []string          // and their tests
		limits    map[string]any
		diff      func() string
		code      string
		decidedBy string
		reason    string
		logged    map[string]any // attributes of the "checkout prepared" log entry
	}{
		{
			name:   "git apply runs into the wall clock",
			limits: map[string]any{"wall_seconds": 5},
			diff:   slowApply,
			code:   schema.ReasonTimeout, decidedBy: schema.DecidedByLimit,
			reason: "preparing the checkout with the diff: stage apply_check exceeded the CPU-time limit of 5s",
		},
		{
			// Their list alone is larger than the report may be: the
			// report names a few and counts the rest, and the grade goes on.
			name:   "thirty thousand files",
			limits: map[string]any{"wall_seconds": 60, "memory_mb": 512, "diff_bytes": diffgate.MaxDiffBytes, "diff_files": 30_000},
			diff:   func() string { return manyFiles(30_000) },
			code:   schema.ReasonWrongAnswer, decidedBy: schema.DecidedByJUnit,
			logged: map[string]any{"changed_count": 30_000},
		},
		{
			name:  "the diff takes the place of the hidden tests",
			files: map[string]string{"textkit/checks/test_more.py": "def test_more():\n    assert False\n"},
			ids:   []string{"textkit/checks/test_more.py::test_more"},
			diff:  func() string { return addFile("textkit/checks", "X = 1\n") },
			code:  schema.ReasonRejectedArtifact, decidedBy: compat.DecidedByPrepare,
			reason: "preparing the checkout with the diff: stage inject failed: textkit/checks/test_more.py: /work/repo/textkit/checks is not a directory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var edit func(map[string]any)
			if tt.limits != nil {
				edit = limits(tt.limits)
			}
			tk := variant(t, tt.files, tt.ids, edit)
			out := grade(t, tk, []byte(tt.diff()), "")
			v := out.Verdict
			if v.Outcome != schema.OutcomeFail || v.ReasonCode != tt.code || !strings.HasPrefix(v.Reason, tt.reason) {
				t.Fatalf("got %s %s %q, want FAIL %s %q", v.Outcome, v.ReasonCode, v.Reason, tt.code, tt.reason)
			}
			if c := cases(v, schema.SuiteHidden)[0]; c.DecidedBy != tt.decidedBy {
				t.Errorf("hidden test decided by %s, want %s", c.DecidedBy, tt.decidedBy)
			}
			for k, want := range tt.logged {
				if !slices.ContainsFunc(out.Log, func(e compat.Entry) bool { return e.Message == "checkout prepared" && e.Attrs[k] == want }) {
					t.Errorf("the log does not record %s %v", k, want)
				}
			}
		})
	}
}

// longDropped is a diff section for a denied file whose path is nearly the
// longest the firewall accepts, with n hunks.
func longDropped(n int) string {
	c := strings.Repeat("é", 125) // 250 bytes: a path component may have 255
	p := fmt.Sprintf("docs/%s/%s/%s/%s/setup.py", c, c, c, c)
	var b strings.Builder
	b.WriteString("diff --git a/" + p + " b/" + p + "\n--- a/" + p + "\n+++ b/" + p + "\n")
	for range n {
		b.WriteString("@@ -1 +1 @@\n-a\n+b\n")
	}
	return b.String()
}

// TestDiffBounds grades diffs at and past the gate's bounds: each is a
// signed FAIL, however large the diff or its list of dropped hunks.
func TestDiffBounds(t *testing.T) {
	tk := load(t, exampleTask)
	tests := []struct {
		name   string
		diff   func(t *testing.T) string
		code   string
		reason string
		ran    bool // the oracle's containers ran
	}{
		{
			// Recorded with their paths, these hunks alone would make a
			// verdict past schema.MaxSize.
			name: "thousands of dropped hunks",
			diff: func(t *testing.T) string { return longDropped(5000) + string(readDiff(t, "wrong")) },
			code: schema.ReasonWrongAnswer, ran: true,
			reason: "; the diff gate dropped 5000 hunks (denylist:setup.py 5000); the verdict lists the first 256",
		},
		{
			name: "over the size limit",
			diff: func(t *testing.T) string {
				return string(readDiff(t, "honest")) + strings.Repeat("#", diffgate.DefaultDiffBytes)
			},
			code:   schema.ReasonRejectedArtifact,
			reason: "diffgate: diff refused: too large: the diff is",
		},
		{
			name: "over the file-section limit",
			diff: func(t *testing.T) string {
				var b strings.Builder
				for i := range diffgate.DefaultDiffFiles {
					b.WriteString(addFile(fmt.Sprintf("docs/%d.md", i), "x\n"))
				}
				return b.String() + string(readDiff(t, "honest"))
			},
			code:   schema.ReasonRejectedArtifact,
			reason: "diffgate: diff refused: too large: the diff has more than 1000 file sections",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := grade(t, tk, []byte(tt.diff(t)), "")
			v := out.Verdict
			if v.Outcome != schema.OutcomeFail || v.ReasonCode != tt.code || !strings.Contains(v.Reason, tt.reason) {
				t.Fatalf("got %s %s %q, want FAIL %s with %q", v.Outcome, v.ReasonCode, v.Reason, tt.code, tt.reason)
			}
			if ran := v.Images.Oracle != ""; ran != tt.ran {
				t.Errorf("containers ran: %v, want %v", ran, tt.ran)
			}
			if len(v.Compat.DroppedHunks) > 256 {
				t.Errorf("the verdict lists %d dropped hunks", len(v.Compat.DroppedHunks))
			}
			data, err := schema.Marshal(v)
			if err != nil || len(data) > 512<<10 {
				t.Errorf("verdict of %d bytes: %v", len(data), err)
			}
		})
	}
}

// TestFloods grades code that, when the tests import it, writes as much
// as it can: to its output directory, a tmpfs whose quota is reached long
// before the host's disk could be and whose content the firewall then
// refuses (too large a file, too many), or to standard output, which is
// capped. Each is a FAIL decided by one bound, long before the wall clock.
func TestFloods(t *testing.T) {
	tk := load(t, exampleTask)
	init := baseFile(t, "textkit/__init__.py")
	prepend := func(code string) string { return replaceFile("textkit/__init__.py", init, code+init) }
	tests := []struct {
		name string
		code string // run when textkit is imported
		want string
	}{
		{name: "a large file in the output directory", code: `_chunk = b"x" * (1 << 20)
try:
    with open("/out/fill", "wb") as _f:
        for _ in range(4096):
            _f.write(_chunk)
except OSError:
    pass
`, want: schema.ReasonRejectedArtifact},
		{name: "many files in the output directory", code: `try:
    for _i in range(100000):
        open("/out/f%d" % _i, "w").close()
except OSError:
    pass
`, want: schema.ReasonRejectedArtifact},
		{name: "a gigabyte on standard output", code: `import sys
_chunk = "x" * (1 << 20)
for _ in range(1024):
    sys.stdout.write(_chunk)
`, want: schema.ReasonOutputLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := grade(t, tk, []byte(prepend(tt.code)), "").Verdict
			if v.Outcome != schema.OutcomeFail || v.ReasonCode != tt.want {
				t.Fatalf("got %s %s %q, want FAIL %s", v.Outcome, v.ReasonCode, v.Reason, tt.want)
			}
		})
	}
}

// TestHiddenInBaseFile: a hidden test may name a test of a file the base
// commit holds, not copied under hidden/. It runs where the base has it:
// the honest fix passes it with the others; at the base it passes, which
// makes the baseline QUARANTINED (baseline_passed, naming it); one the
// base file does not hold is missing (tests_missing).
func TestHiddenInBaseFile(t *testing.T) {
	const id = "tests/test_core.py::test_word_count"
	// The test leaves the existing suite for the hidden one.
	list, err := os.ReadFile(filepath.Join(exampleTask, "existing-tests.txt"))
	if err != nil {
		t.Fatal(err)
	}
	newList := strings.Replace(string(list), id+"\n", "", 1)
	sum := sha256.Sum256([]byte(newList))
	dir := variantDir(t, nil, []string{id}, func(spec map[string]any) {
		spec["existing"].(map[string]any)["sha256"] = hex.EncodeToString(sum[:])
	})
	if err := os.WriteFile(filepath.Join(dir, "existing-tests.txt"), []byte(newList), 0o644); err != nil {
		t.Fatal(err)
	}
	tk := load(t, dir)
	if len(tk.BaseTestFiles) != 1 {
		t.Fatalf("base test files %v", tk.BaseTestFiles)
	}
	t.Run("graded", func(t *testing.T) {
		t.Parallel()
		v := grade(t, tk, readDiff(t, "honest"), "").Verdict
		if v.Outcome != schema.OutcomePass {
			t.Fatalf("honest: %s %s", v.Outcome, v.Reason)
		}
		found := false
		for _, c := range cases(v, schema.SuiteHidden) {
			found = found || (c.ID == id && c.Outcome == schema.OutcomePass)
		}
		if !found {
			t.Errorf("%s is not a passing hidden case: %+v", id, v.Cases)
		}
	})
	t.Run("baseline passes it", func(t *testing.T) {
		t.Parallel()
		v := grade(t, tk, nil, "").Verdict
		if v.Outcome != schema.OutcomeQuarantined || v.ReasonCode != schema.ReasonBaselinePassed || !strings.Contains(v.Reason, id) {
			t.Errorf("baseline: %s %s %s", v.Outcome, v.ReasonCode, v.Reason)
		}
	})
	t.Run("absent from the base", func(t *testing.T) {
		t.Parallel()
		const nope = "tests/test_core.py::test_not_there"
		v := grade(t, variant(t, nil, []string{nope}, nil), nil, "").Verdict
		if v.Outcome != schema.OutcomeQuarantined || v.ReasonCode != schema.ReasonTestsMissing || !strings.Contains(v.Reason, nope) {
			t.Errorf("baseline: %s %s %s", v.Outcome, v.ReasonCode, v.Reason)
		}
	})
}

// TestBaselineShadowed: a top-level package of the checkout that the
// tests would import from the runtime image instead (pluggy, which pytest
// imports before any test; attr in a src/ the pythonpath leaves out)
// makes the baseline QUARANTINED, packages_shadowed, naming both; the
// checkout's own package (textkit) does not.
func TestBaselineShadowed(t *testing.T) {
	t.Parallel()
	tk := variant(t, map[string]string{
		"pluggy/__init__.py":   "VERSION = 'the checkout'\n",
		"src/attr/__init__.py": "VERSION = 'the checkout'\n",
		"tests/test_shadow.py": "import attr\nimport pluggy\n\n\ndef test_checkout_copies():\n    assert attr.VERSION == pluggy.VERSION == 'the checkout'\n",
	}, []string{"tests/test_shadow.py::test_checkout_copies"}, nil)
	out := grade(t, tk, nil, "")
	v := out.Verdict
	if v.Outcome != schema.OutcomeQuarantined || v.ReasonCode != compat.ReasonPackagesShadowed || out.Fit() {
		t.Fatalf("got %s %s: %s", v.Outcome, v.ReasonCode, v.Reason)
	}
	for _, want := range []string{"attr resolves to /usr/lib/python3/dist-packages/attr, not the checkout's src/attr",
		"pluggy resolves to /usr/lib/python3/dist-packages/pluggy, not the checkout's pluggy"} {
		if !strings.Contains(v.Reason, want) {
			t.Errorf("reason lacks %q: %s", want, v.Reason)
		}
	}
	if strings.Contains(v.Reason, "textkit") {
		t.Errorf("the checkout's own package is named: %s", v.Reason)
	}
}

// TestPythonImagePackages: the list of what the Python image puts on
// sys.path besides the standard library (images.PythonPackages, which the
// README and the compat scaffold's README print) is what the image holds.
func TestPythonImagePackages(t *testing.T) {
	t.Parallel()
	e := oracle(t)
	run := runID()
	const list = `import os
names = set()
for n in os.listdir("/usr/lib/python3/dist-packages"):
    if n == "__pycache__" or n.endswith((".dist-info", ".egg-info", ".pth")):
        continue
    names.add(n[:-3] if n.endswith(".py") else n)
print("\n".join(sorted(names)))
`
	res, err := e.eng.Run(t.Context(), sandbox.Spec{Run: run, Phase: "packages", Image: e.image,
		Cmd: []string{"python3", "-I", "-c", list}, Limits: sandbox.Limits{Wall: 30 * time.Second}})
	assertClean(t, run)
	if err != nil || res.Code != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	got := strings.Fields(string(res.Stdout))
	if diff := cmp.Diff(images.PythonPackages, got); diff != "" {
		t.Errorf("images.PythonPackages (-listed +in the image):\n%s", diff)
	}
}
