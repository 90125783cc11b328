# strictgrade bench's one-container baseline: the way most harnesses grade,
# kept as a yardstick for the strict tier's cost. One process in one
# hardened container runs every case of the task against the candidate's
# artifacts (read-only at /artifacts) and compares what it got with the
# expected values, which it holds itself: it reads the cases, expected
# values included, from standard input before any candidate code runs.
#
# It calls the candidate the way the strict tier does (package candidate):
#   function  import module from /artifacts, call name(*args) per case with
#             a per-case alarm, the return value taken as JSON;
#   command   run /artifacts/<path> argv in /artifacts with the case's
#             standard input, per-case timeout;
#   data      run argv in /artifacts with the case's input files in /input
#             and an empty /output, then read the expected files from
#             /output.
# and compares the way the judge does (judge/compare.go): exact, lines,
# tokens, numbers, json, unordered_lines and csv, with their options.
#
# The report goes to the original standard output, which this process keeps
# for itself (descriptor 1 is pointed at standard error before the candidate
# runs): "case\t<index>\t<PASS|FAIL>\t<reason>" per case, then
# "result\t<PASS|FAIL>\t<passed>\t<total>". A failure of this program
# itself is "error\t<text>" and exit status 3.
#
# Nothing here defends against the candidate, which shares the process (or,
# for command and data tasks, the container): that is what the strict tier
# is for. The baseline is a yardstick, not a grader.
import base64
import collections
import csv
import io
import json
import math
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import traceback
from decimal import Decimal

SPEC = json.loads(sys.stdin.buffer.read())
REPORT = os.dup(1)
os.dup2(2, 1)
sys.stdout = sys.stderr

ARTIFACTS = "/artifacts"
INPUT = "/input"
OUTPUT = "/output"


def emit(*fields):
    line = ("\t".join(str(f).replace("\t", " ").replace("\n", " ") for f in fields) + "\n").encode("utf-8", "replace")
    while line:
        line = line[os.write(REPORT, line):]


def describe(exc):
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()[-300:]


class InternalError(Exception):
    pass


# ---- numbers (judge/numbers.go) ----------------------------------------

DECIMAL_RE = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
SPECIAL_RE = re.compile(rb"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def parse_number(tok):
    """A Decimal for a numeric token (bytes), or None."""
    if DECIMAL_RE.fullmatch(tok):
        return Decimal(tok.decode("ascii"))
    if SPECIAL_RE.fullmatch(tok):
        body = tok.lstrip(b"+-").lower()
        if body == b"nan":
            return Decimal("NaN")
        return Decimal("-Infinity" if tok.startswith(b"-") else "Infinity")
    return None


def numbers_equal(a, b, cmp):
    if a.is_nan() or b.is_nan():
        return bool(cmp.get("allow_nan")) and a.is_nan() and b.is_nan()
    if a.is_infinite() or b.is_infinite():
        return a == b
    if a == b:
        return True
    abs_tol, rel_tol = cmp.get("abs_tol", 0), cmp.get("rel_tol", 0)
    if not abs_tol and not rel_tol:
        return False
    try:
        fa, fb = float(a), float(b)
    except OverflowError:
        return False
    if math.isinf(fa) or math.isinf(fb):
        return False
    if fa == fb:
        return True
    d = abs(fa - fb)
    return d <= abs_tol or d <= rel_tol * max(abs(fa), abs(fb))


# ---- text (judge/compare.go) -------------------------------------------

SPACE = b" \t\n\r\x0b\x0c"
TRAILING = b" \t\r\x0b\x0c"


def fold(b):
    out = []
    for ch in b.decode("utf-8", "surrogateescape"):
        up = ch.upper()
        up = up if len(up) == 1 else ch
        low = up.lower()
        out.append(low if len(low) == 1 else up)
    return "".join(out).encode("utf-8", "surrogateescape")


def text_equal(a, b, ignore_case):
    return a == b or (ignore_case and fold(a) == fold(b))


def lines_of(b):
    b = b.rstrip(SPACE)
    if not b:
        return []
    return [line.rstrip(TRAILING) for line in b.split(b"\n")]


def cmp_exact(got, want, cmp):
    return None if got == want else "output differs"


def cmp_lines(got, want, cmp):
    g, w = lines_of(got), lines_of(want)
    for i, (a, b) in enumerate(zip(g, w)):
        if not text_equal(a, b, cmp.get("ignore_case")):
            return "line %d differs" % (i + 1)
    return None if len(g) == len(w) else "got %d lines, want %d" % (len(g), len(w))


def cmp_tokens(got, want, cmp):
    g, w = got.split(), want.split()
    for i, (a, b) in enumerate(zip(g, w)):
        if not text_equal(a, b, cmp.get("ignore_case")):
            return "token %d differs" % (i + 1)
    return None if len(g) == len(w) else "got %d tokens, want %d" % (len(g), len(w))


def cmp_unordered_lines(got, want, cmp):
    key = fold if cmp.get("ignore_case") else (lambda b: b)
    if collections.Counter(map(key, lines_of(got))) != collections.Counter(map(key, lines_of(want))):
        return "the lines differ (compared without order)"
    return None


def cmp_numbers(got, want, cmp):
    g, w = got.split(), want.split()
    if len(g) != len(w):
        return "got %d numbers, want %d" % (len(g), len(w))
    for i, (a, b) in enumerate(zip(g, w)):
        na, nb = parse_number(a), parse_number(b)
        if nb is None:
            raise InternalError("expected token %d is not a number" % (i + 1))
        if na is None or not numbers_equal(na, nb, cmp):
            return "token %d differs" % (i + 1)
    return None


# ---- json (judge/jsoncmp.go) -------------------------------------------


def parse_json(b):
    """Parse JSON text with exact numbers; duplicate keys and NaN refused."""

    def pairs(items):
        obj = {}
        for k, v in items:
            if k in obj:
                raise ValueError("duplicate key")
            obj[k] = v
        return obj

    def constant(name):
        raise ValueError("not JSON: " + name)

    text = b.decode("utf-8") if isinstance(b, bytes) else b
    return json.loads(text, parse_float=Decimal, parse_int=Decimal, parse_constant=constant, object_pairs_hook=pairs)


def canonical(v):
    """A key equal for exactly-equal JSON values."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return (type(v).__name__, v)
    if isinstance(v, Decimal):
        return ("num", "0" if v == 0 else str(v.normalize()))
    if isinstance(v, list):
        return ("list", tuple(canonical(x) for x in v))
    return ("obj", tuple(sorted((k, canonical(x)) for k, x in v.items())))


def json_equal(a, b, cmp, unordered):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is bool and type(b) is bool and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return isinstance(a, Decimal) and isinstance(b, Decimal) and numbers_equal(a, b, cmp)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
            return False
        if unordered:
            return bag_equal(a, b, cmp)
        return all(json_equal(x, y, cmp, unordered) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k], cmp, unordered) for k in a)
    return False


def bag_equal(a, b, cmp):
    exact = not cmp.get("abs_tol") and not cmp.get("rel_tol")
    if exact:
        return collections.Counter(map(canonical, a)) == collections.Counter(map(canonical, b))
    # A pairing under a tolerance: a maximum bipartite matching.
    match = [-1] * len(b)

    def augment(i, seen):
        for j in range(len(b)):
            if not seen[j] and json_equal(a[i], b[j], cmp, True):
                seen[j] = True
                if match[j] < 0 or augment(match[j], seen):
                    match[j] = i
                    return True
        return False

    return all(augment(i, [False] * len(b)) for i in range(len(a)))


def cmp_json(got, want, cmp):
    try:
        g = parse_json(got)
    except (ValueError, UnicodeDecodeError) as exc:
        return "not JSON: " + describe(exc)
    return json_values(g, parse_json(want), cmp)


def json_values(got, want, cmp):
    return None if json_equal(got, want, cmp, bool(cmp.get("unordered_arrays"))) else "the JSON values differ"


# ---- csv (judge/csvcmp.go) ---------------------------------------------


def csv_rows(b):
    text = b.decode("utf-8", "surrogateescape")
    return [row for row in csv.reader(io.StringIO(text, newline=""), strict=True) if row]


def cmp_csv(got, want, cmp):
    w = csv_rows(want)
    try:
        g = csv_rows(got)
    except csv.Error as exc:
        return "not valid CSV: " + describe(exc)
    if len(g) != len(w):
        return "got %d rows, want %d" % (len(g), len(w))
    for r, (grow, wrow) in enumerate(zip(g, w)):
        if len(grow) != len(wrow):
            return "row %d: got %d columns, want %d" % (r + 1, len(grow), len(wrow))
        for c, (gc, wc) in enumerate(zip(grow, wrow)):
            if r == 0 and cmp.get("csv_header"):
                ok = gc == wc
            else:
                wn = parse_number(wc.strip(" \t").encode("utf-8", "surrogateescape"))
                if wn is not None:
                    gn = parse_number(gc.strip(" \t").encode("utf-8", "surrogateescape"))
                    ok = gn is not None and numbers_equal(gn, wn, cmp)
                else:
                    ok = text_equal(gc.encode("utf-8", "surrogateescape"), wc.encode("utf-8", "surrogateescape"), cmp.get("ignore_case"))
            if not ok:
                return "row %d, column %d differs" % (r + 1, c + 1)
    return None


COMPARATORS = {
    "exact": cmp_exact,
    "lines": cmp_lines,
    "tokens": cmp_tokens,
    "numbers": cmp_numbers,
    "json": cmp_json,
    "unordered_lines": cmp_unordered_lines,
    "csv": cmp_csv,
}


def compare(cmp, got, want):
    f = COMPARATORS.get(cmp.get("kind"))
    if f is None:
        raise InternalError("unknown comparator %r" % cmp.get("kind"))
    return f(got, want, cmp)


# ---- running the candidate ---------------------------------------------


class CaseTimeout(BaseException):
    pass


def on_alarm(signum, frame):
    raise CaseTimeout()


def run_function(cases):
    """Calls module.name for each case in this process."""
    sys.path.insert(0, ARTIFACTS)
    try:
        module = __import__(SPEC["module"])
        func = getattr(module, SPEC["name"])
    except BaseException as exc:
        return ["import failed: " + describe(exc)] * len(cases)
    signal.signal(signal.SIGALRM, on_alarm)
    seconds = SPEC["case_seconds"]
    reasons = []
    for c in cases:
        try:
            args = json.loads(c["args"])
            signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                value = func(*args)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            text = json.dumps(value, allow_nan=False)
        except CaseTimeout:
            reasons.append("timeout: case exceeded %gs" % seconds)
            continue
        except BaseException as exc:
            reasons.append("raised or returned a value that is not JSON: " + describe(exc))
            continue
        if len(text) > SPEC["output_bytes"]:
            reasons.append("return value larger than the output limit")
            continue
        reasons.append(json_values(parse_json(text), parse_json(c["expected"]), c["compare"]))
    return reasons


def run_process(argv, stdin):
    """Runs argv in /artifacts; returns (exit status, stdout) or a reason."""
    try:
        p = subprocess.Popen(argv, cwd=ARTIFACTS, env=SPEC["env"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return None, None, "could not start: " + describe(exc)
    try:
        out, _ = p.communicate(stdin, timeout=SPEC["case_seconds"])
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            p.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        return None, None, "timeout: case exceeded %gs" % SPEC["case_seconds"]
    code = p.returncode
    if code < 0:
        code = 128 - code
    if len(out) > SPEC["output_bytes"]:
        return None, None, "standard output exceeded its limit"
    return code, out, None


def run_command(cases):
    reasons = []
    argv0 = ARTIFACTS + "/" + SPEC["path"]
    for c in cases:
        code, out, why = run_process([argv0] + c["argv"], c["stdin"].encode("utf-8"))
        if why is None and code != c["expected_exit"]:
            why = "exited with status %d, not %d" % (code, c["expected_exit"])
        if why is None and c["expected_stdout"] is not None:
            why = compare(c["compare"], out, c["expected_stdout"].encode("utf-8"))
        reasons.append(why)
    return reasons


def empty(d):
    for name in os.listdir(d):
        p = os.path.join(d, name)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.remove(p)


def output_files():
    """The regular files under /output by relative name, or a reason."""
    files, total = {}, 0
    for top, dirs, names in os.walk(OUTPUT):
        for name in dirs + names:
            p = os.path.join(top, name)
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                return None, "an output entry is not a regular file"
            total += st.st_size
            if total > SPEC["output_bytes"]:
                return None, "the outputs exceed the output limit"
            with open(p, "rb") as f:
                files[os.path.relpath(p, OUTPUT)] = f.read()
    return files, None


def run_data(cases):
    reasons = []
    for c in cases:
        empty(INPUT)
        empty(OUTPUT)
        for name, data in c["inputs"].items():
            p = os.path.join(INPUT, name)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(base64.b64decode(data))
        code, _, why = run_process(list(SPEC["argv"]), b"")
        if why is None and code != c["expected_exit"]:
            why = "exited with status %d, not %d" % (code, c["expected_exit"])
        if why is None:
            files, why = output_files()
        if why is None:
            for name in sorted(c["expected_files"]):
                if name not in files:
                    why = "an expected output file is missing"
                else:
                    why = compare(c["compare"], files[name], base64.b64decode(c["expected_files"][name]))
                if why is not None:
                    break
        reasons.append(why)
    return reasons


def main():
    cases = SPEC["cases"]
    run = {"function": run_function, "command": run_command, "data": run_data}.get(SPEC["kind"])
    if run is None:
        raise InternalError("unknown task kind %r" % SPEC["kind"])
    reasons = run(cases)
    passed = 0
    for i, why in enumerate(reasons):
        if why is None:
            passed += 1
            emit("case", i, "PASS", "")
        else:
            emit("case", i, "FAIL", why)
    emit("result", "PASS" if passed == len(cases) else "FAIL", passed, len(cases))


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:
        # A fault of this program (or of a candidate that broke it from
        # inside the process): never a verdict.
        emit("error", describe(exc))
        sys.exit(3)
