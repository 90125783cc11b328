package kubernetes

import "time"

// Retarget binds the pods of later runs to node and gives them startTimeout
// to start. New runs its preflight pod with the configuration it is given,
// so a test that wants pods no node will start changes the backend after New.
func Retarget(b *Backend, node string, startTimeout time.Duration) {
	b.cfg.NodeName = node
	b.cfg.StartTimeout = startTimeout
}

// PoolRun is the run label of the pods b starts ahead of time.
func PoolRun(b *Backend) string { return b.pool.run }

// TarOf is an archive of regular files, given as name, body pairs.
func TarOf(kv ...string) []byte { return tarOf(kv...) }
