package seccomp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	moby "github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite profile.json from Docker's default profile and build")

// argRuled are the system calls the profile allows only with some
// arguments.
var argRuled = []string{"fcntl", "fcntl64", "madvise", "preadv2", "pwritev2"}

// build is the profile: Docker's default without Refused and argRuled,
// then an explicit EPERM rule for Refused and the argument rules.
func build() *moby.Seccomp {
	p := moby.DefaultProfile()
	drop := append(slices.Clone(Refused), argRuled...)
	var kept []*moby.Syscall
	for _, s := range p.Syscalls {
		s.Names = slices.DeleteFunc(s.Names, func(n string) bool { return slices.Contains(drop, n) })
		if len(s.Names) > 0 {
			kept = append(kept, s)
		}
	}
	eperm := uint(unix.EPERM)
	kept = append(kept, &moby.Syscall{
		LinuxSyscall: specs.LinuxSyscall{Names: slices.Clone(Refused), Action: specs.ActErrno, ErrnoRet: &eperm},
		Comment:      "strictgrade: locks, watches, page-cache control and residency, asynchronous and non-blocking reads are channels between sandboxes that share inodes (ADR 0020)",
	})
	for _, c := range FcntlCommands {
		kept = append(kept, &moby.Syscall{LinuxSyscall: specs.LinuxSyscall{
			Names: []string{"fcntl", "fcntl64"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: 1, Value: c, Op: specs.OpEqualTo}},
		}})
	}
	for _, a := range MadviseAdvice {
		kept = append(kept, &moby.Syscall{LinuxSyscall: specs.LinuxSyscall{
			Names: []string{"madvise"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: 2, Value: a, Op: specs.OpEqualTo}},
		}})
	}
	kept = append(kept, &moby.Syscall{LinuxSyscall: specs.LinuxSyscall{
		Names: []string{"preadv2", "pwritev2"}, Action: specs.ActAllow,
		Args: []specs.LinuxSeccompArg{{Index: 5, Value: rwfNoWait, ValueTwo: 0, Op: specs.OpMaskedEqual}},
	}})
	p.Syscalls = kept
	return p
}

// TestProfileFile: profile.json is what build makes; -update rewrites it.
func TestProfileFile(t *testing.T) {
	want, err := json.MarshalIndent(build(), "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		if err := os.WriteFile("profile.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("profile.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("profile.json is stale; run go test ./internal/seccomp -run TestProfileFile -update\n%s", cmp.Diff(string(want), string(got)))
	}
	if !bytes.Equal(Profile(), got) {
		t.Error("the embedded profile differs from profile.json")
	}
}

// TestProfileRefuses reads the profile the way a runtime does and checks
// that no rule allows a refused call, that fcntl, madvise, preadv2 and
// pwritev2 are allowed only under their argument rules, and that what a
// Go or Python program needs is still there.
func TestProfileRefuses(t *testing.T) {
	var p moby.Seccomp
	if err := json.Unmarshal(Profile(), &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != specs.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != uint(unix.EPERM) {
		t.Fatalf("default action %s errno %v, want EPERM", p.DefaultAction, p.DefaultErrnoRet)
	}
	allowed := map[string][]specs.LinuxSeccompArg{}
	unconditional := map[string]bool{}
	for _, s := range p.Syscalls {
		if s.Action != specs.ActAllow {
			continue
		}
		for _, n := range s.Names {
			if len(s.Args) == 0 {
				unconditional[n] = true
			}
			allowed[n] = append(allowed[n], s.Args...)
		}
	}
	for _, n := range Refused {
		if _, ok := allowed[n]; ok {
			t.Errorf("%s is allowed", n)
		}
	}
	for _, n := range argRuled {
		if unconditional[n] {
			t.Errorf("%s is allowed whatever its arguments", n)
		}
	}
	locks := []uint64{5, 6, 7, 12, 13, 14, 36, 37, 38, 1024, 1025, 1026, 1029}
	for _, a := range allowed["fcntl"] {
		if a.Index != 1 || a.Op != specs.OpEqualTo || slices.Contains(locks, a.Value) {
			t.Errorf("fcntl rule %+v", a)
		}
	}
	for _, a := range allowed["madvise"] {
		if a.Index != 2 || a.Op != specs.OpEqualTo || a.Value == 20 || a.Value == 21 {
			t.Errorf("madvise rule %+v", a)
		}
	}
	for _, n := range []string{"preadv2", "pwritev2"} {
		want := []specs.LinuxSeccompArg{{Index: 5, Value: rwfNoWait, ValueTwo: 0, Op: specs.OpMaskedEqual}}
		if diff := cmp.Diff(want, allowed[n]); diff != "" {
			t.Errorf("%s rules (-want +got):\n%s", n, diff)
		}
	}
	for _, n := range []string{"read", "pread64", "preadv", "openat", "mmap", "clone", "execve", "futex", "epoll_pwait", "pipe2", "sendfile", "setuid", "setgroups"} {
		if !unconditional[n] {
			t.Errorf("%s is not allowed", n)
		}
	}
}
