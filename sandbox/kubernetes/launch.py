# strictgrade launcher: the workload of a pod made before its command line
# was known (a pod started ahead of time for one case of a command task). It
# runs as
#
#     python3 -I -S -c <this file> FILE
#
# in the work container, and executes the command line FILE holds (a JSON
# array of strings, laid out by the loader like every other tree) in its own
# place: same process, environment, working directory and standard streams,
# so that what the workload sees is what it would see started directly.
# Anything that keeps the command from running is exit status 124, with a
# line on standard error, as the Docker backend's init gives.
import json
import os
import signal
import sys


def fail(msg):
    sys.stderr.write("launch: " + msg + "\n")
    sys.stderr.flush()
    os._exit(124)


try:
    with open(sys.argv[1], "rb") as f:
        argv = json.load(f)
except (OSError, ValueError) as e:
    fail("command line: %s" % e)
if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and "\0" not in a for a in argv):
    fail("command line: not a list of strings")
# The interpreter ignores these two signals for itself, and an ignored
# signal stays ignored across exec: put them back as a new process has them.
for name in ("SIGPIPE", "SIGXFSZ"):
    if hasattr(signal, name):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
try:
    os.execvp(argv[0], argv)
except OSError as e:
    fail("%s: %s" % (argv[0], e.strerror))
