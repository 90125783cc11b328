// Package agentbox is the agent container of a strict-tier task: the
// task's public inputs in a writable work volume, the hardened profile, and
// nothing else — no tests, no expected outputs, no network, no secrets.
//
// A harness either drives the box from a model loop on the host (Exec,
// ReadFile, WriteFile: each command runs under a time limit, each file
// crosses through the tar firewall) or runs one agent command to
// completion (RunAgent). Afterwards Export copies the task's declared
// artifacts out of the stopped container through the firewall, ready to be
// graded.
//
// The box is given a task's public view (Public, which *task.Public
// implements: the artifacts to leave and the public files), never the task:
// the package imports neither package task nor package judge. A harness's
// agent loop needs nothing more than the view, so the scaffold around the
// agent need never hold the answers.
package agentbox
