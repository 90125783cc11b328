package engine

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
)

// oomGrace bounds how long Run waits, after a container ended by SIGKILL
// that the engine did not send, for the daemon to report an OOM kill.
const oomGrace = 5 * time.Second

// oomWatch follows the daemon's oom events for one container. The daemon
// learns of an OOM kill and of the exit from two separate notifications
// that may arrive in either order; when the OOM comes second, the
// container's OOMKilled flag stays false (seen on Docker 20.10 with
// cgroup v1), but the oom event is still emitted. Without this watch, the
// same memory bomb was reported as OOM in most runs and as a plain exit
// with status 137 in a few: a verdict that changed without a code change.
type oomWatch struct {
	seen chan struct{}
	once sync.Once
	stop context.CancelFunc
}

// watchOOM subscribes to the container's oom events, replaying from a
// second before the call so that an event the daemon emits before the
// subscription is in place is not missed. Close it with stop.
func (d *Docker) watchOOM(ctx context.Context, id string) *oomWatch {
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &oomWatch{seen: make(chan struct{}), stop: cancel}
	msgs, errs := d.cli.Events(ectx, events.ListOptions{
		Since: strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10),
		Filters: filters.NewArgs(
			filters.Arg("type", string(events.ContainerEventType)),
			filters.Arg("container", id),
			filters.Arg("event", string(events.ActionOOM)),
		),
	})
	go func() {
		for {
			select {
			case m := <-msgs:
				if m.Action == events.ActionOOM && m.Actor.ID == id {
					w.once.Do(func() { close(w.seen) })
				}
			case <-errs:
				return
			case <-ectx.Done():
				return
			}
		}
	}()
	return w
}

// reported waits up to grace for an oom event and says whether one came.
func (w *oomWatch) reported(grace time.Duration) bool {
	select {
	case <-w.seen:
		return true
	default:
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-w.seen:
		return true
	case <-t.C:
		return false
	}
}
