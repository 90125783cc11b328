package engine

import (
	"context"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
)

// oomGrace bounds how long Run waits, after a container ended by a SIGKILL
// the engine did not send, for the daemon to report an OOM kill.
const oomGrace = 5 * time.Second

// eventSource is the part of the Docker client oomReported needs.
type eventSource interface {
	Events(ctx context.Context, options events.ListOptions) (<-chan events.Message, <-chan error)
}

// oomReported asks the daemon whether it reported an OOM kill of the
// container since started, waiting up to grace for a report still on its
// way, and never past ctx.
//
// The daemon learns of an OOM kill and of the exit from two notifications
// that may arrive in either order; when the OOM comes second, the
// container's OOMKilled flag stays false (seen on Docker 20.10 with cgroup
// v1), but the oom event is still emitted. Without this question the same
// memory bomb was reported as OOM in most runs and as a plain exit with
// status 137 in a few. Events since the start are replayed from the
// daemon's recent history and later ones arrive live until the deadline.
func oomReported(ctx context.Context, src eventSource, id string, started time.Time, grace time.Duration) bool {
	deadline := time.Now().Add(grace)
	ectx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	msgs, errs := src.Events(ectx, events.ListOptions{
		Since: strconv.FormatInt(started.Add(-time.Second).Unix(), 10),
		Until: strconv.FormatInt(deadline.Add(time.Second).Unix(), 10),
		Filters: filters.NewArgs(
			filters.Arg("type", string(events.ContainerEventType)),
			filters.Arg("container", id),
			filters.Arg("event", string(events.ActionOOM)),
		),
	})
	for {
		select {
		case m := <-msgs:
			if m.Action == events.ActionOOM && m.Actor.ID == id {
				return true
			}
		case <-errs:
			return false // the stream ended: its deadline, the daemon, or ctx
		case <-ectx.Done():
			return false
		}
	}
}
