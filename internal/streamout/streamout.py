# strictgrade stream-out wrapper (see sandbox.StreamOut). The engine starts it
# as
#
#     python3 -I -c <this file> DIR NAME MAXNAME MAXDEPTH CMD [ARG...]
#
# It keeps the container's standard output for the archive and gives CMD
# standard error in its place, runs CMD and waits for it, kills every other
# process it may signal until none is left, and then writes the tree at DIR as
# a tar archive whose entries are named below NAME. It exits with CMD's status
# (128 + N when signal N ended CMD).
#
#     python3 -I -c <this file> --tree PATH NAME MAXNAME MAXDEPTH MAXENTRIES
#
# writes the archive of the directory or regular file at PATH alone, and
# exits 0 once it is written (3 when PATH does not exist): how a backend
# reads what a workload left in a volume (the Kubernetes backend's
# Spec.Collect, writable mounts and a session's CopyOut). PATH is reached
# through directories only: a link or a file on the way to it is written as
# a link entry, which the firewall rejects. With NAME empty, the entries are
# named from the archive's root, with no entry for the directory itself:
# the archive of a volume's content. A volume has no inode cap, so the
# archive ends after MAXENTRIES + 1 entries, one more than the firewall
# takes, and no directory is listed past that count: a tree of a million
# empty files costs the reader no more than the bound.
#
# The archive follows the firewall's canonical layout: USTAR headers with
# owners, times and device numbers zeroed; a PAX header holding only a "path"
# record for a name that is longer than 100 bytes or not ASCII. Nothing is
# followed or skipped: a symbolic link, a file with more than one name, a
# sparse file, a named pipe, a device or a socket is written as an entry of
# its own type (type 's' for a socket, which no tar format defines), which the
# firewall rejects; the archive ends right after such an entry, and after a
# name longer than MAXNAME bytes (cut to MAXNAME + 1 to 4) or a directory deeper
# than MAXDEPTH components, both rejected too. Every written entry is then a
# distinct inode of DIR, which is how the engine bounds the archive's size by
# the tmpfs's caps. Regular files are streamed by the size fstat reports.
#
# Everything here is standard library: the image's interpreter runs it in
# isolated mode (-I), so nothing the command leaves behind can be imported.
import os
import signal
import stat
import sys
import time

BLOCK = 512
OUT = os.dup(1)  # not inheritable: CMD never holds the archive's channel
os.dup2(2, 1)


class Stop(Exception):
    """Ends the archive after an entry the firewall rejects."""


class Writer:
    def __init__(self, fd):
        self.fd = fd
        self.buf = bytearray()

    def write(self, b):
        self.buf += b
        if len(self.buf) >= 1 << 16:
            self.flush()

    def flush(self):
        view = memoryview(self.buf)
        while view:
            view = view[os.write(self.fd, view):]
        self.buf = bytearray()


def octal(value, width):
    return ("%0*o" % (width - 1, value)).encode() + b"\0"


def block(name, typ, size=0, mode=0o644, link=b""):
    b = bytearray(BLOCK)
    b[0:len(name)] = name
    b[100:108] = octal(mode & 0o7777, 8)
    b[108:116] = octal(0, 8)
    b[116:124] = octal(0, 8)
    b[124:136] = octal(size, 12)
    b[136:148] = octal(0, 12)
    b[148:156] = b" " * 8
    b[156:157] = typ
    b[157:157 + len(link)] = link
    b[257:263] = b"ustar\0"
    b[263:265] = b"00"
    b[329:337] = octal(0, 8)
    b[337:345] = octal(0, 8)
    b[148:156] = ("%06o" % sum(b)).encode() + b"\0 "
    return bytes(b)


def padding(size):
    return b"\0" * (-size % BLOCK)


def pax_path(name):
    body = len(name) + len(b" path=\n")
    n = body + len(str(body))
    if len(str(n)) != len(str(body)):
        n = body + len(str(n))
    return str(n).encode() + b" path=" + name + b"\n"


def header(out, name, typ, size=0, mode=0o644, link=b""):
    if len(name) > 100 or any(c >= 0x80 for c in name):
        rec = pax_path(name)
        out.write(block(b"././@PaxHeader", b"x", len(rec)))
        out.write(rec + padding(len(rec)))
        name = bytes(c if c < 0x80 else 0x5F for c in name[:100])
    out.write(block(name, typ, size, mode, link[:100]))


SPECIAL = (
    (stat.S_ISLNK, b"2"),
    (stat.S_ISFIFO, b"6"),
    (stat.S_ISCHR, b"3"),
    (stat.S_ISBLK, b"4"),
    (stat.S_ISSOCK, b"s"),
)


def run(cmd):
    try:
        pid = os.posix_spawnp(cmd[0], cmd, os.environ, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    except FileNotFoundError as e:
        sys.stderr.write("strictgrade: cannot run %r: %s\n" % (cmd[0], e.strerror))
        return 127
    except OSError as e:
        sys.stderr.write("strictgrade: cannot run %r: %s\n" % (cmd[0], e.strerror))
        return 126
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def kill_the_rest():
    # kill(-1) reaches every process this one may signal; it fails with
    # ESRCH once none is left (zombies count until init reaps them). Where
    # this wrapper is init itself, as in a pod's container, the orphans
    # are its children: it reaps them, or they would count for ever.
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return
        reap()
        time.sleep(0.001)


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def chmod_for(dfd, name, st, need):
    if st.st_mode & need != need:
        os.chmod(name, stat.S_IMODE(st.st_mode) | need, dir_fd=dfd)


class Count:
    """Entries written so far, against the bound (None: no bound)."""

    def __init__(self, bound):
        self.bound = bound
        self.n = 0

    def left(self):
        return None if self.bound is None else self.bound - self.n

    def over(self):
        self.n += 1
        return self.bound is not None and self.n > self.bound


def names(dfd, left):
    # At most left + 1 names: past that the archive ends anyway.
    out = []
    with os.scandir(dfd) as it:
        for e in it:
            out.append(os.fsencode(e.name))
            if left is not None and len(out) > left:
                break
    return sorted(out)


def walk(out, dfd, prefix, depth, limits, count):
    for bname in names(dfd, count.left()):
        name = os.fsdecode(bname)
        path = prefix + b"/" + bname if prefix else bname
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        entry(out, dfd, name, path, st, depth, limits, count)


def entry(out, dfd, name, path, st, depth, limits, count):
    """Writes the entry of name in the directory dfd, as path; a directory
    with everything below it."""
    maxname, maxdepth = limits
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        path += b"/"
    if count.over():
        header(out, path, b"5" if stat.S_ISDIR(mode) else b"0")
        raise Stop
    if len(path) > maxname + 1:
        # Cut after maxname bytes, at the next character boundary, so
        # that the firewall sees a name too long rather than broken.
        cut = maxname + 1
        while cut < min(len(path), maxname + 4) and path[cut] & 0xC0 == 0x80:
            cut += 1
        header(out, path[:cut], b"5" if stat.S_ISDIR(mode) else b"0")
        raise Stop
    if stat.S_ISDIR(mode):
        header(out, path, b"5", 0, mode)
        if depth + 1 > maxdepth:
            raise Stop
        chmod_for(dfd, name, st, 0o500)
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        try:
            walk(out, fd, path[:-1], depth + 1, limits, count)
        finally:
            os.close(fd)
    elif stat.S_ISREG(mode):
        if st.st_nlink > 1:
            header(out, path, b"1", 0, mode)
            raise Stop
        if st.st_blocks * 512 < st.st_size:
            header(out, path, b"S", 0, mode)
            raise Stop
        chmod_for(dfd, name, st, 0o400)
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        try:
            fst = os.fstat(fd)
            if not stat.S_ISREG(fst.st_mode) or fst.st_ino != st.st_ino:
                raise OSError("%r changed after the command ended" % path)
            header(out, path, b"0", fst.st_size, mode)
            left = fst.st_size
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 16))
                if not chunk:
                    raise OSError("%r shrank after the command ended" % path)
                out.write(chunk)
                left -= len(chunk)
            out.write(padding(fst.st_size))
        finally:
            os.close(fd)
    else:
        for test, typ in SPECIAL:
            if test(mode):
                break
        else:
            typ = b"s"
        link = os.fsencode(os.readlink(name, dir_fd=dfd)) if stat.S_ISLNK(mode) else b""
        header(out, path, typ, 0, mode, link)
        raise Stop


# Exit status of the tree mode when DIR, or a directory on the way to it,
# does not exist.
MISSING = 3


def tree(args):
    """The tree mode: the archive of the directory or regular file at
    args[0], reached through directories only, never a link."""
    target, base = args[0], os.fsencode(args[1])
    limits = (int(args[2]), int(args[3]))
    count = Count(int(args[4]))
    out = Writer(OUT)
    parts = [p for p in target.split("/") if p]
    dfd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            st = os.stat(part, dir_fd=dfd, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                # A link or a file on the way: an entry the firewall
                # refuses, as for a link in the tree.
                header(out, base or b"link", b"2", 0, 0o777)
                raise Stop
            fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            os.close(dfd)
            dfd = fd
        last = parts[-1]
        st = os.stat(last, dir_fd=dfd, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            entry(out, dfd, last, base or b"entry", st, 1, limits, count)
        else:
            chmod_for(dfd, last, st, 0o500)
            if base:
                count.over()
                header(out, base + b"/", b"5", 0, st.st_mode)
            fd = os.open(last, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            try:
                walk(out, fd, base, 1 if base else 0, limits, count)
            finally:
                os.close(fd)
    except Stop:
        pass
    except FileNotFoundError:
        sys.stderr.write("strictgrade: %s does not exist\n" % target)
        return MISSING
    finally:
        os.close(dfd)
    out.write(b"\0" * (2 * BLOCK))
    out.flush()
    return 0


def main():
    if sys.argv[1] == "--tree":
        return tree(sys.argv[2:])
    directory, base = sys.argv[1], os.fsencode(sys.argv[2])
    limits = (int(sys.argv[3]), int(sys.argv[4]))
    code = run(sys.argv[5:])
    kill_the_rest()
    out = Writer(OUT)
    st = os.stat(directory)
    if stat.S_IMODE(st.st_mode) & 0o500 != 0o500:
        os.chmod(directory, stat.S_IMODE(st.st_mode) | 0o500)
    header(out, base + b"/", b"5", 0, st.st_mode)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        walk(out, fd, base, 1, limits, Count(None))
    except Stop:
        pass
    out.write(b"\0" * (2 * BLOCK))
    out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
