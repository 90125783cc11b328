// Package diffgate is the compat tier's diff gate: it reads an agent's
// unified diff and decides, file section by file section, what may reach
// the repository.
//
// Gate.Filter parses git's diff format (new, deleted, renamed and copied
// files, mode changes, C-quoted names, binary markers; plain "---"/"+++"
// diffs too) and drops every file section that is a binary patch, creates
// or changes a symbolic link or gitlink, touches a Protected path (the
// files of a task's suites), touches a path a Deny glob matches, or
// touches a path no Allow glob matches. DefaultDeny keeps tests, test and
// tool configuration, start-up hooks, packaging, build and CI files out
// whatever a task allows. Every name must also pass the tar firewall's
// name rules, and globs are matched by the firewall itself, so the gate
// and the firewall cannot disagree about what a glob means. The kept
// sections are passed on byte for byte (Filtered.Diff, with its digest);
// each dropped hunk is recorded with its path and the rule that dropped it
// (schema.DroppedHunk).
//
// A diff the gate cannot parse, or one over its limits, is refused with an
// error wrapping ErrDiff: it is the candidate's doing, never an
// infrastructure error. Its size is checked before it is parsed and its
// number of file sections as the parser meets them, before any path is
// judged. The parser does one pass over the diff; judging costs a few
// firewall runs per distinct path.
//
// The package is pure: it reads the bytes it is given and returns bytes
// and records. It opens no file, runs no process and knows nothing of
// sandboxes or engines; package compat applies what it keeps.
package diffgate
