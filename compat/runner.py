"""strictgrade compat oracle: run the tests with their output capped.

Runs as `python3 -I -c <this file> CAP STATUS CMD [ARG...]` in each test
container, under the engine's stream-out wrapper, which gives it the
container's standard error as its standard output. It starts CMD (pytest)
with standard output and standard error on one pipe and copies what comes
through to its own standard output. When more than CAP bytes have come, it
kills CMD, writes LIMIT_LINE and exits with STATUS: a flood of output
ends the run within milliseconds instead of racing the wall clock.
Otherwise it exits with CMD's status (128 + N when signal N ended it) as
soon as CMD has ended, even if a process CMD started still holds the pipe;
the wrapper then kills whatever is left.

It shares its user with the code under test, which can kill it, write
around it or fake its exit status: none of that can make a test pass, only
fail.
"""

import os
import select
import signal
import sys
import threading

LIMIT_LINE = b"\nstrictgrade: the tests wrote more than %d bytes of output; stopped\n"


def write(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def main():
    cap, limit_exit = int(sys.argv[1]), int(sys.argv[2])
    cmd = sys.argv[3:]
    r, w = os.pipe()
    pid = os.posix_spawnp(cmd[0], cmd, os.environ,
                          file_actions=[(os.POSIX_SPAWN_DUP2, w, 1), (os.POSIX_SPAWN_DUP2, w, 2)],
                          setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    os.close(w)

    # A thread waits for CMD and wakes the copy loop through a pipe.
    woken, wake = os.pipe()
    status = []

    def reap():
        status.append(os.waitpid(pid, 0)[1])
        os.write(wake, b".")

    threading.Thread(target=reap, daemon=True).start()

    passed = 0

    def copy(chunk):
        nonlocal passed
        if passed + len(chunk) > cap:
            write(chunk[:cap - passed])
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            write(LIMIT_LINE % cap)
            os._exit(limit_exit)
        passed += len(chunk)
        write(chunk)

    eof = False
    while True:
        ready = select.select([woken] if eof else [r, woken], [], [])[0]
        if woken in ready:
            break
        chunk = os.read(r, 1 << 16)
        if not chunk:
            eof = True
            continue
        copy(chunk)
    # CMD has ended: copy what it left in the pipe, without waiting for
    # another process that may still hold it. The cap bounds this too.
    os.set_blocking(r, False)
    while not eof:
        try:
            chunk = os.read(r, 1 << 16)
        except BlockingIOError:
            break
        eof = not chunk
        copy(chunk)
    code = os.waitstatus_to_exitcode(status[0])
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
