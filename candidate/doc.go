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
package candidate
