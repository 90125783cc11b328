package strict

import (
	"fmt"
	"slices"

	"github.com/strictgrade/strictgrade/candidate"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// candidateRequest takes from t what its candidate phase may see: how to
// call the candidate, the limits, and per case only its inputs. Expected
// values and the names of expected files stay behind; input files come from
// the snapshot the task's digest covers.
func candidateRequest(t *task.Task) (candidate.Request, error) {
	s := t.Spec
	req := candidate.Request{
		Kind:    s.Kind,
		PerCase: s.Isolation == task.PerCase,
		Limits: candidate.Limits{
			CaseTime:      s.Limits.CaseTime(),
			MemoryBytes:   s.Limits.MemoryMB << 20,
			PIDs:          s.Limits.PIDs,
			OutputBytes:   s.Limits.OutputBytes,
			ArtifactBytes: s.Limits.ArtifactBytes,
		},
		Cases: make([]candidate.Input, len(t.Cases.Cases)),
		// The phase holds of each case only what the judge reads, each
		// output cut one byte past what the judge reads of a file: enough
		// for outputsArchive to know it too large.
		Hold: candidate.Hold{Bytes: judge.MaxFileSize, NoStderr: true},
	}
	switch {
	case s.Function != nil:
		req.Function = &candidate.Function{Module: s.Function.Module, Name: s.Function.Name}
	case s.Command != nil:
		req.Command = &candidate.Command{Path: s.Command.Path}
	case s.Data != nil:
		req.Data = &candidate.Data{Argv: s.Data.Argv}
	}
	for i, c := range t.Cases.Cases {
		in := candidate.Input{Args: c.Args, Argv: c.Argv, Stdin: []byte(c.Stdin),
			NoStdout: !slices.Contains(t.Cases.Reads(s.Kind, i), judge.StdoutFile)}
		if len(c.InputFiles) > 0 {
			in.Files = make(map[string][]byte, len(c.InputFiles))
		}
		for name, rel := range c.InputFiles {
			data, err := t.HiddenFile(rel)
			if err != nil {
				return candidate.Request{}, fmt.Errorf("case %q input %q: %w", c.ID, name, err)
			}
			in.Files[name] = data
		}
		req.Cases[i] = in
	}
	return req, nil
}

// runResult is the judge's result.json for a case the candidate phase ran.
func runResult(r candidate.Record) judge.RunResult {
	res := judge.RunResult{
		Exit: r.Exit, ExitCode: r.Code, DurationMS: r.Duration.Milliseconds(),
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		Error: r.Refused,
	}
	if r.CPUMeasured {
		res.CPUMS = schema.Millis(r.CPU)
	}
	if r.Exit == schema.ExitTimeout {
		res.Limit = schema.Limit(r.Limit)
	}
	return res
}
