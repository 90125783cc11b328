package engine

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Owner labels, put on every container and volume next to the run and
// phase: which process made the object, so that GC can tell the objects of
// a grade still running in some process from what a killed process left.
// A process is named by the kernel's boot id, its pid namespace, its pid
// and its start time (clock ticks after boot, /proc/<pid>/stat field 22),
// which together never name two processes.
const (
	LabelOwnerHost  = "dev.strictgrade.owner.host"  // host name, for people
	LabelOwnerBoot  = "dev.strictgrade.owner.boot"  // /proc/sys/kernel/random/boot_id
	LabelOwnerPIDNS = "dev.strictgrade.owner.pidns" // the pid namespace, e.g. "pid:[4026531836]"
	LabelOwnerPID   = "dev.strictgrade.owner.pid"
	LabelOwnerStart = "dev.strictgrade.owner.start"
)

// owner identifies a process: the values of the owner labels.
type owner struct {
	host, boot, pidns string
	pid               int
	start             string
}

// self is the owner of every object this process creates. On a system
// without /proc, only the host and pid are known, and GC can judge such
// objects by age alone.
var self = sync.OnceValue(func() owner {
	o := owner{pid: os.Getpid()}
	o.host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		o.boot = strings.TrimSpace(string(b))
	}
	o.pidns, _ = os.Readlink("/proc/self/ns/pid")
	o.start, _ = procStart(o.pid)
	return o
})

// add puts the owner labels into l.
func (o owner) add(l map[string]string) {
	for k, v := range map[string]string{
		LabelOwnerHost: o.host, LabelOwnerBoot: o.boot, LabelOwnerPIDNS: o.pidns,
		LabelOwnerPID: strconv.Itoa(o.pid), LabelOwnerStart: o.start,
	} {
		if v != "" {
			l[k] = v
		}
	}
}

// procStart reads a process's start time from /proc/<pid>/stat: the 22nd
// field, counted after the command name in parentheses (which may itself
// hold spaces and parentheses).
func procStart(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	fields := strings.Fields(rest)
	if len(fields) < 20 {
		return "", os.ErrInvalid
	}
	return fields[19], nil
}

// ownerState is what GC knows about the process that made an object.
type ownerState int

const (
	ownerUnknown ownerState = iota // no labels, or another boot or pid namespace
	ownerAlive                     // the process exists (or may: it cannot be examined)
	ownerGone                      // no such process, or the pid now names another one
)

// probe reports whether a pid exists and, when it can be read, its start
// time; tests replace it.
type probe func(pid int) (exists bool, start string)

// state says whether the owner named by labels is alive, as seen by me.
func (me owner) state(labels map[string]string, p probe) ownerState {
	pid, err := strconv.Atoi(labels[LabelOwnerPID])
	boot, ns, start := labels[LabelOwnerBoot], labels[LabelOwnerPIDNS], labels[LabelOwnerStart]
	switch {
	case err != nil || pid <= 0 || boot == "" || ns == "" || start == "":
		return ownerUnknown
	case me.boot == "" || boot != me.boot || ns != me.pidns:
		// Another machine, boot or pid namespace: the pid means
		// nothing here.
		return ownerUnknown
	}
	exists, now := p(pid)
	switch {
	case !exists:
		return ownerGone
	case now != "" && now != start:
		return ownerGone
	}
	return ownerAlive
}

// abandoned decides whether GC may remove an object by default: its owner
// is gone, or it is older than maxAge. An object whose owner cannot be
// checked is judged by age alone.
func (me owner) abandoned(labels map[string]string, created, now time.Time, maxAge time.Duration, p probe) bool {
	if now.Sub(created) > maxAge {
		return true
	}
	return me.state(labels, p) == ownerGone
}
