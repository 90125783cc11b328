// Command sgprobe runs inside a hardened container and reports what it can
// observe or do there. strictgrade's tests (and `strictgrade doctor`) use it
// to check that the sandbox profile holds on the running daemon.
//
// Modes:
//
//	observe          print a JSON Observation of the sandbox
//	forkbomb         spawn sleeping children until the kernel refuses
//	memhog           allocate and touch memory until killed
//	spin             loop forever
//	crowd N BURST    N threads that wake together every 100 ms and spin
//	                 for BURST of CPU time each, forever: on one CPU they
//	                 wait on one another, each a little, while the sandbox
//	                 uses N×BURST of every 100 ms
//	spew N           write N bytes to stdout
//	spewerr N        write N bytes to stderr
//	write PATH       try to create PATH and report the error
//	cat              copy stdin to stdout
//	mkspecial DIR K  create a file and a symlink, hardlink or fifo (K) in DIR
//	mkfiles DIR      create a small tree of regular files in DIR
//	sleep DURATION   sleep, e.g. 30s
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Observation is what `observe` prints.
type Observation struct {
	UID            int      `json:"uid"`
	GID            int      `json:"gid"`
	CapEff         string   `json:"cap_eff"`
	CapBnd         string   `json:"cap_bnd"`
	NoNewPrivs     string   `json:"no_new_privs"`
	Seccomp        string   `json:"seccomp"`
	Interfaces     []string `json:"interfaces"`
	Routes         int      `json:"routes"`
	DialError      string   `json:"dial_error"`
	RootWriteError string   `json:"root_write_error"`
	TmpfsWritten   int64    `json:"tmpfs_written"`
	TmpfsError     string   `json:"tmpfs_error"`
	Hostname       string   `json:"hostname"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sgprobe MODE [ARG]")
		os.Exit(2)
	}
	arg := ""
	if len(os.Args) > 2 {
		arg = os.Args[2]
	}
	var err error
	switch os.Args[1] {
	case "observe":
		err = observe(os.Stdout)
	case "forkbomb":
		err = forkbomb()
	case "memhog":
		memhog()
	case "spin":
		for {
		}
	case "crowd":
		var n int
		var burst time.Duration
		if len(os.Args) < 4 {
			err = errors.New("usage: crowd N BURST")
		} else if n, err = strconv.Atoi(arg); err == nil {
			if burst, err = time.ParseDuration(os.Args[3]); err == nil {
				crowd(n, burst)
			}
		}
	case "spew":
		err = spew(arg, os.Stdout)
	case "spewerr":
		err = spew(arg, os.Stderr)
	case "write":
		err = os.WriteFile(arg, []byte("x"), 0o644)
		if err == nil {
			fmt.Println("written")
		} else {
			fmt.Println("refused:", err)
			err = nil
		}
	case "cat":
		_, err = io.Copy(os.Stdout, os.Stdin)
	case "tree":
		// What a workload can do to a tree it was handed: read it, and
		// (it must not) change it. sandboxtest's fake probe says the same.
		for _, name := range []string{"a.txt", "sub/b.txt"} {
			data, rerr := os.ReadFile(filepath.Join(arg, name))
			fmt.Printf("read %s: %q %v\n", name, data, rerr != nil)
		}
		for _, name := range []string{"a.txt", "new.txt", "sub/new.txt"} {
			werr := os.WriteFile(filepath.Join(arg, name), []byte("x"), 0o644)
			fmt.Printf("write %s: refused=%v\n", name, werr != nil)
		}
		_, err = io.Copy(os.Stdout, os.Stdin)
	case "mkspecial":
		if len(os.Args) < 4 {
			err = errors.New("usage: mkspecial DIR symlink|hardlink|fifo")
		} else {
			err = mkspecial(arg, os.Args[3])
		}
	case "mkfiles":
		err = mkfiles(arg)
	case "sleep":
		var d time.Duration
		if d, err = time.ParseDuration(arg); err == nil {
			time.Sleep(d)
		}
	case "child":
		time.Sleep(time.Minute)
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sgprobe:", err)
		os.Exit(1)
	}
}

func statusField(name string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "error: " + err.Error()
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return "absent"
}

func observe(w io.Writer) error {
	o := Observation{UID: os.Getuid(), GID: os.Getgid()}
	o.CapEff = statusField("CapEff")
	o.CapBnd = statusField("CapBnd")
	o.NoNewPrivs = statusField("NoNewPrivs")
	o.Seccomp = statusField("Seccomp")
	o.Hostname, _ = os.Hostname()
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		o.Interfaces = append(o.Interfaces, i.Name)
	}
	for _, p := range []string{"/proc/net/route", "/proc/net/ipv6_route"} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line == "" || (p == "/proc/net/route" && i == 0) {
				continue
			}
			// ipv6_route lists the loopback's own routes on "lo".
			if strings.HasSuffix(strings.TrimSpace(line), " lo") || strings.HasPrefix(line, "lo\t") {
				continue
			}
			o.Routes++
		}
	}
	conn, err := net.DialTimeout("tcp", "1.1.1.1:53", 2*time.Second)
	if err == nil {
		conn.Close()
		o.DialError = ""
	} else {
		o.DialError = err.Error()
	}
	if err := os.WriteFile("/probe-root-write", []byte("x"), 0o644); err != nil {
		o.RootWriteError = err.Error()
	}
	o.TmpfsWritten, err = fill("/tmp/fill")
	if err != nil {
		o.TmpfsError = err.Error()
	}
	os.Remove("/tmp/fill")
	return json.NewEncoder(w).Encode(o)
}

// fill writes into path until an error, returning the bytes written.
func fill(path string) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for n < 1<<30 {
		m, err := f.Write(buf)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, errors.New("wrote 1 GiB without hitting a limit")
}

func forkbomb() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	spawned := 0
	var last error
	for range 100000 {
		cmd := exec.Command(self, "child")
		if err := cmd.Start(); err != nil {
			last = err
			break
		}
		spawned++
	}
	fmt.Printf("spawned=%d error=%v\n", spawned, last)
	return nil
}

func memhog() {
	var keep [][]byte
	for {
		b := make([]byte, 16<<20)
		for i := range b {
			if i%4096 == 0 {
				b[i] = 1
			}
		}
		keep = append(keep, b)
		fmt.Fprintf(os.Stderr, "held %d MiB\n", len(keep)*16)
	}
}

func spew(arg string, w io.Writer) error {
	n, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = 'a' + byte(i%26)
	}
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// mkspecial creates a regular file and one special entry of the given kind
// (symlink, hardlink or fifo) in dir.
func mkspecial(dir, kind string) error {
	target := filepath.Join(dir, "target.txt")
	if err := os.WriteFile(target, []byte("a regular file\n"), 0o644); err != nil {
		return err
	}
	switch kind {
	case "symlink":
		return os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	case "hardlink":
		return os.Link(target, filepath.Join(dir, "link"))
	case "fifo":
		return syscall.Mkfifo(filepath.Join(dir, "link"), 0o644)
	}
	return fmt.Errorf("unknown special kind %q", kind)
}

func mkfiles(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sub", "b.txt"), []byte("beta\n"), 0o755)
}

// crowd runs n threads in step: at each 100 ms tick of the monotonic
// clock every one of them wakes (an absolute sleep in the kernel, so that
// they wake together), spins until it has used burst of CPU time, and
// sleeps again. On one CPU the last of them waits for all the others each
// time, and the sandbox uses n×burst of every 100 ms. Each thread has a
// processor of the runtime of its own, so that they wait on the kernel's
// run queue, not on the runtime's.
func crowd(n int, burst time.Duration) {
	runtime.GOMAXPROCS(n + 1)
	const period = int64(100 * time.Millisecond)
	for range n {
		go func() {
			runtime.LockOSThread()
			var now, cpu unix.Timespec
			for {
				_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
				tick := unix.NsecToTimespec((now.Nano()/period + 1) * period)
				for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &tick, nil) == unix.EINTR {
				}
				_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &cpu)
				until := cpu.Nano() + int64(burst)
				for cpu.Nano() < until {
					_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &cpu)
				}
			}
		}()
	}
	select {}
}
