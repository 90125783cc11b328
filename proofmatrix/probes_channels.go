package proofmatrix

import (
	"context"

	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
)

// Channels between sandboxes through what they share (issue 29 item 7,
// ADR 0020): the read-only inodes of /usr and the sginit volume, the host's
// page cache, the host uid. Each payload exits 3 when the call it needs is
// refused with EPERM (the sandbox seccomp profile), 4 when the call works
// but nothing arrives, and otherwise prints what it received.
const (
	exitRefused = 3
	exitSilent  = 4
)

// channelPrelude picks the shared files the payloads signal through:
// Python encodings no program here imports, so that nothing else touches
// them during a grade.
const channelPrelude = `import errno, glob, os, sys, time
FILES = sorted(glob.glob('/usr/lib/python3*/encodings/cp*.py'))[:34]
def refused(what):
    print('refused: ' + what, flush=True)
    sys.exit(3)
def silent(what):
    print('silent: ' + what, flush=True)
    sys.exit(4)
if len(FILES) < 34:
    silent('no shared files')
words = sys.stdin.read().split()
`

// twinsRoles splits the files between the two cases of the twins task:
// sixteen for each one's bits and one "ready" file each.
const twinsRoles = `me, secret = words[0], int(words[1])
mine, theirs = (FILES[0:16], FILES[16:32]) if me == 'a' else (FILES[16:32], FILES[0:16])
ready_me, ready_them = (FILES[32], FILES[33]) if me == 'a' else (FILES[33], FILES[32])
`

// twinsFlock: each case holds shared flocks on the files of its number's
// one bits and then on its ready file, and reads the other's number as the
// files it cannot lock exclusively.
const twinsFlock = "#!/usr/bin/env python3\n" + channelPrelude + twinsRoles + `import fcntl
held_fds = []
def hold(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError as e:
        if e.errno == errno.EPERM:
            refused('flock')
        raise
    held_fds.append(fd)
def held(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
for i in range(16):
    if secret >> i & 1:
        hold(mine[i])
hold(ready_me)
deadline = time.time() + 20
while not held(ready_them):
    if time.time() > deadline:
        silent('no lock seen')
    time.sleep(0.05)
got = sum(1 << i for i in range(16) if held(theirs[i]))
time.sleep(2)
print(got)
`

// twinsWatch: each case watches the other's files with inotify and opens
// its own number's files, then its ready file, over and over.
const twinsWatch = "#!/usr/bin/env python3\n" + channelPrelude + twinsRoles + `import ctypes, select, struct
libc = ctypes.CDLL(None, use_errno=True)
ifd = libc.inotify_init1(0)
if ifd < 0:
    if ctypes.get_errno() == errno.EPERM:
        refused('inotify')
    silent('inotify_init1 %d' % ctypes.get_errno())
wds = {}
for p in theirs + [ready_them]:
    w = libc.inotify_add_watch(ifd, p.encode(), 0x20)
    if w < 0:
        if ctypes.get_errno() == errno.EPERM:
            refused('inotify')
        silent('inotify_add_watch %d' % ctypes.get_errno())
    wds[w] = p
seen, stop, deadline = set(), None, time.time() + 20
while stop is None or time.time() < stop:
    if time.time() > deadline:
        silent('no open seen')
    for i in range(16):
        if secret >> i & 1:
            os.close(os.open(mine[i], os.O_RDONLY))
    os.close(os.open(ready_me, os.O_RDONLY))
    if select.select([ifd], [], [], 0.1)[0]:
        buf, off = os.read(ifd, 65536), 0
        while off < len(buf):
            w, mask, cookie, n = struct.unpack_from('iIII', buf, off)
            off += 16 + n
            if wds[w] == ready_them:
                stop = stop or time.time() + 2
            else:
                seen.add(theirs.index(wds[w]))
print(sum(1 << i for i in seen))
`

// relaySender, graded first, writes the number its case in is given
// into the page-cache residency of sixteen shared files: read for a one,
// evicted with posix_fadvise(DONTNEED) for a zero. Its case out does
// nothing.
const relaySender = "#!/usr/bin/env python3\n" + channelPrelude + `if words[0] != 'in':
    sys.exit(0)
secret = int(words[1])
for i, p in enumerate(FILES[:16]):
    fd = os.open(p, os.O_RDONLY)
    if secret >> i & 1:
        while os.read(fd, 1 << 16):
            pass
    else:
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError as e:
            if e.errno == errno.EPERM:
                refused('fadvise')
            raise
    os.close(fd)
print('stored')
`

// relayReceiver, graded next, reads the number back in its case out
// with preadv2(RWF_NOWAIT), which fails with EAGAIN on a page that is
// not cached (and starts reading it in: the channel is one-shot). Its case
// in touches nothing.
const relayReceiver = "#!/usr/bin/env python3\n" + channelPrelude + `if words[0] == 'in':
    print('stored')
    sys.exit(0)
got = 0
for i, p in enumerate(FILES[:16]):
    fd = os.open(p, os.O_RDONLY)
    try:
        os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT)
        got |= 1 << i
    except BlockingIOError:
        pass
    except OSError as e:
        if e.errno == errno.EPERM:
            refused('preadv2(RWF_NOWAIT)')
        silent('preadv2(RWF_NOWAIT) errno %d' % e.errno)
    os.close(fd)
print(got)
`

func init() {
	register(
		&Probe{ID: "V11.9-shared-lock", Taxonomy: "V11.9", Class: "V11", Title: "two cases of a grade exchange hidden inputs through flock on /usr", Source: "issue 29 item 7",
			Strict: &Case{Custom: twinsProbe(twinsFlock, "flock"), Expect: Blocked, Layer: "seccomp: flock refused", Why: "the sandbox seccomp profile refuses advisory locks (ADR 0020)"}},
		&Probe{ID: "V11.10-shared-watch", Taxonomy: "V11.10", Class: "V11", Title: "two cases of a grade exchange hidden inputs through inotify on /usr", Source: "issue 29 item 7",
			Strict: &Case{Custom: twinsProbe(twinsWatch, "inotify"), Expect: Blocked, Layer: "seccomp: inotify refused", Why: "the sandbox seccomp profile refuses inotify and fanotify (ADR 0020)"}},
		&Probe{ID: "V11.11-page-cache", Taxonomy: "V11.11", Class: "V11", Title: "a grade writes its hidden input into the page cache of /usr for a later grade", Source: "issue 29 item 7",
			Strict: &Case{Custom: relayProbe, Expect: Blocked, Layer: "seccomp: preadv2(RWF_NOWAIT) refused", Why: "the sandbox seccomp profile refuses fadvise, mincore, cachestat, readahead, AIO, io_uring and RWF_NOWAIT; plain reads' timing remains (ADR 0020)"}},
	)
}

// twinsProbe grades a twins payload once: both cases run side by side
// (the controller's default of two cases at once).
func twinsProbe(payload, what string) func(ctx context.Context, env *Env) (Observation, error) {
	return func(ctx context.Context, env *Env) (Observation, error) {
		res, err := gradeScript(ctx, env, "twins", payload)
		if err != nil {
			return Observation{}, err
		}
		return channelObservation(res.Verdict, what, "a", "b"), nil
	}
}

// relayProbe grades the sender and then the receiver: the second grade
// must print what the first was given.
func relayProbe(ctx context.Context, env *Env) (Observation, error) {
	if _, err := gradeScript(ctx, env, "relay", relaySender); err != nil {
		return Observation{}, err
	}
	res, err := gradeScript(ctx, env, "relay", relayReceiver)
	if err != nil {
		return Observation{}, err
	}
	return channelObservation(res.Verdict, "preadv2(RWF_NOWAIT)", "out"), nil
}

func gradeScript(ctx context.Context, env *Env, task, payload string) (*controller.Result, error) {
	dir, err := env.TempDir()
	if err != nil {
		return nil, err
	}
	if err := writeFiles(dir, map[string]string{"solution": payload}); err != nil {
		return nil, err
	}
	return env.Grade(ctx, task, controller.Submission{Dir: dir})
}

// channelObservation reads the receiving cases of a channel payload: a
// PASS is the channel carrying the hidden input; a receiver refused its
// call is the seccomp profile's block; a receiver that got nothing is the
// runtime's own isolation (no shared inode or cache to signal through).
func channelObservation(v *schema.Verdict, what string, receivers ...string) Observation {
	o := Classify(v, false)
	if v.Outcome != schema.OutcomeFail {
		return o
	}
	codes := map[string]int{}
	for _, c := range v.Cases {
		if c.Exit == schema.ExitExited && c.ExitCode != nil {
			codes[c.ID] = *c.ExitCode
		}
	}
	refused, silent := 0, 0
	for _, id := range receivers {
		switch codes[id] {
		case exitRefused:
			refused++
		case exitSilent:
			silent++
		}
	}
	switch {
	case refused == len(receivers):
		o.Layer = "seccomp: " + what + " refused"
	case refused+silent == len(receivers):
		o.Layer = "isolated: nothing received"
	default:
		o.Layer = "isolated: wrong value"
	}
	return o
}
