// Package swebench turns a task instance in the SWE-bench format into a
// compat task (package compat) and checks it before anyone grades against
// it (`strictgrade task import-swebench`).
//
// # What an instance becomes
//
// ParseInstance reads one instance as a JSON object. These fields are
// required:
//
//	repo               "owner/name"; goes into the title and swebench.json
//	instance_id        the task id (batch runs find the task by it)
//	base_commit        the commit the agent starts from (40 hex digits)
//	patch              the reference fix: reference.diff
//	test_patch         the hidden tests: its files, as they are after it, under hidden/
//	FAIL_TO_PASS       the hidden test ids (hidden.tests)
//	PASS_TO_PASS       the existing test ids (existing-tests.txt)
//	problem_statement  the agent-visible description (description.md)
//
// FAIL_TO_PASS and PASS_TO_PASS are JSON arrays of strings, or strings
// holding such an array (the Hugging Face dataset stores them so).
// hints_text, created_at, version and environment_setup_commit are known
// and not used; any other field is not used either and is listed in
// Instance.Ignored, so that a caller can say so. Duplicate keys, a missing
// or mistyped field and an id that is not a pytest node id are refused.
//
// Import reads the repository from a local clone (never the network, and
// never writing to the clone: it works in a shared bare clone of it, in a
// temporary directory) and writes the task:
//
//   - repo.bundle holds one commit whose tree is base_commit's tree (same
//     tree id) with a fixed author, committer, date and message, so the
//     task's repo.base is the same on every import of the instance and the
//     bundle carries no history an oracle does not need. swebench.json
//     records repo, instance_id, base_commit and the tree id.
//   - hidden/ holds every file test_patch adds or changes, as it is after
//     the test patch, and every file that holds a FAIL_TO_PASS test, even
//     one test_patch leaves as it is at the base: the oracle copies hidden/
//     into the checkout after the agent's diff, and the diff gate keeps the
//     agent's diff away from those files and from the files of the
//     PASS_TO_PASS tests.
//   - allow is ["**"]: the agent may change any file the default deny list
//     (diffgate.DefaultDeny) does not keep out.
//   - repo.pythonpath is ["."], and [".", "src"] when the base has a
//     package under src/.
//
// # What it can serve, and what it refuses
//
// The compat oracle runs the tests with the Python image's interpreter and
// pytest (Debian bookworm's python3 and python3-pytest) and nothing else:
// no pip install, no compiled extension built, no network. An instance can
// be imported when its tests are pytest node ids and its repository runs
// under that interpreter with only the standard library and pytest. Import
// refuses, with an error wrapping ErrRefused that says why, an instance
// whose
//
//   - fields are missing, mistyped or malformed, or whose test ids are not
//     pytest node ids (path.py::name; Django's and SymPy's own runners
//     name tests otherwise);
//   - base_commit is not in the clone, or whose tree has submodules;
//   - test_patch or patch does not apply at base_commit (git apply, no
//     fuzz, as the oracle applies diffs);
//   - test_patch deletes or renames a file, or holds a binary patch, a
//     symbolic link or a submodule (hidden files can add and replace
//     files, nothing else);
//   - patch touches a file the diff gate would drop from an agent's diff:
//     a test file of either suite, a file the default deny list names
//     (tests/, setup.py, pyproject.toml, conftest.py, …), a binary patch or
//     a link: the agent could never submit that fix;
//   - test ids name a file that does not exist after the test patch, or a
//     test (its first name after the file) that the file never mentions.
//
// The rest — a dependency the image lacks, a Python version the code does
// not run on, a test id that names a file and function that exist but
// collects nothing (a parameter that is not there) — only running the
// tests shows. Import therefore ends with Options.Check, which the command
// line fills with the equivalent of `strictgrade task check`: the baseline
// (the existing suite passes at the base, the hidden tests fail there for
// the right reason, twice the same way) and a grade of the reference fix,
// which must PASS. A test id that collects nothing makes the baseline
// QUARANTINED (tests_missing for a hidden test, baseline_suite_failed for
// an existing one), and so does a missing module (wrong_failure_reason:
// an import error is not the failure the fix repairs).
//
// A harness that grades through a controller checks as the command line
// does:
//
//	in, err := swebench.ParseInstance(data)
//	…
//	res, err := swebench.Import(ctx, in, swebench.Options{Repo: clone, Out: dir,
//		Check: func(ctx context.Context, t *compat.Task, reference []byte) error {
//			base, err := ctrl.CheckCompat(ctx, t)
//			if err != nil {
//				return err
//			}
//			if base.Verdict.Outcome != schema.OutcomeFail { // QUARANTINED: not fit
//				return fmt.Errorf("baseline %s: %s", base.Verdict.Outcome, base.Verdict.Reason)
//			}
//			ref, err := ctrl.Grade(ctx, t, controller.Submission{Diff: reference, Baseline: base.Verdict.Outcome})
//			if err != nil {
//				return err
//			}
//			if ref.Verdict.Outcome != schema.OutcomePass {
//				return fmt.Errorf("the reference fix did not pass: %s", ref.Verdict.Reason)
//			}
//			return nil
//		}})
//
// # Never a half-made task
//
// Import builds the task in a temporary directory next to Options.Out and
// renames it into place only after Check accepted it. Out must not exist,
// or be an empty directory. A refused instance, a failed check, an error
// or a cancelled context leave nothing behind; a process killed outright
// may leave a ".strictgrade-import-*" directory beside Out, never a task
// in it.
package swebench
