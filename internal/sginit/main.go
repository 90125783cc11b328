// Command sginit is the trusted init of a sandbox that receives its trees
// on standard input (ADR 0013). It starts as root holding only CAP_SETUID,
// CAP_SETGID and CAP_SETPCAP, under no-new-privileges and the default
// seccomp profile; it reads one frame (package initproto), lays each tree
// out on its tmpfs owned by root and read-only to everyone, empties the
// capability bounding set, takes the sandbox user's ids (which clears
// every other capability set), checks that all of it holds, and executes
// the workload, which inherits the rest of standard input.
//
// Nothing it reads comes from the workload: the frame is written by the
// controller from archives that passed the firewall, before the workload
// exists. It is a static binary, so it runs in any image.
package main

import (
	"archive/tar"
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strictgrade/strictgrade/internal/initproto"
)

func init() {
	// Everything from the checks to the exec happens on this thread.
	runtime.LockOSThread()
}

func main() {
	dirs := flag.String("dirs", "", "comma-separated tree directories, each an empty tmpfs")
	idle := flag.Duration("idle", 5*time.Minute, "exit if no frame starts within this time")
	uid := flag.Int("uid", 65532, "user id of the workload")
	gid := flag.Int("gid", 65532, "group id of the workload")
	flag.Parse()
	allowed := []string{}
	if *dirs != "" {
		allowed = strings.Split(*dirs, ",")
	}

	// A sandbox nobody uses goes away by itself.
	started := make(chan struct{})
	go func() {
		select {
		case <-started:
		case <-time.After(*idle):
			fail(initproto.ExitIdle, "no frame within %v", *idle)
		}
	}()
	in := &firstByte{r: os.Stdin, started: started}
	h, err := initproto.ReadHeader(in)
	if err != nil {
		fail(initproto.ExitFrame, "%v", err)
	}
	seen := map[string]bool{}
	for _, t := range h.Trees {
		if !slices.Contains(allowed, t.Dir) || seen[t.Dir] {
			fail(initproto.ExitFrame, "tree %q is not one of the sandbox's tree directories", t.Dir)
		}
		seen[t.Dir] = true
		lr := &io.LimitedReader{R: os.Stdin, N: t.Size}
		if err := layOut(lr, t.Dir); err != nil {
			fail(initproto.ExitFrame, "tree %s: %v", t.Dir, err)
		}
		// The archive's trailer padding, if any, is still the tree's.
		if _, err := io.Copy(io.Discard, lr); err != nil || lr.N != 0 {
			fail(initproto.ExitFrame, "tree %s: short archive", t.Dir)
		}
	}
	for _, d := range allowed {
		if err := sealTree(d); err != nil {
			fail(initproto.ExitFrame, "tree %s: %v", d, err)
		}
	}
	if err := drop(*uid, *gid); err != nil {
		fail(initproto.ExitDrop, "%v", err)
	}
	bin, err := lookPath(h.Argv[0])
	if err != nil {
		fail(initproto.ExitExec, "%v", err)
	}
	if _, err := os.Stderr.WriteString(initproto.Ready); err != nil {
		os.Exit(initproto.ExitExec)
	}
	err = syscall.Exec(bin, h.Argv, os.Environ())
	// The ready line is out: from here on only the exit status speaks,
	// as the shell's 126/127 would.
	_ = err
	os.Exit(initproto.ExitExec)
}

func fail(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, "sginit: "+format+"\n", a...)
	os.Exit(code)
}

// firstByte closes started once the first byte has been read.
type firstByte struct {
	r       io.Reader
	started chan struct{}
	once    bool
}

func (f *firstByte) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 && !f.once {
		f.once = true
		close(f.started)
	}
	return n, err
}

// layOut extracts a canonical archive into dir: directories and regular
// files only, names relative and clean, files created anew. Modes are
// settled by sealTree.
func layOut(r io.Reader, dir string) error {
	tr := tar.NewReader(bufio.NewReaderSize(r, 64<<10))
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(hd.Name, "/")
		if name == "" || name == "." {
			continue
		}
		if path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("entry name %q", hd.Name)
		}
		full := filepath.Join(dir, filepath.FromSlash(name))
		switch hd.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(full, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
				return err
			}
			mode := os.FileMode(0o400)
			if hd.Mode&0o111 != 0 {
				mode = 0o500
			}
			f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q of type %q", hd.Name, hd.Typeflag)
		}
	}
}

// sealTree gives every directory under dir mode 0555 and every file 0444
// (0555 with an execute bit), all owned by root: readable by the workload,
// writable by nobody it can become.
func sealTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := os.FileMode(0o444)
		switch {
		case d.IsDir():
			mode = 0o555
		case !info.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file", p)
		case info.Mode()&0o100 != 0:
			mode = 0o555
		}
		if err := os.Lchown(p, 0, 0); err != nil {
			return err
		}
		return os.Chmod(p, mode)
	})
}

// drop empties the bounding set, takes uid and gid with no supplementary
// groups (the kernel then clears the permitted, effective and ambient
// sets), and checks the result in /proc/self/status.
func drop(uid, gid int) error {
	// The bounding set is per thread: drop it on every thread of the
	// process, as Setresuid below changes the ids of every thread.
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		_, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0)
		if errno != 0 && errno != syscall.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, errno)
		}
	}
	if err := syscall.Setgroups([]int{}); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("setresgid: %w", err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("setresuid: %w", err)
	}
	// The thread that checks is the thread that executes the workload.
	status, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return err
	}
	want := map[string]string{
		"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1",
		"Uid": fmt.Sprintf("%d\t%d\t%d\t%d", uid, uid, uid, uid),
		"Gid": fmt.Sprintf("%d\t%d\t%d\t%d", gid, gid, gid, gid),
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if w, check := want[k]; ok && check {
			if strings.TrimSpace(v) != w {
				return fmt.Errorf("after dropping, %s is %q, want %q", k, strings.TrimSpace(v), w)
			}
			delete(want, k)
		}
	}
	// A user-space kernel may not report the inheritable and ambient
	// sets or no-new-privileges; the ids and the other sets it must.
	for _, k := range []string{"Uid", "Gid", "CapPrm", "CapEff", "CapBnd"} {
		if _, missing := want[k]; missing {
			return fmt.Errorf("/proc/self/status lacks %s", k)
		}
	}
	return nil
}

// lookPath finds argv[0] as a shell would, on the environment's PATH.
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found on PATH", name)
}
