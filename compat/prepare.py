"""strictgrade compat oracle: prepare the checkout.

Runs as `python3 -I -B /inputs/prepare.py` in the oracle's first container,
before any repository code exists on disk, so nothing in it is candidate
code. It clones the oracle's bundle (never the agent's copy), checks out the
base commit, applies the gate-filtered diff with `git apply --check` then
`git apply` (no --3way, no fuzz), makes sure git changed nothing the gate
did not keep, copies the hidden tests in after the diff, and installs the
judge-owned pytest configuration next to (not inside) the repository.

Inputs (read-only): /inputs/plan.json, /inputs/repo.bundle, /inputs/hidden/,
/inputs/diff.patch (final mode), /inputs/pytest.ini. Output: /out/prepare.json.
The test containers that follow mount /work read-only.

The script announces each stage on standard error ("prepare: stage NAME")
before it starts it, so that the host knows how far it got even when the
container was stopped at a limit and left no report: whatever goes wrong
from the stage apply_check on, when the candidate's diff is first read, is
the candidate's doing. The report is bounded whatever the diff: it lists at
most MAX_LISTED changed paths and counts the rest.
"""

import json
import os
import stat
import subprocess
import sys
import time

INPUTS = "/inputs"
WORK = "/work"
REPO = "/work/repo"
OUT = "/out/prepare.json"
KEEP = 16 * 1024  # characters of git output and of messages kept
MAX_LISTED = 20  # changed paths named in the report


def git_env():
    env = dict(os.environ)
    env.update({
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ALLOW_PROTOCOL": "file",
        "GIT_CONFIG_COUNT": "5",
        "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "*",
        "GIT_CONFIG_KEY_1": "core.hooksPath",
        "GIT_CONFIG_VALUE_1": "/dev/null",
        "GIT_CONFIG_KEY_2": "core.autocrlf",
        "GIT_CONFIG_VALUE_2": "false",
        "GIT_CONFIG_KEY_3": "core.fsmonitor",
        "GIT_CONFIG_VALUE_3": "false",
        "GIT_CONFIG_KEY_4": "advice.detachedHead",
        "GIT_CONFIG_VALUE_4": "false",
    })
    return env


ENV = git_env()


current = ""  # the stage announced last


def enter(name):
    global current
    current = name
    sys.stderr.write("prepare: stage %s\n" % name)
    sys.stderr.flush()


class Stop(Exception):
    """Ends the preparation with a status other than ok."""

    def __init__(self, status, stage, message):
        super().__init__(message)
        self.status, self.stage, self.message = status, stage, message


def git(stage, *args, cwd=REPO, status="error"):
    p = subprocess.run(["git", *args], cwd=cwd, env=ENV, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        msg = (p.stderr or p.stdout)[-KEEP:].decode("utf-8", "replace").strip()
        raise Stop(status, stage, msg or "git exited with %d" % p.returncode)
    return p.stdout


def check_tree_path(rel):
    """Refuse a path whose existing components are not plain directories."""
    cur = REPO
    parts = rel.split("/")
    for part in parts[:-1]:
        cur = os.path.join(cur, part)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            raise Stop("error", "inject", "%s: %s is not a directory in the checkout" % (rel, cur))


def inject(rel):
    check_tree_path(rel)
    dst = os.path.join(REPO, rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        st = os.lstat(dst)
        if not stat.S_ISREG(st.st_mode):
            raise Stop("error", "inject", "%s exists in the checkout and is not a regular file" % rel)
    except FileNotFoundError:
        pass
    with open(os.path.join(INPUTS, "hidden", rel), "rb") as f:
        data = f.read()
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def prepare(plan, result):
    steps = result["steps_ms"]
    t = time.monotonic()
    enter("clone")
    git("clone", "clone", "--quiet", "--no-checkout", "--", INPUTS + "/repo.bundle", REPO, cwd=WORK)
    enter("checkout")
    git("checkout", "checkout", "--quiet", "--detach", plan["base"])
    head = git("checkout", "rev-parse", "--verify", "HEAD^{commit}").decode().strip()
    if head != plan["base"]:
        raise Stop("error", "checkout", "HEAD is %s, want %s" % (head, plan["base"]))
    result["head"] = head
    steps["checkout"] = int((time.monotonic() - t) * 1000)

    t = time.monotonic()
    if plan["diff"]:
        patch = INPUTS + "/diff.patch"
        enter("apply_check")
        git("apply_check", "apply", "--check", "--whitespace=nowarn", "-p1", patch, status="apply_failed")
        enter("apply")
        git("apply", "apply", "--whitespace=nowarn", "-p1", patch, status="apply_failed")
    enter("verify")
    changed = git("verify", "diff", "--name-only", "--no-renames", "-z", "HEAD").split(b"\0")
    changed += git("verify", "ls-files", "--others", "-z").split(b"\0")
    changed = sorted({c.decode("utf-8", "surrogateescape") for c in changed if c})
    result["changed"] = [c.encode("utf-8", "backslashreplace").decode("utf-8") for c in changed[:MAX_LISTED]]
    result["changed_count"] = len(changed)
    allowed = set(plan["allowed"])
    outside = [c for c in changed if c not in allowed]
    if outside:
        raise Stop("gate_mismatch", "verify", "git changed paths the gate did not keep: " + ", ".join(outside[:20]))
    for c in changed:
        try:
            st = os.lstat(os.path.join(REPO, c))
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise Stop("gate_mismatch", "verify", "%s is not a regular file after the diff" % c)
    steps["apply"] = int((time.monotonic() - t) * 1000)

    t = time.monotonic()
    enter("inject")
    for rel in plan["hidden"]:
        inject(rel)
    with open(INPUTS + "/pytest.ini", "rb") as f:
        ini = f.read()
    with open(WORK + "/pytest.ini", "wb") as f:
        f.write(ini)
    steps["inject"] = int((time.monotonic() - t) * 1000)


def main():
    with open(INPUTS + "/plan.json", "rb") as f:
        plan = json.load(f)
    result = {"status": "ok", "stage": "", "message": "", "head": "", "changed": [], "changed_count": 0, "steps_ms": {}}
    try:
        prepare(plan, result)
    except Stop as e:
        result.update(status=e.status, stage=e.stage, message=e.message[:KEEP])
    except OSError as e:
        result.update(status="error", stage=current, message=str(e)[:KEEP])
    enter("report")
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(result, f, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
