package engine

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
)

// fakeEvents answers one Events call with the given messages, then ends the
// stream when its context does (as the daemon does at the deadline).
type fakeEvents struct {
	msgs []events.Message
	got  events.ListOptions
}

func (f *fakeEvents) Events(ctx context.Context, opts events.ListOptions) (<-chan events.Message, <-chan error) {
	f.got = opts
	msgs, errs := make(chan events.Message), make(chan error, 1)
	go func() {
		defer close(errs)
		for _, m := range f.msgs {
			select {
			case msgs <- m:
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			}
		}
		<-ctx.Done()
		errs <- ctx.Err()
	}()
	return msgs, errs
}

func oomOf(id string) events.Message {
	return events.Message{Type: events.ContainerEventType, Action: events.ActionOOM, Actor: events.Actor{ID: id}}
}

func TestOOMReported(t *testing.T) {
	const id = "c0ffee"
	started := time.Now()
	for _, tt := range []struct {
		name string
		msgs []events.Message
		want bool
	}{
		{"an oom event, late or not", []events.Message{oomOf(id)}, true},
		{"no event within the grace", nil, false},
		{"another container's oom", []events.Message{oomOf("other")}, false},
		{"another action", []events.Message{{Type: events.ContainerEventType, Action: events.ActionDie, Actor: events.Actor{ID: id}}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeEvents{msgs: tt.msgs}
			if got := oomReported(t.Context(), src, id, started, 50*time.Millisecond); got != tt.want {
				t.Errorf("oomReported = %v, want %v", got, tt.want)
			}
			if src.got.Since == "" || src.got.Until == "" || src.got.Filters.Get("container")[0] != id {
				t.Errorf("query %+v does not replay this container's history up to a deadline", src.got)
			}
		})
	}
	t.Run("a cancelled context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if oomReported(ctx, &fakeEvents{}, id, started, time.Hour) {
			t.Error("reported an OOM nobody sent")
		}
	})
}
