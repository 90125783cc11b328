# strictgrade volume loader: the init container of every pod runs
#
#     python3 -I -S -c <this file> ROOT0 ROOT1 ...
#
# It reads one tar stream from standard input whose entries are named
# "m<i>/<path>" and lays each one out below ROOT<i>, then reads on until its
# input ends, which is what starts the workload. The stream is made by the
# backend from the firewall's canonical archives: directories and regular
# files only, clean relative names. Anything else is refused all the same
# (exit status 2), and so the pod fails before the workload runs.
import os
import sys
import tarfile

roots = sys.argv[1:]
# Unbuffered: a buffered read would wait for a whole block past the
# archive's end, that is for the go, before laying out anything.
src = sys.stdin.buffer.raw


def fail(msg):
    sys.stderr.write("load: " + msg + "\n")
    sys.exit(2)


dirs = []
with tarfile.open(fileobj=src, mode="r|") as tf:
    for m in tf:
        parts = m.name.rstrip("/").split("/")
        if not parts[0].startswith("m") or not parts[0][1:].isdigit():
            fail("entry outside every mount: %r" % m.name)
        i = int(parts[0][1:])
        if i >= len(roots) or any(p in ("", ".", "..") for p in parts[1:]):
            fail("bad entry name: %r" % m.name)
        dest = os.path.join(roots[i], *parts[1:])
        mode = m.mode & 0o755
        if m.isdir():
            os.makedirs(dest, mode=0o700, exist_ok=True)
            dirs.append((dest, mode | 0o500))
        elif m.isreg():
            f = tf.extractfile(m)
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                while True:
                    b = f.read(1 << 16)
                    if not b:
                        break
                    out.write(b)
            os.chmod(dest, mode | 0o400)
        else:
            fail("not a directory or regular file: %r" % m.name)
# Modes of directories last, deepest first, so that none blocks a write.
for dest, mode in reversed(dirs):
    os.chmod(dest, mode)
for r in roots:
    try:
        os.chmod(r, 0o755)
    except PermissionError:
        # The kubelet made this emptyDir's root (root's, mode 0777), not
        # the loader: its mode stays, and the workload mounts it read-only.
        pass
# Wait for the go: the end of the input.
while src.read(1 << 16):
    pass
