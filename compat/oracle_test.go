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

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
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
	req := compat.Request{Run: runID(), Task: tk, Image: e.image, Diff: diff, BaselineOutcome: baseline, Runtime: "docker/runc"}
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
			if s, ok := e.Attrs["stdout_tail"].(string); ok {
				t.Logf("  %s stdout: %s", e.Phase, s)
			}
		}
	}
}

// assertClean fails if anything labelled with the run survived.
func assertClean(t testing.TB, run string) {
	t.Helper()
	cs, vs, err := oracle(t).eng.Leftovers(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs)+len(vs) > 0 {
		t.Errorf("run %s left %d containers and %d volumes", run, len(cs), len(vs))
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
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(exampleTask)); err != nil {
		t.Fatal(err)
	}
	for rel, content := range files {
		if err := os.WriteFile(filepath.Join(dir, "hidden", rel), []byte(content), 0o644); err != nil {
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
	return load(t, dir)
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
		}, want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "tests/test_slugify_hidden.py", Rule: compat.RuleHiddenTest}},
		{name: "V3.1 weaken an existing test", diff: func(t *testing.T) string {
			old := baseFile(t, "tests/test_core.py")
			return replaceFile("tests/test_core.py", old, strings.ReplaceAll(old, "assert ", "assert True or "))
		}, want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "tests/test_core.py", Rule: compat.RuleExistingTest}},
		{name: "V3.1 delete an existing test", diff: func(t *testing.T) string { return deleteFile("tests/test_core.py", baseFile(t, "tests/test_core.py")) },
			want: schema.OutcomeFail, code: schema.ReasonWrongAnswer, dropped: schema.DroppedHunk{Path: "tests/test_core.py", Rule: compat.RuleExistingTest}},
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

func TestTimeout(t *testing.T) {
	t.Parallel()
	tk := variant(t, nil, nil, func(spec map[string]any) { spec["limits"] = map[string]any{"wall_seconds": 6} })
	old := baseFile(t, "textkit/core.py")
	hang := strings.Replace(old, "    ascii_text = ", "    while \"!\" in text:\n        pass\n    ascii_text = ", 1)
	v := grade(t, tk, []byte(replaceFile("textkit/core.py", old, hang)), "").Verdict
	if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonTimeout || !strings.Contains(v.Reason, "hidden run exceeded the wall-clock limit of 6s") {
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
