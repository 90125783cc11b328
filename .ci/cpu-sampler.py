#!/usr/bin/env python3
"""Where a CI run's CPU goes: sample, then report.

  .ci/cpu-sampler.py sample OUT.json     # until SIGTERM or SIGINT; every INTERVAL s (default 2)
  .ci/cpu-sampler.py report OUT.json     # own CPU by process name, and the test binaries

Every sample reads each process's CPU time (/proc/PID/stat: utime + stime)
and the machine's busy time (/proc/stat). A process is known by its PID and
start time; its figure is the last one seen less what it had used at the
first scan, so a process that lived less than one interval is missed (its
time shows only in the machine's total).
"""
import json
import os
import signal
import sys
import time
from collections import Counter

HZ = os.sysconf("SC_CLK_TCK")


def busy():
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:]))
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / HZ


def sample(out, interval):
    procs, machine = {}, []

    def scan():
        now = time.time()
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            end = stat.rfind(")")
            comm = stat[stat.find("(") + 1:end]
            fields = stat[end + 2:].split()
            key = pid + ":" + fields[19]
            p = procs.get(key)
            if p is None:
                try:
                    with open(f"/proc/{pid}/cgroup") as f:
                        cg = next((l.split(":", 2)[2].strip() for l in f if "cpuacct" in l.split(":")[1]), "")
                except OSError:
                    cg = ""
                p = procs[key] = {"comm": comm, "cgroup": cg, "t0": now}
            p["own"] = (int(fields[11]) + int(fields[12])) / HZ
            # What a process had used before the first scan is not the run's.
            p.setdefault("base", p["own"] if not machine else 0)
            p["t1"] = now
        machine.append((now, busy()))

    def dump(*_):
        with open(out, "w") as f:
            json.dump({"procs": procs, "machine": machine}, f)
        sys.exit(0)

    signal.signal(signal.SIGTERM, dump)
    signal.signal(signal.SIGINT, dump)
    while True:
        scan()
        time.sleep(interval)


def report(path):
    d = json.load(open(path))
    m = d["machine"]
    if not m:
        sys.exit(f"{path}: no sample was taken")
    print(f"machine busy {m[-1][1] - m[0][1]:.0f} CPU-s in {m[-1][0] - m[0][0]:.0f} s")
    names = Counter()
    for p in d["procs"].values():
        name = p["comm"]
        if p["cgroup"].startswith("/docker/"):
            name = "(Docker containers)"
        names[name] += p["own"] - p["base"]
    print(f"seen in processes {sum(names.values()):.0f} CPU-s; by name:")
    for name, cpu in names.most_common(25):
        print(f"{cpu:9.1f}  {name}")
    print("test binaries (own CPU-s, alive s):")
    tests = sorted(((p["own"] - p["base"], p["comm"], p["t1"] - p["t0"]) for p in d["procs"].values() if p["comm"].endswith(".test")), reverse=True)
    for cpu, name, alive in tests[:15]:
        print(f"{cpu:9.1f}  {name}  {alive:.0f}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("sample", "report"):
        sys.exit(__doc__)
    if sys.argv[1] == "sample":
        sample(sys.argv[2], float(os.environ.get("INTERVAL", "2")))
    report(sys.argv[2])
