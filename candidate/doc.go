// Package candidate runs a submission in fresh candidate-execution
// containers and returns what it produced as bytes.
//
// The container receives only the firewalled artifacts (a read-only volume
// at /artifacts) and the inputs of the cases (read-only, at /inputs or
// /input); expected values never enter it. Function tasks run a small
// trusted shim (shim.py) that imports the candidate's callable and writes
// each return value as JSON; command and data tasks run one fresh container
// per case. Outputs come back through the backend's bounded capture and the
// firewall, and are handed to the judge as data.
//
// What the phase may see is fixed by type. Run takes a Request: how to call
// the candidate, the limits, and per case only its inputs (arguments, a
// command line and standard input, input files by name). It holds no
// expected value and no way back to the task, and the package imports
// neither package task nor package judge. What comes back per case is a
// Record (how the process ended, whether its streams were cut, whether its
// outputs were refused) with the bytes it produced; the controller turns
// records into the judge's result files.
//
// When a function task's cases share one process, the shim calls them in
// CallOrder(nonce): an order drawn for each grade from its nonce, which the
// container never sees, so answers keyed to the order of the calls fail.
// Records are numbered by call and mapped back to cases on the host.
//
// A data case writes its files to /output, a tmpfs with the task's output
// size and a fixed inode cap (sandbox.StreamOut), charged to its memory
// limit: filling it gives ENOSPC, and nothing of it reaches the daemon's
// disk. Refused outputs are the case's failure; the text recorded for the
// judge names the kind of refusal, never a name the candidate chose.
package candidate
