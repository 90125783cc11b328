//go:build !unix

package engine

// processProbe cannot examine processes here: every owner counts as alive,
// and GC judges objects by age alone.
func processProbe(int) (bool, string) { return true, "" }
