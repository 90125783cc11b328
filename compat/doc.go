// Package compat is strictgrade's compat tier: it grades "fix this
// repository so the hidden tests pass" tasks, where the tests must import
// the candidate's code, as strictly as a shared Python process allows
// (ADR 0004). What the tier cannot block is stated below and shown by tests.
//
// # Task directory
//
// A compat task is a directory with a task.json like this one (the
// example is examples/compat-textkit/task):
//
//	{
//	  "schema": "strictgrade.compat-task/v1",
//	  "id": "textkit-slugify", "version": "1", "title": "…",
//	  "runtime": "python",
//	  "description": "description.md",
//	  "repo": {"bundle": "repo.bundle", "base": "<40-hex commit>", "pythonpath": ["."]},
//	  "existing": {"list": "existing-tests.txt", "sha256": "<hex>"},
//	  "hidden": {"dir": "hidden", "tests": ["tests/test_x.py::test_a", …]},
//	  "allow": ["textkit/**"],
//	  "deny": [],
//	  "limits": {"wall_seconds": 120, "memory_mb": 1024, "pids": 256, "tmpfs_mb": 256,
//	             "diff_bytes": 4194304, "diff_files": 1000},
//	  "env": {"NAME": "value"}
//	}
//
// The fields:
//
//   - description: the agent-visible task statement (Task.Description).
//     Everything else in the directory is the oracle's alone.
//   - repo.bundle: the oracle's own copy of the repository, a complete git
//     bundle with repo.base as one of its ref tips. The agent's working copy
//     is never used. repo.pythonpath lists repository directories the
//     judge-owned pytest configuration puts on sys.path (default ".", use
//     "src" for a src layout).
//   - existing: the repository's existing suite S, frozen as a file of
//     pytest node ids, one per line, each ending in a newline; task.json pins
//     its sha256.
//   - hidden: the hidden suite H. hidden.dir mirrors repository paths; its
//     files are copied into the checkout after the diff is applied
//     (overwriting files of the same path). hidden.tests lists the node ids
//     that must pass; each lives in one of those files, or in a test file
//     of the base commit that the hidden suite uses unchanged and that
//     need not be copied under hidden.dir (Task.BaseTestFiles; the gate
//     protects it as it protects the hidden files, and a test the base
//     does not hold makes the baseline QUARANTINED, tests_missing).
//   - allow: globs of the paths a diff may touch; deny: globs added to
//     diffgate.DefaultDeny (which always applies). Both use the firewall's
//     glob syntax (see firewall.Policy): a pattern without an inner "/"
//     matches at any depth, "**" spans directories, a trailing "/" matches
//     a directory and everything below it, and matching ignores case.
//   - limits: per oracle container (wall clock enforced by SIGKILL of the
//     container, memory without swap, processes, /tmp size), and the
//     largest diff the gate reads (diff_bytes, at most
//     diffgate.MaxDiffBytes) and its most file sections (diff_files, at
//     most diffgate.MaxDiffFiles). A container never gets more processes
//     than one per 4 MiB of its memory, whatever pids says: a forked Python
//     process costs about 1 MiB, so a fork bomb meets the pids limit with
//     most of the memory to spare, and its outcome cannot depend on which
//     limit wins a race.
//   - env: extra deterministic variables the repository's tests need. Names
//     are upper case; the oracle's own variables and everything that steers
//     the interpreter, pytest, git or the loader (PYTHON*, PYTEST*, LD_*,
//     LC_*, GIT_*, PATH, HOME, …) are refused.
//
// Load validates the spec strictly (no duplicate keys, no unknown fields),
// the files it names, the suites (well-formed node ids, S and H disjoint,
// distinguishable in a JUnit report) and computes Task.Digest, the sha256 of
// the firewall's canonical archive of the whole directory. Grading reads the
// oracle's inputs back out of that same canonical archive and refuses to
// run if the directory changed since Load.
//
// # The diff gate
//
// The gate is package diffgate; Task.Gate configures it for a task.
// diffgate.Gate.Filter parses the agent's unified diff (git's format, with
// new, deleted, renamed and copied files, mode changes, quoted names and
// binary markers; plain "---"/"+++" diffs too) and drops every file section
// that is a binary patch, creates or changes a symbolic link or gitlink,
// touches a file of either suite, touches a path a deny glob matches or
// touches a path no allow glob matches. Every name must also pass the
// firewall's name rules. Dropped hunks are recorded with their path and
// rule (schema.DroppedHunk): all of them are counted, the first 4096 are
// kept in diffgate.Filtered and the log, and a verdict lists the first 256,
// paths cut to 256 characters, with the total and the counts of the most
// frequent rules in its reason when it does not list them all, so that the
// largest diff the gate accepts still gives a verdict far below
// schema.MaxSize. The kept sections are passed on byte for byte; their
// digest is the verdict's Compat.AppliedDiffSHA256, while the submission
// digest is of the diff as received. A diff the gate cannot parse is a FAIL
// (rejected_artifact, decided by diff_gate), never an ERROR, and so is one
// over the task's limits: its size is checked before the diff is parsed and
// its number of file sections as the parser meets them, before any path is
// judged. The parser does one pass over the diff; judging costs a few
// firewall runs per distinct path.
//
// # The oracle
//
// Every container comes from the pinned Python image (its ID is checked
// and recorded as Images.Oracle) with the engine's hardened profile: uid
// 65532, read-only root filesystem, no network, no capabilities, a noexec
// /tmp. The environment is built from scratch: PATH, HOME=/tmp, TZ=UTC,
// LANG and LC_ALL=C.UTF-8, SOURCE_DATE_EPOCH=315532800, PYTHONHASHSEED=0,
// PYTHONDONTWRITEBYTECODE=1, PYTHONPYCACHEPREFIX=/tmp/pycache (bytecode is
// only looked up in an empty directory, so no stale .pyc is ever read),
// PYTEST_DISABLE_PLUGIN_AUTOLOAD=1, and the task's env.
//
//  1. prepare (no repository code runs in it): prepare.py clones the
//     bundle into a fresh work volume, checks out the base, applies the
//     filtered diff with "git apply --check" then "git apply" (-p1, no
//     --3way, no fuzz; a failure is FAIL diff_does_not_apply with git's
//     message), asks git which paths changed and refuses any the gate did
//     not keep or that is not a regular file, copies the hidden tests in and
//     writes the judge-owned pytest.ini to /work, outside the repository.
//     Its report names at most 20 changed paths and counts the rest. It
//     announces each stage on standard error before starting it, and a
//     failure is attributed by the stage it happened in: before the diff is
//     read (the clone, the checkout of the base) it is the grader's, an
//     ERROR; from "git apply --check" on, the input is the candidate's
//     bytes, and whatever stops the step — a wall-clock or memory limit git
//     runs into, a crash, a missing or oversized report, a path the diff
//     put where a hidden test must go — is a FAIL decided before any test
//     ran (timeout, memory_limit, rejected_artifact). In baseline mode there
//     is no diff, and every failure is the grader's.
//  2. existing, then hidden: one fresh container per suite, with the work
//     volume mounted read-only and without the inputs volume. Code that
//     runs during one suite can therefore change neither the checkout, the
//     hidden tests, the judge-owned configuration nor the other suite's
//     report, and no process outlives its suite.
//
// No container writes to the host's disk but prepare's to the checkout,
// which a bounded diff bounds. Each has its own /out, a tmpfs with a
// quota (sandbox.StreamOut), charged to its memory: code that fills it gets
// ENOSPC, and what is left there is streamed out through the firewall
// after the container ended by itself, so that a file or a count of files
// past the output policy makes the run's output refused (FAIL
// rejected_artifact). Because /out leaves on standard output, what the
// tests print arrives on standard error: pytest runs under runner.py, which
// passes its output on up to 8 MiB and stops the run one byte later (FAIL
// output_limit), so that a flood of output is decided by that cap within
// milliseconds instead of racing the wall clock; the log keeps the head
// and the tail of the output.
//
// Each suite runs as
//
//	python3 -P -s -B -m pytest -c /work/pytest.ini --rootdir=/work/repo \
//	  --confcutdir=/work/repo -p no:cacheprovider -o addopts= \
//	  --junitxml=/out/report.xml -q -- <node ids>
//
// (under runner.py, itself under the engine's stream-out wrapper).
//
// The interpreter is not run with -I: isolated mode implies -E, which
// ignores PYTHONHASHSEED (and PYTHONDONTWRITEBYTECODE), so hash
// randomisation would stay on. -P, -s and -B give the rest of -I, and since
// the environment is built from scratch no PYTHON* variable but the
// oracle's can be set. Under -P neither the working directory nor the
// script directory is on sys.path; the repository becomes importable
// through the "pythonpath" option of the judge-owned pytest.ini (pytest >=
// 7), which names absolute directories of the checkout. The mechanism is
// pytest's own, configured by a file the candidate cannot write, and needs
// no conftest, .pth file, installation or environment variable. "-c" makes
// pytest ignore the repository's pytest.ini, pyproject.toml, tox.ini and
// setup.cfg; the ini sets xfail_strict, because pytest's JUnit report shows
// a non-strict unexpected pass as a plain pass.
//
// # Reading the results
//
// Tests are selected by node id, so nothing else runs; pytest then stops
// the whole run when a module cannot be collected, and the tests it did
// not reach are recorded as missing ("not run"). The JUnit report is
// copied out through the firewall and parsed on the host by package junit,
// bounded and strictly (UTF-8, no DTD, only pytest's elements). Every
// expected node id must appear exactly once and have passed: a failure, an
// error, a skip, an xfail or strict xpass, a collection error or skip of its
// module, or absence fail the test, with flags (import_error — also for a
// module that fails to collect —, missing_fixture, skipped, xfail,
// missing). Entries nobody asked for also
// fail the grade. The exit code corroborates: a PASS needs every run to exit
// by itself with code 0, but a code of 0 never makes anything pass. A run
// stopped by the wall-clock limit is FAIL timeout, by the memory limit
// memory_limit, by the output cap output_limit. A case's reason is cut to
// its share of a budget for all of them (at most 400 characters each), so
// that a task with thousands of tests failing verbosely still gives a
// verdict that can be signed. tests_hash is the hash of
// the expected ids (S and H), so it is the same for every grade of a task.
//
// # Modes and outcomes
//
// Grade (final mode) returns PASS or FAIL. Check (baseline mode) runs no
// diff, the existing suite once and the hidden suite twice; its verdict is
// FAIL when the task is fit (the base fails the hidden tests, for the right
// reason, the same way twice, and passes the existing suite) and
// QUARANTINED otherwise, with reason_code baseline_suite_failed,
// tests_missing, flaky, baseline_passed, wrong_failure_reason (a hidden test
// fails by an import or collection error, a missing fixture, a skip or
// xfail: an agent could flip it without doing the task), timeout,
// memory_limit or output_limit. After the suites, the baseline runs
// imports.py in one more read-only container: it collects the hidden
// tests with pytest's own arguments and reports where each top-level
// package of the checkout (a directory with __init__.py at the top of the
// repository or in src/) resolves once pytest has set up sys.path and
// imported the tests. A package that resolves outside the checkout — the
// runtime image's copy (Debian's pytest brings pluggy, packaging, attrs,
// iniconfig, tomli and more; images.PythonPackages lists them), or one
// repo.pythonpath does not reach — means the tests would grade that copy:
// the baseline is QUARANTINED with ReasonPackagesShadowed, whatever else
// it found. A probe that gives no report decides nothing (the log says
// why); it never runs in a final grade. A fit baseline is FAIL rather than PASS
// because its hidden cases did fail (a PASS verdict must have only passing
// cases), and because a flip is defined as baseline FAIL then final PASS:
// pass Request.BaselineOutcome to Grade and it sets Compat.Flipped. An
// error from either function means the oracle could not grade; the Outcome
// then carries an ERROR verdict for the caller to sign.
//
// # What the tier does not block
//
// The tests import the candidate, so code in the repository runs inside
// the pytest process that writes the report. By design it can still rewrite
// test outcomes (patching _pytest.reports.TestReport or pytest's runner
// from a module the tests import), return objects whose __eq__ is always
// true, patch assertion helpers, clocks or the stdlib, read the hidden tests
// from disk or the caller's frames, and overwrite /out/report.xml
// (taxonomy V1.2–V1.11, V2, V4.5–V4.7, V5.3, V6.4). Failure reasons in
// verdicts quote assertion messages, which can reveal expected values; a
// harness should not show them to the agent (V5.7). The tier removes the
// places where that code could act without being imported — configuration
// files, conftest.py, start-up hooks, plugins, bytecode, the environment,
// the tests themselves, the report of another suite — and fails every
// sign that something went missing; the proof matrix records the rest as
// succeeding. Tasks whose hidden tests must be trusted belong in the strict
// tier.
package compat
