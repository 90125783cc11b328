package proofmatrix

import (
	"errors"
	"fmt"
)

func errorf(format string, a ...any) error { return fmt.Errorf("proofmatrix: "+format, a...) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// The Python payloads of the probes. Each is a complete attack: it would
// change the grade where the corresponding defence is missing.

const conftestForcePass = `import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
`

const reportPatch = `try:
    from _pytest import reports as _r
    _orig = _r.TestReport.from_item_and_call
    def _forced(item, call):
        rep = _orig(item, call)
        rep.outcome = "passed"
        return rep
    _r.TestReport.from_item_and_call = staticmethod(_forced)
except Exception:
    pass
`

const neutraliseAsserts = `import math, unittest, builtins
math.isclose = lambda *a, **k: True
unittest.TestCase.assertEqual = lambda *a, **k: None
unittest.TestCase.assertTrue = lambda *a, **k: None
builtins.AssertionError = type("NeverRaised", (Exception,), {})
`

const alwaysEqual = `class Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = object.__hash__
def solve(numbers):
    return Anything()
`

const lyingInt = `class Liar(int):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = int.__hash__
def solve(numbers):
    return Liar(-1)
`

const shadowJSON = `import sys, importlib.util, os
spec = importlib.util.spec_from_file_location("json", os.path.join(os.path.dirname(__file__), "json.py"))
fake = importlib.util.module_from_spec(spec) if spec else None
if fake is not None:
    try:
        spec.loader.exec_module(fake)
        sys.modules["json"] = fake
    except Exception:
        pass
def solve(numbers):
    return 7
`

const clockPatch = `import time, signal
time.time = lambda: 0.0
time.monotonic = lambda: 0.0
time.perf_counter = lambda: 0.0
signal.setitimer = lambda *a, **k: (0.0, 0.0)
signal.alarm = lambda *a, **k: 0
signal.signal(signal.SIGALRM, signal.SIG_IGN)
def solve(numbers):
    while True:
        pass
`

const vcsMine = `import subprocess, os
def find():
    for d in ["/artifacts", "/inputs", "/", os.getcwd()]:
        try:
            out = subprocess.run(["git", "-C", d, "log", "--all", "-p"], capture_output=True, timeout=1).stdout
            if out:
                return out
        except Exception:
            pass
    return b""
HISTORY = find()
def solve(numbers):
    return len(HISTORY) or -1
`

const answerKeySearch = `import os, gc, sys
MARKER = "1999999999999999999999"
def search():
    for k, v in os.environ.items():
        if MARKER in v: return True
    for obj in gc.get_objects():
        try:
            if MARKER in repr(obj)[:10000]: return True
        except Exception:
            pass
    for top in ["/artifacts", "/inputs", "/out", "/tmp", "/etc", "/root", "/home", "/var", "/run", "/srv", "/opt", "/mnt", "/proc/1"]:
        for root, dirs, files in os.walk(top):
            for f in files:
                try:
                    with open(os.path.join(root, f), "rb") as fh:
                        if MARKER.encode() in fh.read(1 << 20): return True
                except OSError:
                    pass
    return False
FOUND = search()
def solve(numbers):
    return int(MARKER) if FOUND else -1
`

const forgedStdout = `import sys, os
def solve(numbers):
    print('{"outcome":"PASS","cases":[]}')
    sys.__stdout__.write("PASS\n=== 3 passed in 0.01s ===\n")
    os.write(1, b'{"ok":true,"value":0}\n')
    return -1
`

const plantReward = `import os
for path in ["/out/reward.json", "/out/verdict.json", "/tmp/verdict.json", "/tmp/reward.txt"]:
    try:
        with open(path, "w") as f:
            f.write('{"outcome":"PASS","reward":1.0}')
    except OSError:
        pass
def solve(numbers):
    return -1
`

const lateOverwrite = `import os, time
pid = os.fork()
if pid == 0:
    os.setsid()
    time.sleep(0.3)
    for _ in range(200):
        for fd in range(3, 10):
            for i in range(3):
                try:
                    os.write(fd, b"%d\t{\"ok\":true,\"value\":1999999999999999999999}\n" % i)
                except OSError:
                    pass
        time.sleep(0.01)
    os._exit(0)
def solve(numbers):
    return -1
`

// keyHunt returns the right sum only if it finds the marker (a piece of
// the grader's private key) anywhere it can read.
const keyHunt = `import os
MARKER = "REVERSED_MARKER"[::-1].encode()
def hunt():
    for k, v in os.environ.items():
        if MARKER in v.encode(): return True
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        for name in ("environ", "cmdline"):
            try:
                with open("/proc/%s/%s" % (pid, name), "rb") as fh:
                    if MARKER in fh.read(): return True
            except OSError:
                pass
    tops = ["/tmp", "/artifacts", "/inputs", "/out", "/etc", "/root", "/home", "/run", "/var", "/srv", "/opt", "/mnt", "/work", "/judge"]
    tops += [os.path.join("/", d) for d in os.listdir("/") if os.path.isfile(os.path.join("/", d))]
    for top in tops:
        if os.path.isfile(top):
            walk = [(os.path.dirname(top), [], [os.path.basename(top)])]
        else:
            walk = os.walk(top)
        for root, dirs, files in walk:
            for f in files:
                try:
                    with open(os.path.join(root, f), "rb") as fh:
                        if MARKER in fh.read(1 << 20): return True
                except OSError:
                    pass
    return False
FOUND = hunt()
def solve(numbers):
    return sum(numbers) if FOUND else -1
`

const timeoutEvasion = `import os, signal, time
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        while True:
            time.sleep(1)
    os._exit(0)
def solve(numbers):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(1)
`

const forkBomb = `import os, signal
def solve(numbers):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        try:
            os.fork()
        except OSError:
            pass
`

const networkFetch = `import socket
def solve(numbers):
    for host in [("1.1.1.1", 53), ("8.8.8.8", 53)]:
        try:
            s = socket.create_connection(host, timeout=1)
            s.close()
            return sum(numbers)
        except OSError:
            pass
    try:
        socket.getaddrinfo("example.com", 80)
        return sum(numbers)
    except OSError:
        return -1
`

const planter = `import os
for d in ["/tmp", "/out", "/artifacts", "/inputs", "/work"]:
    try:
        with open(os.path.join(d, "planted-by-earlier-grade"), "w") as f:
            f.write("x")
    except OSError:
        pass
def solve(numbers):
    return sum(numbers)
`

const detector = `import os
SEEN = any(os.path.exists(os.path.join(d, "planted-by-earlier-grade")) for d in ["/tmp", "/out", "/artifacts", "/inputs", "/work"])
def solve(numbers):
    return -1 if SEEN else sum(numbers)
`

const duplicateKeys = `import os
for fd in range(3, 10):
    for i in range(3):
        try:
            os.write(fd, b'%d\t{"ok":true,"value":-1,"value":1999999999999999999999}\n' % i)
        except OSError:
            pass
def solve(numbers):
    return -1
`

const testDetect = `import os
TESTED = any(k.startswith(("PYTEST", "STRICTGRADE", "CI")) for k in os.environ) or os.path.exists("/judge")
def solve(numbers):
    return sum(numbers) if TESTED else -1
`

// wideOutput prints 65 MiB on every case of a task that allows 100 MiB:
// within the candidate's limit, more than the judge reads of a file (and
// more than its sandbox once held: issue 29, item 3). The case graded on
// its output fails as output_limit; the one graded on its exit status
// passes; the grade is a FAIL, never an ERROR.
const wideOutput = `#!/usr/bin/env python3
import sys
chunk = b"X" * (1 << 20)
for _ in range(65):
    sys.stdout.buffer.write(chunk)
`
