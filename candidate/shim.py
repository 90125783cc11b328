# strictgrade function-task shim. Trusted code that runs next to the
# candidate inside the candidate container: it imports the candidate's
# callable, applies it to each case's JSON arguments and writes the return
# value as JSON, one line per case ("<index>\t<ms>\t<cpu>\t<record>", <ms>
# the call's own wall-clock time and <cpu> the process's CPU time during the
# call, both in milliseconds), to the container's standard output, which it keeps for itself: the candidate's
# own prints go to standard error. Only these bytes leave the container;
# expected values are never here. Whatever the candidate does to this
# process can only change its own answers, which the judge compares as data.
#
# The cases come in the order the host drew for this grade from its nonce,
# and <index> is a case's position in that order: which case of the task
# it is stays on the host, so answers keyed to the order of the calls (or to
# the task's own order) are wrong answers.
#
# A return value must be what json.dumps encodes with allow_nan=False: a
# tuple becomes an array and non-string dict keys become strings, but a
# value holding NaN or an infinity (or a set, bytes, any object json cannot
# encode) is recorded as {"ok": false, "error": "return value is not JSON:
# ..."}, so the judge FAILs the case as if the callable had raised
# (decided by exception, reason code runtime_error), whatever the task's
# allow_nan says: that option is about expected values in text, not about
# what a function may return. The task format's "Kinds" text says so.
import json
import os
import signal
import sys
import time
import traceback

CASES = "/inputs/cases.json"

# The records' channel: the original standard output, moved to a private
# descriptor before any candidate code runs; descriptor 1 then points at
# standard error.
RESULTS = os.dup(1)
os.dup2(2, 1)

# The shim's own references to what it times calls with, taken before any
# candidate code runs: a candidate that patches the signal or time module
# changes its own view of them, not the shim's. (Whatever it does, the
# container's CPU budget is the host's.)
setitimer, set_handler = signal.setitimer, signal.signal
ITIMER_PROF, ITIMER_REAL, SIGPROF, SIGALRM = signal.ITIMER_PROF, signal.ITIMER_REAL, signal.SIGPROF, signal.SIGALRM
monotonic, process_time = time.monotonic, time.process_time


# The current call's wall-clock and CPU time in milliseconds, set before
# its record is written.
elapsed_ms = 0
cpu_ms = 0


def write_line(index, body):
    line = ("%d\t%d\t%d\t" % (index, elapsed_ms, cpu_ms)).encode() + body + b"\n"
    while line:
        line = line[os.write(RESULTS, line):]


def write_record(index, record):
    write_line(index, json.dumps(record, allow_nan=False, separators=(",", ":")).encode())


def describe(exc):
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text[-500:]


# A call has a CPU-time budget of case_seconds (ITIMER_PROF: the CPU time of
# every thread of this process) and a wall-clock backstop of
# backstop_seconds (ITIMER_REAL) for a call that sleeps or blocks. The
# container's own CPU budget covers processes the call starts. When the
# backstop comes while this process's threads waited for a CPU at least
# half the call's time (their run-queue delay in /proc/self/task/*/schedstat),
# the host starved the call: the backstop stretches, a backstop at a time,
# up to stretch_seconds, so that the budget decides; where the kernel keeps
# no such count (a user-space kernel), the backstop is stretch_seconds from
# the start. Whichever limit stops the call, its line carries a marker of
# that limit in place of a record, which the host turns into the case's
# timeout.
class CaseTimeout(BaseException):
    def __init__(self, marker):
        self.marker = marker


def run_delay():
    """The run-queue delay of this process's live threads, in seconds, or
    None where the kernel does not keep it."""
    total, seen = 0, False
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open("/proc/self/task/%s/schedstat" % tid, "rb") as f:
                total += int(f.read().split()[1])
                seen = True
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9 if seen else None


class Call:
    start = 0.0
    waited = None
    backstop = 0.0
    stretch = 0.0


call = Call()


def on_prof(signum, frame):
    raise CaseTimeout(b"!timeout-cpu")


def on_alarm(signum, frame):
    elapsed = monotonic() - call.start
    if call.waited is not None and elapsed < call.stretch:
        now = run_delay()
        if now is not None and now - call.waited >= 0.5 * elapsed:
            setitimer(ITIMER_REAL, min(call.backstop, call.stretch - elapsed))
            return
    raise CaseTimeout(b"!timeout-wall")


def stop_timers():
    setitimer(ITIMER_PROF, 0)
    setitimer(ITIMER_REAL, 0)


def main():
    with open(CASES, "rb") as f:
        spec = json.load(f)
    module_name, func_name, seconds = spec["module"], spec["name"], spec["case_seconds"]
    call.backstop, call.stretch = spec["backstop_seconds"], spec["stretch_seconds"]
    sys.path.insert(0, "/artifacts")
    # The candidate's prints go to stderr so stdout carries nothing of value.
    sys.stdout = sys.stderr
    try:
        module = __import__(module_name)
        func = getattr(module, func_name)
    except BaseException as exc:
        for i, _ in enumerate(spec["cases"]):
            write_record(i, {"ok": False, "error": "import failed: " + describe(exc)})
        return
    set_handler(SIGALRM, on_alarm)
    set_handler(SIGPROF, on_prof)
    global elapsed_ms, cpu_ms
    for i, args in enumerate(spec["cases"]):
        start, cpu_start = monotonic(), process_time()
        call.start, call.waited = start, run_delay()
        marker = None
        try:
            setitimer(ITIMER_REAL, call.backstop if call.waited is not None else call.stretch)
            setitimer(ITIMER_PROF, seconds)
            try:
                value = func(*args)
            finally:
                stop_timers()
            try:
                record = {"ok": True, "value": value}
                json.dumps(record, allow_nan=False)
            except BaseException as exc:
                record = {"ok": False, "error": "return value is not JSON: " + describe(exc)}
        except CaseTimeout as exc:
            stop_timers()
            marker = exc.marker
        except BaseException as exc:
            stop_timers()
            record = {"ok": False, "error": describe(exc)}
        try:
            elapsed_ms = int((monotonic() - start) * 1000)
            cpu_ms = int((process_time() - cpu_start) * 1000)
            if marker is not None:
                write_line(i, marker)
            else:
                write_record(i, record)
        except BaseException as exc:
            sys.stderr.write("shim: cannot record case %d: %s\n" % (i, describe(exc)))


if __name__ == "__main__":
    main()
