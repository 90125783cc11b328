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
#
#     python3 -I -S -c <this file> --into DIR
#
# is a session's CopyIn, run in the pod's keeper container: the entries,
# named "m0/<path>" as above, are laid out below DIR, an existing directory,
# and the loader exits at the end of the archive. Processes of the session
# may be running meanwhile, so nothing on the way is followed: DIR and every
# directory below it is opened without following a link, and a link met
# there is refused (exit status 2). The loader has no more rights than the
# workload, so the check keeps the layout where it was asked for rather
# than keeping anything out of reach.
import os
import sys
import tarfile

into = len(sys.argv) == 3 and sys.argv[1] == "--into"
roots = sys.argv[2:] if into else sys.argv[1:]
# Unbuffered: a buffered read would wait for a whole block past the
# archive's end, that is for the go, before laying out anything.
src = sys.stdin.buffer.raw

DIRFLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def fail(msg):
    sys.stderr.write("load: " + msg + "\n")
    sys.exit(2)


def open_root(root):
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for part in [p for p in root.split("/") if p]:
        try:
            nfd = os.open(part, DIRFLAGS, dir_fd=fd)
        except OSError as e:
            fail("%s: not a directory reached without a link (%s)" % (root, e.strerror))
        os.close(fd)
        fd = nfd
    return fd


def open_dir(root_fd, parts, create):
    """The directory root/parts..., each component opened without
    following a link, made (mode 0700 until the end) when create says."""
    fd = os.dup(root_fd)
    for part in parts:
        if create:
            try:
                os.mkdir(part, 0o700, dir_fd=fd)
            except FileExistsError:
                pass
        try:
            nfd = os.open(part, DIRFLAGS, dir_fd=fd)
        except OSError as e:
            os.close(fd)
            fail("%s: not a directory reached without a link (%s)" % (part, e.strerror))
        os.close(fd)
        fd = nfd
    return fd


root_fds = [open_root(r) for r in roots]
dirs = []
with tarfile.open(fileobj=src, mode="r|") as tf:
    for m in tf:
        parts = m.name.rstrip("/").split("/")
        if not parts[0].startswith("m") or not parts[0][1:].isdigit():
            fail("entry outside every mount: %r" % m.name)
        i = int(parts[0][1:])
        if i >= len(roots) or len(parts) < 2 or any(p in ("", ".", "..") for p in parts[1:]):
            fail("bad entry name: %r" % m.name)
        mode = m.mode & 0o755
        if m.isdir():
            fd = open_dir(root_fds[i], parts[1:], True)
            os.close(fd)
            dirs.append((i, parts[1:], mode | 0o500))
        elif m.isreg():
            dfd = open_dir(root_fds[i], parts[1:-1], True)
            try:
                f = tf.extractfile(m)
                fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
                with os.fdopen(fd, "wb") as out:
                    while True:
                        b = f.read(1 << 16)
                        if not b:
                            break
                        out.write(b)
                    os.fchmod(out.fileno(), mode | 0o400)
            finally:
                os.close(dfd)
        else:
            fail("not a directory or regular file: %r" % m.name)
# Modes of directories last, deepest first, so that none blocks a write.
for i, parts, mode in reversed(dirs):
    fd = open_dir(root_fds[i], parts, False)
    os.fchmod(fd, mode)
    os.close(fd)
if into:
    sys.exit(0)
for fd in root_fds:
    try:
        os.fchmod(fd, 0o755)
    except PermissionError:
        # The kubelet made this emptyDir's root (root's, mode 0777), not
        # the loader: its mode stays, and the workload mounts it read-only.
        pass
# Wait for the go: the end of the input.
while src.read(1 << 16):
    pass
