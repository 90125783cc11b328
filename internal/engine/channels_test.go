//go:build engine

package engine_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/internal/engine"
)

// pySpec runs a Python script in the hardened profile.
func pySpec(t *testing.T, run, script string, mounts ...engine.Mount) engine.Spec {
	return engine.Spec{Run: run, Phase: "test", Image: pythonImage(t), Cmd: []string{"python3", "-I", "-c", script},
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C.UTF-8"}, WorkDir: "/tmp", Mounts: mounts,
		Limits: engine.Limits{Wall: time.Minute}}
}

// The two sides of each channel between two sandboxes that share an
// inode (issue 29 item 7 b): the holder makes the file in a shared volume
// and then takes its part, the watcher looks for it for longer than the
// holder holds. Each prints "refused <errno>" when its call is refused.
const (
	lockHolder = `import fcntl, os, time
open('/shared/f', 'w').write('x' * 8192)
fd = os.open('/shared/f', os.O_RDONLY)
try:
    fcntl.flock(fd, fcntl.LOCK_SH)
except OSError as e:
    print('refused', e.errno); raise SystemExit
print('held', flush=True); time.sleep(10)
`
	lockWatcher = `import fcntl, os, time
deadline = time.time() + 20
while not os.path.exists('/shared/f') and time.time() < deadline:
    time.sleep(0.05)
fd = os.open('/shared/f', os.O_RDONLY)
while time.time() < deadline:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except BlockingIOError:
        print('saw'); break
    except OSError as e:
        print('refused', e.errno); break
    time.sleep(0.05)
else:
    print('never')
`
	watchHolder = `import ctypes, os, select, time
libc = ctypes.CDLL(None, use_errno=True)
open('/shared/f', 'w').write('x')
fd = libc.inotify_init1(0)
if fd < 0:
    print('refused', ctypes.get_errno()); raise SystemExit
if libc.inotify_add_watch(fd, b'/shared/f', 0x20 | 0x1) < 0:
    print('refused', ctypes.get_errno()); raise SystemExit
r, _, _ = select.select([fd], [], [], 12)
print('saw' if r else 'never')
`
	watchOpener = `import os, time
deadline = time.time() + 8
while time.time() < deadline:
    try:
        open('/shared/f').read()
    except OSError:
        pass
    time.sleep(0.05)
print('opened')
`
)

// TestSandboxesShareNoLocksOrWatches runs two sandboxes side by side on
// one volume, as the cases of a grade share /usr and the sginit volume:
// the second must not see the first's flock, nor the first the second's
// opens through inotify (issue 29 item 7 b). On f7459a3 both channels
// carried the bit.
func TestSandboxesShareNoLocksOrWatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		first, second string
	}{
		{"flock", lockHolder, lockWatcher},
		{"inotify", watchHolder, watchOpener},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			run := newRun(t)
			vol := newVolume(t, run, "shared")
			var wg sync.WaitGroup
			out := make([]string, 2)
			for i, script := range []string{c.first, c.second} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := eng.Run(t.Context(), pySpec(t, run, script, engine.Mount{Volume: vol, Target: "/shared", ReadOnly: i == 1}))
					if err != nil {
						t.Errorf("Run: %v", err)
						return
					}
					out[i] = strings.TrimSpace(string(res.Stdout))
					if res.Exit != engine.ExitExited || res.Code != 0 {
						t.Errorf("sandbox %d: exit %s %d: %s", i, res.Exit, res.Code, res.Stderr)
					}
				}()
			}
			wg.Wait()
			t.Logf("first %q, second %q", out[0], out[1])
			if strings.Contains(out[0], "saw") || strings.Contains(out[1], "saw") {
				t.Fatalf("one sandbox saw the other through %s", c.name)
			}
			if out[0] != "refused 1" {
				t.Errorf("the first sandbox's %s gave %q, want refused with EPERM", c.name, out[0])
			}
		})
	}
}

// refusals tries each call the sandbox profile refuses, and a few it
// must keep, on files of its own, and prints the errno of each (0: the
// call worked).
const refusals = `import ctypes, errno, fcntl, json, mmap, os, signal
signal.signal(signal.SIGIO, signal.SIG_IGN)
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.syscall.restype = ctypes.c_long
open('/tmp/f', 'w').write('x' * 65536)
fd = os.open('/tmp/f', os.O_RDONLY)
out = {}
def call(name, f):
    try:
        r = f()
        if isinstance(r, int) and r < 0:
            out[name] = ctypes.get_errno()
        else:
            out[name] = 0
    except OSError as e:
        out[name] = e.errno
def fcntl_raw(cmd, arg=0):
    return libc.fcntl(fd, cmd, ctypes.c_long(arg))
lk = ctypes.create_string_buffer(32)
lk[0] = 0  # F_RDLCK
call('flock', lambda: fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB))
call('F_GETLK', lambda: libc.fcntl(fd, 5, lk))
call('F_SETLK', lambda: libc.fcntl(fd, 6, lk))
call('F_OFD_GETLK', lambda: libc.fcntl(fd, 36, lk))
call('F_OFD_SETLK', lambda: libc.fcntl(fd, 37, lk))
call('F_SETLEASE', lambda: fcntl_raw(1024, 0))
dfd = os.open('/tmp', os.O_RDONLY)
call('F_NOTIFY', lambda: libc.fcntl(dfd, 1026, ctypes.c_long(1)))
call('inotify_init1', lambda: libc.inotify_init1(0))
call('fadvise', lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED))
call('readahead', lambda: libc.readahead(fd, ctypes.c_long(0), ctypes.c_size_t(4096)))
m = libc.mmap(None, 65536, 1, 1, fd, 0)
vec = ctypes.create_string_buffer(16)
call('mincore', lambda: libc.mincore(ctypes.c_void_p(m), 65536, vec))
call('madvise_pageout', lambda: libc.madvise(ctypes.c_void_p(m), 65536, 21))
call('madvise_cold', lambda: libc.madvise(ctypes.c_void_p(m), 65536, 20))
call('cachestat', lambda: libc.syscall(451, fd, None, None, 0))
ctx = ctypes.c_ulong(0)
call('io_setup', lambda: libc.syscall(206, 8, ctypes.byref(ctx)))
params = ctypes.create_string_buffer(120)
call('io_uring_setup', lambda: libc.syscall(425, 4, params))
call('preadv2_nowait', lambda: os.preadv(fd, [bytearray(16)], 0, os.RWF_NOWAIT))
call('keep: preadv2', lambda: os.preadv(fd, [bytearray(16)], 0, 0))
call('keep: F_GETFL', lambda: fcntl.fcntl(fd, fcntl.F_GETFL))
call('keep: F_DUPFD_CLOEXEC', lambda: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
r, w = os.pipe()
call('keep: F_SETPIPE_SZ', lambda: fcntl.fcntl(w, 1031, 1 << 16))
call('keep: madvise_dontneed', lambda: libc.madvise(ctypes.c_void_p(m), 65536, 4))
print(json.dumps(out, sort_keys=True))
`

// TestProfileRefusesSharedStateCalls checks from inside a sandbox that
// each call of the seccomp profile's refusals (package internal/seccomp)
// fails with EPERM and that what programs need is kept (issue 29 item 7
// a and b). On f7459a3 every refused call worked.
func TestProfileRefusesSharedStateCalls(t *testing.T) {
	t.Parallel()
	run := newRun(t)
	res := mustRun(t, pySpec(t, run, refusals))
	if res.Exit != engine.ExitExited || res.Code != 0 {
		t.Fatalf("exit %s %d: %s", res.Exit, res.Code, res.Stderr)
	}
	var got map[string]int
	if err := json.Unmarshal(res.Stdout, &got); err != nil {
		t.Fatalf("output %q: %v", res.Stdout, err)
	}
	want := map[string]int{}
	for name := range got {
		want[name] = 1 // EPERM
		if strings.HasPrefix(name, "keep: ") {
			want[name] = 0
		}
	}
	if len(got) != 22 {
		t.Errorf("%d calls tried, want 22", len(got))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errno per call (-want +got):\n%s", diff)
	}
}
