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
// Load reads the directory once, through the firewall, into a snapshot held
// in memory: the canonical archive the digest is computed from. The spec and
// the cases are parsed from it, and everything read later — the hidden files
// the judge's volume holds, a data task's input files, the public files —
// comes from it, never from the directory again. So what a verdict grades is
// exactly what its task digest covers, even if the directory changes after
// Load. A loaded task costs its size in memory (at most the firewall policy's
// 1 GiB).
//
// Phases receive only what they may see. Task.Public is the view for the
// agent phase: id, kind, artifacts, limits and the public files, with no path
// to the cases or to hidden/. The candidate phase receives the case inputs
// alone, which the controller takes from the task; expected values stay here
// and in the judge.
//
// Other files of the task directory — a README.md, the reference/ solution
// that strictgrade task check grades — are covered by the digest and handed
// to no phase: the public view holds public/ only, the judge what it reads
// of hidden/ only.
//
// Load refuses more than judge.MaxCases cases, the most whose verdict is
// sure to stay within the schema's size limit, and hidden files the judge
// reads (cases.json, expected files, checker modules) beyond what it reads
// of them (judge.MaxFileSize each, judge.MaxHiddenSize in all), which
// would make every grade an ERROR.
package task
