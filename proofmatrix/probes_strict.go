package proofmatrix

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

// Python solutions of the "add" task used by many probes.
const (
	addHonest = "def solve(numbers):\n    total = 0\n    for n in numbers:\n        total += n\n    return total\n"
	addWrong  = "def solve(numbers):\n    return sum(abs(n) for n in numbers)\n"
)

// judged is the expectation of an attack the judge refuses as a wrong answer.
func judged(c *Case, why string) *Case {
	c.Expect, c.Layer, c.Why = Blocked, "judge: "+schema.ReasonWrongAnswer, why
	return c
}

func add(files map[string]string) *Case { return &Case{Task: "add", Files: files} }

// tarOf builds a raw archive from headers and bodies, allowing what
// archive/tar writes but a firewall must refuse.
func tarOf(entries ...tarEntry) func() ([]byte, error) {
	return func() ([]byte, error) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, e := range entries {
			h := e.h
			h.Size = int64(len(e.body))
			if h.Typeflag != tar.TypeReg {
				h.Size = 0
			}
			if h.Mode == 0 {
				h.Mode = 0o644
			}
			if err := tw.WriteHeader(&h); err != nil {
				return nil, err
			}
			if h.Typeflag == tar.TypeReg {
				if _, err := tw.Write([]byte(e.body)); err != nil {
					return nil, err
				}
			}
		}
		if err := tw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
}

type tarEntry struct {
	h    tar.Header
	body string
}

func reg(name, body string) tarEntry {
	return tarEntry{h: tar.Header{Name: name, Typeflag: tar.TypeReg}, body: body}
}

func init() {
	register(
		&Probe{ID: "control-honest", Taxonomy: "control", Class: "control", Control: true, Title: "honest correct submission",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": addHonest}, Expect: Pass, Layer: "none", Why: "over-isolation must not fail a genuine solve"}},
		&Probe{ID: "control-wrong", Taxonomy: "control", Class: "control", Control: true, Title: "honest wrong submission",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": addWrong}, Expect: Fail, Layer: "judge: " + schema.ReasonWrongAnswer, Why: "a wrong answer fails"}},
		&Probe{ID: "control-empty", Taxonomy: "control", Class: "control", Control: true, Title: "empty submission",
			Strict: &Case{Task: "add", Files: map[string]string{}, Expect: Fail, Layer: "fw-in: missing artifact", Why: "no work, no pass"}},

		// V1: test-outcome rewriting.
		&Probe{ID: "V1.1-conftest-rewrite", Taxonomy: "V1.1", Class: "V1", Title: "conftest hook marks every report passed", Source: "TAXONOMY R1",
			Strict: judged(add(map[string]string{"solution.py": addWrong, "conftest.py": conftestForcePass}), "conftest.py is not a declared artifact and the judge runs no pytest")},
		&Probe{ID: "V1.2-testreport-patch", Taxonomy: "V1.2", Class: "V1", Title: "TestReport patched at import", Source: "TAXONOMY R4",
			Strict: judged(add(map[string]string{"solution.py": reportPatch + addWrong}), "the judge is a Go binary; no report object exists to patch")},
		&Probe{ID: "V1.5-exit-at-import", Taxonomy: "V1.5", Class: "V1", Title: "sys.exit(0) at import", Source: "TAXONOMY R4",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": "import sys\nsys.exit(0)\n" + addWrong},
				Expect: Blocked, Layer: "judge: " + schema.ReasonRuntimeError, Why: "a case without a value fails; exit 0 proves nothing"}},
		&Probe{ID: "V1.5-os-exit-in-call", Taxonomy: "V1.5", Class: "V1", Title: "os._exit(0) inside the call", Source: "TAXONOMY R4",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": "import os\ndef solve(numbers):\n    os._exit(0)\n"},
				Expect: Blocked, Layer: "judge: missing_output", Why: "no record for a case is a failed case"}},
		&Probe{ID: "V1.6-skip-at-import", Taxonomy: "V1.6", Class: "V1", Title: "SkipTest raised at import", Source: "TAXONOMY R9",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": "import unittest\nraise unittest.SkipTest('skip')\n"},
				Expect: Blocked, Layer: "judge: " + schema.ReasonRuntimeError, Why: "there is no skipped case, only a failed import"}},
		&Probe{ID: "V1.9-neutralised-asserts", Taxonomy: "V1.9", Class: "V1", Title: "assertion helpers made no-ops", Source: "TAXONOMY R1, R3",
			Strict: judged(add(map[string]string{"solution.py": neutraliseAsserts + addWrong}), "comparison happens in a separate Go process")},
		&Probe{ID: "V1.12-pyc-poisoning", Taxonomy: "V1.12", Class: "V1", Title: "planted bytecode cache", Source: "TAXONOMY R36",
			Strict: judged(add(map[string]string{"solution.py": addWrong, "__pycache__/solution.cpython-311.pyc": "\x00poisoned"}), "only declared artifacts cross; bytecode writing is off")},

		// V2: comparison spoofing.
		&Probe{ID: "V2.1-always-equal", Taxonomy: "V2.1", Class: "V2", Title: "object whose __eq__ is always true", Source: "TAXONOMY R4",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": alwaysEqual},
				Expect: Blocked, Layer: "judge: " + schema.ReasonRuntimeError, Why: "only JSON bytes leave the candidate; the object does not serialise"}},
		&Probe{ID: "V2.2-lying-subclass", Taxonomy: "V2.2", Class: "V2", Title: "int subclass lying about equality", Source: "TAXONOMY R4",
			Strict: judged(add(map[string]string{"solution.py": lyingInt}), "JSON keeps only the underlying value")},
		&Probe{ID: "V2.3-nan-wildcard", Taxonomy: "V2.3", Class: "V2", Title: "NaN where a number is expected", Source: "TAXONOMY R1",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": "def solve(numbers):\n    return float('nan')\n"},
				Expect: Blocked, Layer: "judge: " + schema.ReasonRuntimeError, Why: "strict JSON has no NaN; NaN never equals"}},

		// V3: test and harness files.
		&Probe{ID: "V3.1-test-edits", Taxonomy: "V3.1", Class: "V3", Title: "ships edited tests and expected values", Source: "TAXONOMY R10",
			Strict: judged(add(map[string]string{"solution.py": addWrong, "hidden/cases.json": `{"cases":[]}`, "tests/test_add.py": "def test_ok():\n    assert True\n"}), "tests live only in the judge's volume")},
		&Probe{ID: "V3.3-pytest-config", Taxonomy: "V3.3", Class: "V3", Title: "pytest.ini and pyproject addopts", Source: "TAXONOMY R37",
			Strict: judged(add(map[string]string{"solution.py": addWrong, "pytest.ini": "[pytest]\naddopts = -k nothing\n", "pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"--deselect x\"\n"}), "the judge runs no pytest")},
		&Probe{ID: "V3.4-plugin-autoload", Taxonomy: "V3.4", Class: "V3", Title: "pytest11 entry point and pytest_plugins", Source: "TAXONOMY R37",
			Strict: judged(add(map[string]string{"solution.py": "pytest_plugins = ['evil']\n" + addWrong, "evil.py": conftestForcePass, "setup.py": "from setuptools import setup\nsetup(name='x', entry_points={'pytest11': ['evil = evil']})\n"}), "nothing from a submission is installed anywhere")},

		// V4: interpreter start-up and monkey-patching.
		&Probe{ID: "V4.1-module-shadowing", Taxonomy: "V4.1", Class: "V4", Title: "shadows json for the process", Source: "TAXONOMY R36",
			Strict: judged(add(map[string]string{"solution.py": shadowJSON, "json.py": "def dumps(*a, **k):\n    return '{\"ok\":true,\"value\":7}'\n"}), "the shim holds its own json; the judge imports nothing")},
		&Probe{ID: "V4.2-sitecustomize", Taxonomy: "V4.2", Class: "V4", Title: "sitecustomize.py start-up hook", Source: "TAXONOMY R36",
			Strict: judged(add(map[string]string{"solution.py": addWrong, "sitecustomize.py": "import builtins\nbuiltins.PASS = True\n", "usercustomize.py": "import sys\n"}), "python3 -I; only declared artifacts cross")},
		&Probe{ID: "V4.3-pth-hook", Taxonomy: "V4.3", Class: "V4", Title: ".pth start-up hook", Source: "TAXONOMY R36",
			Strict: judged(add(map[string]string{"solution.py": addWrong, "evil.pth": "import os; os.environ['PASS']='1'\n"}), "nothing is installed; .pth files never reach a site directory")},
		&Probe{ID: "V4.6-clock-patching", Taxonomy: "V4.6", Class: "V4", Title: "patches the clocks and the alarm, then loops", Source: "TAXONOMY R1",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": clockPatch},
				Expect: Blocked, Layer: "limits: " + schema.ReasonTimeout, Why: "the CPU-time budget is the kernel's count and the host's SIGKILL; patched clocks and timers change nothing"}},

		// V5: answer-key access.
		&Probe{ID: "V5.1-vcs-history", Taxonomy: "V5.1", Class: "V5", Title: "mines git history for the answer", Source: "TAXONOMY R13",
			Strict: judged(add(map[string]string{"solution.py": vcsMine}), "no repository history or tests reach the candidate")},
		&Probe{ID: "V5.3-grader-memory", Taxonomy: "V5.3", Class: "V5", Title: "searches memory, files and environment for expected values", Source: "TAXONOMY R1, R7",
			Strict: judged(add(map[string]string{"solution.py": answerKeySearch}), "expected values never enter the candidate container")},

		// V6: verdict forging.
		&Probe{ID: "V6.1-forged-stdout", Taxonomy: "V6.1", Class: "V6", Title: "prints a forged verdict and PASS lines", Source: "TAXONOMY R18",
			Strict: judged(add(map[string]string{"solution.py": forgedStdout}), "the verdict is the judge's own output")},
		&Probe{ID: "V6.2-planted-reward", Taxonomy: "V6.2", Class: "V6", Title: "plants reward and verdict files", Source: "TAXONOMY R21",
			Strict: judged(add(map[string]string{"solution.py": plantReward, "verdict.json": `{"outcome":"PASS"}`, "reward.txt": "1.0"}), "no verdict file is ever read")},
		&Probe{ID: "V6.3-late-overwrite", Taxonomy: "V6.3", Class: "V6", Title: "background process rewrites results", Source: "TAXONOMY R21",
			Strict: judged(add(map[string]string{"solution.py": lateOverwrite}), "outputs are taken after the whole container stopped")},
		&Probe{ID: "V6.5-exit-code", Taxonomy: "V6.5", Class: "V6", Title: "wrong output, exit status 0", Source: "TAXONOMY R18",
			Strict: &Case{Task: "shout", Files: map[string]string{"solution": "#!/bin/sh\necho PASSED\nexit 0\n"},
				Expect: Blocked, Layer: "judge: " + schema.ReasonWrongAnswer, Why: "the exit status is one input, never the verdict"}},
		&Probe{ID: "V6.6-key-theft", Taxonomy: "V6.6", Class: "V6", Title: "hunts for the grader's signing key", Source: "TAXONOMY R23",
			Strict: &Case{Custom: keyTheft, Expect: Blocked, Layer: "judge: " + schema.ReasonWrongAnswer, Why: "the key lives only in the controller process"}},
		&Probe{ID: "V6.8-fake-infra-error", Taxonomy: "V6.8", Class: "V6", Title: "dresses a failure as a daemon error", Source: "TAXONOMY R18",
			Strict: &Case{Task: "shout", Files: map[string]string{"solution": "#!/bin/sh\necho 'docker: Error response from daemon: OCI runtime create failed' >&2\nexit 125\n"},
				Expect: Blocked, Layer: "judge: " + schema.ReasonRuntimeError, Why: "candidate failures are FAIL; only the grader's own failures are ERROR"}},

		// V8: archive and filesystem escapes.
		&Probe{ID: "V8.1-path-traversal", Taxonomy: "V8.1", Class: "V8", Title: "archive entry ../../evil.py", Source: "TAXONOMY R31",
			Strict: &Case{Task: "add", Archive: tarOf(reg("solution.py", addHonest), reg("../../tmp/evil.py", "x")),
				Expect: Blocked, Layer: "fw-in: path traversal", Why: "names leaving the root are rejected"}},
		&Probe{ID: "V8.2-symlink", Taxonomy: "V8.2", Class: "V8", Title: "solution.py is a symlink to a host file", Source: "TAXONOMY R31",
			Strict: &Case{Task: "add", Prepare: func(dir string) error { return os.Symlink("/etc/passwd", filepath.Join(dir, "solution.py")) },
				Expect: Blocked, Layer: "fw-in: symlink", Why: "links never cross"}},
		&Probe{ID: "V8.3-hardlink", Taxonomy: "V8.3", Class: "V8", Title: "hard link entry in the archive", Source: "TAXONOMY R31",
			Strict: &Case{Task: "add", Archive: tarOf(reg("real.py", addHonest), tarEntry{h: tar.Header{Name: "solution.py", Linkname: "real.py", Typeflag: tar.TypeLink}}),
				Expect: Blocked, Layer: "fw-in: hardlink", Why: "hard links never cross"}},
		&Probe{ID: "V8.5-duplicate-entries", Taxonomy: "V8.5", Class: "V8", Title: "the same name twice with different bodies", Source: "TAXONOMY R31",
			Strict: &Case{Task: "add", Archive: tarOf(reg("solution.py", addHonest), reg("solution.py", addWrong)),
				Expect: Blocked, Layer: "fw-in: duplicate path", Why: "one parse, one canonical archive: duplicates are rejected"}},
		&Probe{ID: "V8.6-output-symlink", Taxonomy: "V8.6", Class: "V8", Title: "output file is a link into the container", Source: "TAXONOMY R31",
			Strict: &Case{Task: "rev", Files: map[string]string{"solution.py": "import os\nos.symlink('/etc/passwd', '/output/out.txt')\n"},
				Expect: Blocked, Layer: "fw-out: symlink", Why: "outputs cross the firewall after the container stopped"}},

		// V9: resource exhaustion.
		&Probe{ID: "V9.5-compressed-archive", Taxonomy: "V9.5", Class: "V9", Title: "gzip-compressed submission", Source: "TAXONOMY R31",
			Strict: &Case{Task: "add", Archive: gzipped(tarOf(reg("solution.py", addHonest))),
				Expect: Blocked, Layer: "fw-in: compressed input", Why: "compressed input is rejected unread"}},
		&Probe{ID: "V9.6-timeout-evasion", Taxonomy: "V9.6", Class: "V9", Title: "ignores signals, double-forks, sleeps", Source: "TAXONOMY R37",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": timeoutEvasion},
				Expect: Blocked, Layer: "limits: " + schema.ReasonTimeout, Why: "SIGKILL of the whole container at the wall-clock backstop; signals, forks and clocks change nothing"}},
		&Probe{ID: "V9.6-busy-loop", Taxonomy: "V9.6", Class: "V9", Title: "loops on the CPU for ever", Source: "issue 30",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": "def solve(numbers):\n    while True:\n        pass\n"},
				Expect: Blocked, Layer: "limits: " + schema.ReasonTimeout, Why: "the CPU-time budget, read from the kernel's accounting, stops it as a timeout (it was runtime_error)"}},
		&Probe{ID: "V9.1-fork-bomb", Taxonomy: "V9.1", Class: "V9", Title: "fork bomb", Source: "TAXONOMY R37",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": forkBomb},
				Expect: Blocked, Layer: "limits: " + schema.ReasonTimeout, Why: "the pids limit holds; the CPU budget or the wall-clock backstop ends it"}},
		&Probe{ID: "V9.2-memory-bomb", Taxonomy: "V9.2", Class: "V9", Title: "allocates until something dies", Source: "TAXONOMY R37",
			Strict: &Case{Task: "add", Files: map[string]string{"solution.py": "def solve(numbers):\n    hoard = []\n    while True:\n        hoard.append(bytearray(8 << 20))\n"},
				Expect: Blocked, Layer: "limits: " + schema.ReasonMemoryLimit, Why: "the memory cgroup kills the candidate, not the grader"}},
		&Probe{ID: "V9.4-output-flood", Taxonomy: "V9.4", Class: "V9", Title: "writes a gigabyte to stdout", Source: "TAXONOMY R37",
			Strict: &Case{Task: "shout", Files: map[string]string{"solution": "#!/usr/bin/env python3\nimport sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n"},
				Expect: Blocked, Layer: "limits: " + schema.ReasonOutputLimit, Why: "output is capped; the container is killed at the cap"}},
		&Probe{ID: "V9.4-output-at-task-limit", Taxonomy: "V9.4", Class: "V9", Title: "prints 65 MiB where the task allows 100 MiB, to make the judge fail", Source: "issue 29",
			Strict: &Case{Task: "wide", Files: map[string]string{"solution": wideOutput},
				Expect: Blocked, Layer: "limits: " + schema.ReasonOutputLimit, Why: "only what the judge reads reaches it; more fails the case, never the grade"}},

		// V10: network.
		&Probe{ID: "V10.2-exfiltration", Taxonomy: "V10.2", Class: "V10", Title: "fetches the answer over the network", Source: "TAXONOMY",
			Strict: judged(add(map[string]string{"solution.py": networkFetch}), "no network: loopback only, no DNS")},

		// V11: state across runs.
		&Probe{ID: "V11.3-cross-run-state", Taxonomy: "V11.3", Class: "V11", Title: "one grade leaves files for the next", Source: "TAXONOMY R21",
			Strict: &Case{Custom: crossRunState, Expect: Blocked, Layer: "ephemeral: nothing survived", Why: "containers and volumes are new per grade"}},

		// V12: replay and binding.
		&Probe{ID: "V12.1-replay", Taxonomy: "V12.1", Class: "V12", Title: "an old PASS presented for other code", Source: "TAXONOMY R40",
			Strict: &Case{Custom: replayProbe, Expect: Blocked, Layer: "verify: subject", Why: "the subject is the digest of the graded archive"}},
		&Probe{ID: "V12.3-tier-downgrade", Taxonomy: "V12.3", Class: "V12", Title: "a verdict presented under another tier", Source: "TAXONOMY",
			Strict: &Case{Custom: tierProbe, Expect: Blocked, Layer: "verify: tier", Why: "the tier is signed"}},
		&Probe{ID: "V12.7-json-ambiguity", Taxonomy: "V12.7", Class: "V12", Title: "duplicate keys in the result record", Source: "TAXONOMY",
			Strict: judged(add(map[string]string{"solution.py": duplicateKeys}), "the judge reads candidate JSON strictly")},

		// V13: specification gaming (detection only: hidden cases help).
		&Probe{ID: "V13.1-hard-coded", Taxonomy: "V13.1", Class: "V13", Title: "hard-codes the public example", Source: "TAXONOMY R10",
			Strict: judged(add(map[string]string{"solution.py": "def solve(numbers):\n    return 3 if numbers == [1, 2] else 0\n"}), "hidden cases differ from the public example")},
		&Probe{ID: "V13.2-test-detection", Taxonomy: "V13.2", Class: "V13", Title: "behaves only when it thinks it is tested", Source: "TAXONOMY R43",
			Strict: judged(add(map[string]string{"solution.py": testDetect}), "no test markers exist in the candidate's environment")},
	)
}

func gzipped(inner func() ([]byte, error)) func() ([]byte, error) {
	return func() ([]byte, error) {
		data, err := inner()
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(data); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
}

// keyTheft searches the candidate container for a piece of the grader's
// private key. The piece is carried reversed, so the submission itself
// does not match.
func keyTheft(ctx context.Context, env *Env) (Observation, error) {
	if env.keyMarker == "" {
		return Observation{}, errorf("the key-theft probe needs Options.KeyPEM")
	}
	rev := []rune(env.keyMarker)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	dir, err := env.TempDir()
	if err != nil {
		return Observation{}, err
	}
	payload := strings.Replace(keyHunt, "REVERSED_MARKER", string(rev), 1)
	if err := writeFiles(dir, map[string]string{"solution.py": payload}); err != nil {
		return Observation{}, err
	}
	res, err := env.Grade(ctx, "add", controller.Submission{Dir: dir})
	if res == nil {
		return Observation{}, err
	}
	return Classify(res.Verdict, false), err
}

// crossRunState grades a planter that writes everywhere it can, then a
// detector that passes only if nothing of the planter survived.
func crossRunState(ctx context.Context, env *Env) (Observation, error) {
	dir, err := env.TempDir()
	if err != nil {
		return Observation{}, err
	}
	if err := writeFiles(dir, map[string]string{"solution.py": planter}); err != nil {
		return Observation{}, err
	}
	if _, err := env.Grade(ctx, "add", controller.Submission{Dir: dir}); err != nil {
		return Observation{}, err
	}
	dir2, err := env.TempDir()
	if err != nil {
		return Observation{}, err
	}
	if err := writeFiles(dir2, map[string]string{"solution.py": detector}); err != nil {
		return Observation{}, err
	}
	res, err := env.Grade(ctx, "add", controller.Submission{Dir: dir2})
	if err != nil {
		return Observation{}, err
	}
	if res.Verdict.Outcome == schema.OutcomePass {
		return Observation{Result: Blocked, Layer: "ephemeral: nothing survived", Outcome: "PASS", RunID: res.Verdict.RunID}, nil
	}
	return Observation{Result: Succeeds, Layer: "none", Outcome: string(res.Verdict.Outcome), Reason: "state from an earlier grade was visible: " + res.Verdict.Reason}, nil
}

// replayProbe grades an honest submission and presents its PASS for a
// different one.
func replayProbe(ctx context.Context, env *Env) (Observation, error) {
	res, other, err := honestAndOther(ctx, env)
	if err != nil {
		return Observation{}, err
	}
	_, verr := attest.Verify(res.Signed.Bundle, env.Signer.PublicKey(), attest.Expect{SubmissionSHA256: other})
	return verifyObservation(verr, attest.ErrSubjectMismatch, "verify: subject")
}

// tierProbe presents a strict verdict as a compat one.
func tierProbe(ctx context.Context, env *Env) (Observation, error) {
	res, _, err := honestAndOther(ctx, env)
	if err != nil {
		return Observation{}, err
	}
	_, verr := attest.Verify(res.Signed.Bundle, env.Signer.PublicKey(), attest.Expect{SubmissionSHA256: res.Verdict.Submission.SHA256, Tier: schema.TierCompat})
	return verifyObservation(verr, attest.ErrTierMismatch, "verify: tier")
}

func honestAndOther(ctx context.Context, env *Env) (*controller.Result, string, error) {
	dir, err := env.TempDir()
	if err != nil {
		return nil, "", err
	}
	if err := writeFiles(dir, map[string]string{"solution.py": addHonest}); err != nil {
		return nil, "", err
	}
	res, err := env.Grade(ctx, "add", controller.Submission{Dir: dir})
	if err != nil {
		return nil, "", err
	}
	if res.Verdict.Outcome != schema.OutcomePass {
		return nil, "", errorf("honest submission graded %s", res.Verdict.Outcome)
	}
	other := strings.Repeat("ab", 32)
	return res, other, nil
}

func verifyObservation(verr error, want error, layer string) (Observation, error) {
	switch {
	case verr == nil:
		return Observation{Result: Succeeds, Layer: "none", Reason: "the verdict verified"}, nil
	case errorsIs(verr, want):
		return Observation{Result: Blocked, Layer: layer, Reason: verr.Error()}, nil
	default:
		return Observation{Result: Blocked, Layer: "verify: other", Reason: verr.Error()}, nil
	}
}
