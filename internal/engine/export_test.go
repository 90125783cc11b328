package engine

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
