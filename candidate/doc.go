// Package candidate runs a submission in fresh candidate-execution
// containers and returns what it produced as bytes.
//
// The container receives only the firewalled artifacts (a read-only volume
// at /artifacts) and the inputs of the cases (read-only, at /inputs or
// /input); expected values never enter it. Function tasks run a small
// trusted shim (shim.py) that imports the candidate's callable and writes
// each return value as JSON; command and data tasks run one fresh container
// per case. Outputs come back through the engine's bounded capture and the
// firewall, and are handed to the judge as data.
//
// When a function task's cases share one process, the shim calls them in
// CallOrder(nonce): an order drawn for each grade from its nonce, which the
// container never sees, so answers keyed to the order of the calls fail.
// Records are numbered by call and mapped back to cases on the host.
//
// A data case writes its files to /output, a tmpfs with the task's output
// size and a fixed inode cap (engine.StreamOut), charged to its memory
// limit: filling it gives ENOSPC, and nothing of it reaches the daemon's
// disk. Refused outputs are the case's failure; the text recorded for the
// judge names the kind of refusal, never a name the candidate chose.
package candidate
