package sandboxtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"time"
)

// Observation is what the probe's "observe" mode prints: the sandbox as
// seen from inside. It has the JSON shape of strictgrade's probe image.
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

// Probe is the fake's rendering of strictgrade's probe image, the
// vocabulary of the conformance suite: Args are ["/bin/probe", MODE, ARG…]
// with the modes of internal/probe (observe, forkbomb, memhog, spin, spew
// N, spewerr N, write PATH, cat, mkspecial DIR KIND, mkfiles DIR, sleep D).
// Everything it does goes through its Proc, so the fake's limits decide
// what it achieves. In observe, the identity, capabilities, no_new_privs,
// seccomp mode and interfaces are what a hardened sandbox reports, since a
// Go function has none of them; the network, the root filesystem and the
// tmpfs are tried.
func Probe(p *Proc) int {
	arg := func(i int) string {
		if len(p.Args) > i {
			return p.Args[i]
		}
		return ""
	}
	var err error
	switch arg(1) {
	case "observe":
		err = observe(p)
	case "forkbomb":
		n := 0
		var last error
		for range 100000 {
			if last = p.Spawn(); last != nil {
				break
			}
			n++
		}
		fmt.Fprintf(p.Stdout, "spawned=%d error=%v\n", n, last)
	case "memhog":
		for held := 1; ; held++ {
			p.Alloc(16 << 20)
			fmt.Fprintf(p.Stderr, "held %d MiB\n", held*16)
		}
	case "spin":
		<-p.Context().Done()
		p.check()
	case "spew":
		err = spew(p, p.Stdout, arg(2))
	case "spewerr":
		err = spew(p, p.Stderr, arg(2))
	case "write":
		if werr := p.WriteFile(arg(2), []byte("x"), 0o644); werr == nil {
			fmt.Fprintln(p.Stdout, "written")
		} else {
			fmt.Fprintln(p.Stdout, "refused:", werr)
		}
	case "cat":
		_, err = io.Copy(p.Stdout, readerOf(p))
	case "tree":
		for _, name := range []string{"a.txt", "sub/b.txt"} {
			data, rerr := p.ReadFile(path.Join(arg(2), name))
			fmt.Fprintf(p.Stdout, "read %s: %q %v\n", name, data, rerr != nil)
		}
		for _, name := range []string{"a.txt", "new.txt", "sub/new.txt"} {
			werr := p.WriteFile(path.Join(arg(2), name), []byte("x"), 0o644)
			fmt.Fprintf(p.Stdout, "write %s: refused=%v\n", name, werr != nil)
		}
		_, err = io.Copy(p.Stdout, readerOf(p))
	case "mkspecial":
		err = mkspecial(p, arg(2), arg(3))
	case "mkfiles":
		err = mkfiles(p, arg(2))
	case "sleep":
		var d time.Duration
		if d, err = time.ParseDuration(arg(2)); err == nil {
			sleep(p, d)
		}
	default:
		err = fmt.Errorf("unknown mode %q", arg(1))
	}
	if err != nil {
		fmt.Fprintln(p.Stderr, "sgprobe:", err)
		return 1
	}
	return 0
}

// readerOf is the process's standard input, read so that a kill ends the
// reader.
func readerOf(p *Proc) io.Reader {
	return readerFunc(func(b []byte) (int, error) {
		p.check()
		n, err := p.Stdin.Read(b)
		p.check()
		return n, err
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

// sleep waits for d or until the process is killed.
func sleep(p *Proc, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.Context().Done():
	case <-p.box.dead:
	case <-p.kill:
	}
	p.check()
}

func observe(p *Proc) error {
	o := Observation{
		UID: 65532, GID: 65532, CapEff: "0000000000000000", CapBnd: "0000000000000000",
		NoNewPrivs: "1", Seccomp: "2", Interfaces: []string{"lo"}, Hostname: p.Hostname(),
	}
	if err := p.Dial("tcp", "1.1.1.1:53"); err != nil {
		o.DialError = err.Error()
	}
	if err := p.WriteFile("/probe-root-write", []byte("x"), 0o644); err != nil {
		o.RootWriteError = err.Error()
	}
	chunk := make([]byte, 1<<20)
	for o.TmpfsWritten < 1<<30 {
		if err := p.AppendFile("/tmp/fill", chunk); err != nil {
			o.TmpfsError = err.Error()
			break
		}
		o.TmpfsWritten += int64(len(chunk))
	}
	if o.TmpfsError == "" {
		o.TmpfsError = "wrote 1 GiB without hitting a limit"
	}
	return json.NewEncoder(p.Stdout).Encode(o)
}

func spew(p *Proc, w io.Writer, arg string) error {
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

func mkspecial(p *Proc, dir, kind string) error {
	target := dir + "/target.txt"
	if err := p.WriteFile(target, []byte("a regular file\n"), 0o644); err != nil {
		return err
	}
	switch kind {
	case "symlink":
		return p.Symlink("/etc/passwd", dir+"/link")
	case "hardlink":
		return p.Link(target, dir+"/link")
	case "fifo":
		return p.Mkfifo(dir + "/link")
	}
	return errors.New("unknown special kind " + strconv.Quote(kind))
}

func mkfiles(p *Proc, dir string) error {
	if err := p.MkdirAll(dir + "/sub"); err != nil {
		return err
	}
	if err := p.WriteFile(dir+"/a.txt", []byte("alpha\n"), 0o644); err != nil {
		return err
	}
	return p.WriteFile(dir+"/sub/b.txt", []byte("beta\n"), 0o755)
}
