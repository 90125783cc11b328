// Package task loads strict-tier task directories.
//
// A task directory holds a spec file, task.json (validated against the
// embedded task schema), a public/ directory handed to the agent, and a
// hidden/ directory that only the judge sees: hidden/cases.json with the
// cases, expected outputs and comparator settings, and any expected files
// the cases name. The task digest is the sha256 of the firewall's canonical
// archive of the whole directory, so it covers everything a verdict
// depends on, the spec's disclosure policy included.
//
// Load refuses more than judge.MaxCases cases, the most whose verdict is
// sure to stay within the schema's size limit.
package task
