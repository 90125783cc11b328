package candidate

import (
	"path/filepath"
	"testing"

	"github.com/strictgrade/strictgrade/task"
)

func loadExample(t *testing.T, name string) *task.Task {
	t.Helper()
	tk, err := task.Load(t.Context(), filepath.Join("..", "examples", name, "task"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// forTask fills r with what the controller takes from a task for the
// candidate phase: how to call the candidate, the limits and the cases'
// inputs.
func forTask(t *testing.T, tk *task.Task, r Request) Request {
	t.Helper()
	s := tk.Spec
	r.Kind, r.PerCase = s.Kind, s.Isolation == task.PerCase
	r.Limits = Limits{CaseTime: s.Limits.CaseTime(), MemoryBytes: s.Limits.MemoryMB << 20, PIDs: s.Limits.PIDs,
		OutputBytes: s.Limits.OutputBytes, ArtifactBytes: s.Limits.ArtifactBytes}
	if s.Function != nil {
		r.Function = &Function{Module: s.Function.Module, Name: s.Function.Name}
	}
	if s.Command != nil {
		r.Command = &Command{Path: s.Command.Path}
	}
	if s.Data != nil {
		r.Data = &Data{Argv: s.Data.Argv}
	}
	for _, c := range tk.Cases.Cases {
		in := Input{Args: c.Args, Argv: c.Argv, Stdin: []byte(c.Stdin)}
		for name, rel := range c.InputFiles {
			data, err := tk.HiddenFile(rel)
			if err != nil {
				t.Fatal(err)
			}
			if in.Files == nil {
				in.Files = map[string][]byte{}
			}
			in.Files[name] = data
		}
		r.Cases = append(r.Cases, in)
	}
	return r
}
