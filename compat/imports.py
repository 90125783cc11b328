"""strictgrade compat oracle: where the checkout's packages come from.

Runs as `python3 -P -s -B -c <this file> REPO OUT PYTEST_ARG...` in the
baseline only, in a container of its own, with the work volume read-only.
It collects the hidden tests with pytest, in this process and with the
suites' own arguments (--collect-only added), so that pytest imports what
it imports when the suites run, applies the judge-owned pythonpath and
imports the test modules. When the session ends it writes OUT, a JSON
object: "packages", the top-level packages of the checkout (directories
holding __init__.py at the repository's top and in its src/), and
"shadowed", those that resolve to somewhere outside the checkout (the
runtime image's copy, or the standard library's), each with where it
resolves and where the checkout has it. A package the tests imported is
resolved by sys.modules, any other by importlib's finder, which imports
nothing.

The baseline runs no candidate code, so what this reports is the task's
own state; it decides nothing in a final grade.
"""

import importlib.util
import json
import os
import sys


def packages(repo):
    found = {}
    for top in (repo, os.path.join(repo, "src")):
        try:
            names = sorted(os.listdir(top))
        except OSError:
            continue
        for name in names:
            path = os.path.join(top, name)
            if name.isidentifier() and os.path.isfile(os.path.join(path, "__init__.py")):
                found.setdefault(name, path)
    return found


def origin(name):
    mod = sys.modules.get(name)
    if mod is not None:
        f = getattr(mod, "__file__", None)
        if f:
            return os.path.dirname(f) if os.path.basename(f) == "__init__.py" else f
        path = list(getattr(mod, "__path__", []) or [])
        return path[0] if path else None
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    return spec.origin


def inside(path, repo):
    real = os.path.realpath(path)
    return real == repo or real.startswith(repo + os.sep)


class Probe:
    def __init__(self, repo, out):
        self.repo, self.out, self.done = os.path.realpath(repo), out, False

    def pytest_sessionfinish(self, session):
        if self.done:
            return
        self.done = True
        found = packages(self.repo)
        shadowed = []
        for name, path in sorted(found.items()):
            where = origin(name)
            if where and where not in ("built-in", "frozen") and not inside(where, self.repo):
                shadowed.append({"name": name, "resolves_to": where, "checkout": path})
        with open(self.out, "w") as f:
            json.dump({"packages": sorted(found), "shadowed": shadowed}, f)


def main():
    repo, out = sys.argv[1], sys.argv[2]
    import pytest

    pytest.main(sys.argv[3:], plugins=[Probe(repo, out)])


main()
