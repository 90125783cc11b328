package kubernetes

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Owner annotations (on pods) and fields (of volume records): which
// process made the object, named by the kernel's boot id, its pid
// namespace, its pid and its start time, as the Docker backend's owner
// labels do. They are annotations because a pid namespace such as
// "pid:[4026531836]" is not a label value.
const (
	AnnotationOwnerHost  = "dev.strictgrade.owner.host"
	AnnotationOwnerBoot  = "dev.strictgrade.owner.boot"
	AnnotationOwnerPIDNS = "dev.strictgrade.owner.pidns"
	AnnotationOwnerPID   = "dev.strictgrade.owner.pid"
	AnnotationOwnerStart = "dev.strictgrade.owner.start"
)

var self = sync.OnceValue(func() map[string]string {
	m := map[string]string{AnnotationOwnerPID: strconv.Itoa(os.Getpid())}
	if h, err := os.Hostname(); err == nil {
		m[AnnotationOwnerHost] = h
	}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		m[AnnotationOwnerBoot] = strings.TrimSpace(string(b))
	}
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		m[AnnotationOwnerPIDNS] = ns
	}
	if s, err := procStart(os.Getpid()); err == nil {
		m[AnnotationOwnerStart] = s
	}
	return m
})

func ownerAnnotations() map[string]string {
	out := map[string]string{}
	for k, v := range self() {
		out[k] = v
	}
	return out
}

func procStart(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return "", os.ErrInvalid
	}
	return fields[19], nil
}

// probe reports whether a pid exists and its start time; tests replace it.
type probe func(pid int) (exists bool, start string)

func processProbe(pid int) (bool, string) {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false, ""
	}
	start, _ := procStart(pid)
	return true, start
}

// ownerGone reports whether the process named by a is provably gone as
// seen from here: same boot and pid namespace, and no process with that
// pid and start time.
func ownerGone(a map[string]string, p probe) bool {
	me := self()
	pid, err := strconv.Atoi(a[AnnotationOwnerPID])
	boot, ns, start := a[AnnotationOwnerBoot], a[AnnotationOwnerPIDNS], a[AnnotationOwnerStart]
	if err != nil || pid <= 0 || boot == "" || ns == "" || start == "" ||
		boot != me[AnnotationOwnerBoot] || ns != me[AnnotationOwnerPIDNS] {
		return false
	}
	exists, now := p(pid)
	return !exists || (now != "" && now != start)
}

// abandoned decides whether GC may remove an object by default.
func abandoned(a map[string]string, created, now time.Time, maxAge time.Duration, p probe) bool {
	return now.Sub(created) > maxAge || ownerGone(a, p)
}
