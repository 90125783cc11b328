package batch

import "time"

// SetOverloadPauses replaces the pauses before an overloaded item is graded
// again, for the length of a test.
func SetOverloadPauses(p []time.Duration) (restore func()) {
	old := overloadPauses
	overloadPauses = p
	return func() { overloadPauses = old }
}
