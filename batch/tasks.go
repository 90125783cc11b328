package batch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/task"
)

// ErrBadTasks is wrapped by LoadTasks's errors about the task directories:
// none found, one that does not load, two tasks with one id.
var ErrBadTasks = errors.New("batch: bad task directories")

// Tasks indexes loaded tasks by their spec id.
type Tasks map[string]controller.Task

// LoadTasks loads every task under dirs, each a task directory (holding
// task.json) or a directory of task directories, with
// controller.LoadTask, and indexes them by spec id (task.Spec.ID,
// compat Spec.ID). Two tasks with one id are an error.
func LoadTasks(ctx context.Context, dirs []string) (Tasks, error) {
	tasks := Tasks{}
	where := map[string]string{}
	load := func(dir string) error {
		t, err := controller.LoadTask(ctx, dir)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadTasks, err)
		}
		id, _ := describe(t)
		if prev, dup := where[id]; dup {
			return fmt.Errorf("%w: task id %q is both %s and %s", ErrBadTasks, id, prev, dir)
		}
		tasks[id], where[id] = t, dir
		return nil
	}
	for _, dir := range dirs {
		if isTaskDir(dir) {
			if err := load(dir); err != nil {
				return nil, err
			}
			continue
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadTasks, err)
		}
		var subs []string
		for _, e := range ents {
			if sub := filepath.Join(dir, e.Name()); e.IsDir() && isTaskDir(sub) {
				subs = append(subs, sub)
			}
		}
		if len(subs) == 0 {
			return nil, fmt.Errorf("%w: %s holds no task.json, and no directory in it does", ErrBadTasks, dir)
		}
		sort.Strings(subs)
		for _, sub := range subs {
			if err := load(sub); err != nil {
				return nil, err
			}
		}
	}
	return tasks, nil
}

func isTaskDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, task.SpecFile))
	return err == nil && st.Mode().IsRegular()
}

// describe returns a task's spec id and digest.
func describe(t controller.Task) (id, digest string) {
	switch tt := t.(type) {
	case *task.Task:
		return tt.Spec.ID, tt.Digest
	case *compat.Task:
		return tt.Spec.ID, tt.Digest
	}
	return "", ""
}
