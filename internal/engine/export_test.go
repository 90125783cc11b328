package engine

import "context"

// PinTo runs every sandbox the backend makes from now on on the CPUs
// listed ("0").
func (d *Docker) PinTo(cpus string) { d.cpuset = cpus }

// SlowOutput reads every sandbox's standard output the backend runs from
// now on at rate bytes a second, as a host too busy to drain it would.
func (d *Docker) SlowOutput(rate int64) { d.outputRate = rate }

// ParseCPUList is parseCPUList.
func ParseCPUList(s string) []int { return parseCPUList(s) }

// PoolRun is the run label of what the backend makes for itself.
func (d *Docker) PoolRun() string { return d.poolRun }

// PooledIDs lists the containers waiting in the pool.
func (d *Docker) PooledIDs() []string {
	d.pool.mu.Lock()
	defer d.pool.mu.Unlock()
	var ids []string
	for _, sh := range d.pool.shapes {
		for _, p := range sh.ready {
			ids = append(ids, p.id)
		}
	}
	return ids
}

// UseSginitPrefix names the backend's sginit volumes with prefix, so that a
// test's own stay apart from the daemon's shared ones. Call it first.
func (d *Docker) UseSginitPrefix(prefix string) {
	d.sginitPrefix, d.sharedPrefix = prefix, prefix+"shared-"
}

// InitVolume finds or makes the sginit volume.
func (d *Docker) InitVolume(ctx context.Context) (string, error) { return d.initVolume(ctx) }

// GCInit is GC's part for the image volumes (sginit's, shared directories)
// of the backend's prefix.
func (d *Docker) GCInit(ctx context.Context, all bool) ([]string, error) {
	var rep GCReport
	err := d.gcImageVolumes(ctx, all, false, &rep)
	return rep.Volumes, err
}

// WaitImageVolumes waits for the image volumes being made in the
// background.
func (d *Docker) WaitImageVolumes() { d.initWG.Wait() }

// FailPauses makes the session's next n pauses fail, as runc's freezer
// does when a loaded host keeps the cgroup's tasks from stopping in time.
func (s *Session) FailPauses(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failPauses = n
}

// FreezeTries is freezeTries.
const FreezeTries = freezeTries

// FailRemovals makes the backend's container removals fail, as a busy
// daemon's do for a while, until it is called with false.
func (d *Docker) FailRemovals(fail bool) { d.failRemovals.Store(fail) }

// Unsettled counts the containers whose removal gave up and waits to be
// tried again.
func (d *Docker) Unsettled() int {
	d.unsettledM.Lock()
	defer d.unsettledM.Unlock()
	return len(d.unsettled)
}
