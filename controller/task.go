package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/strictgrade/strictgrade/compat"
	"github.com/strictgrade/strictgrade/task"
)

// ErrUnknownTask is wrapped by LoadTask's error for a directory whose
// task.json names neither tier's schema.
var ErrUnknownTask = errors.New("controller: not a task of either tier")

// maxSniff bounds what LoadTask reads of task.json to tell the tiers apart;
// the tier's loader then reads it whole under its own limits.
const maxSniff = 4 << 20

// LoadTask loads the task in dir, of either tier: the "schema" field of
// its task.json says which, and the tier's loader (task.Load or
// compat.Load) does the rest, with every check it makes. The result is a
// *task.Task or a *compat.Task, ready for Grade.
func LoadTask(ctx context.Context, dir string) (Task, error) {
	id, err := specSchema(dir)
	if err != nil {
		return nil, err
	}
	switch id {
	case task.SpecSchema:
		return task.Load(ctx, dir)
	case compat.SpecSchema:
		return compat.Load(ctx, dir)
	}
	return nil, fmt.Errorf("%w: %s: task.json: schema %q; want %q or %q", ErrUnknownTask, dir, id, task.SpecSchema, compat.SpecSchema)
}

// specSchema reads the "schema" field of dir's task.json, opened within
// dir so that no link leads out of it.
func specSchema(dir string) (string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("controller: task directory: %w", err)
	}
	defer root.Close()
	f, err := root.Open(task.SpecFile)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrUnknownTask, dir, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSniff+1))
	if err != nil {
		return "", fmt.Errorf("controller: %s: %w", task.SpecFile, err)
	}
	if len(data) > maxSniff {
		return "", fmt.Errorf("%w: %s: task.json is larger than %d bytes", ErrUnknownTask, dir, maxSniff)
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return "", fmt.Errorf("%w: %s: task.json: %w", ErrUnknownTask, dir, err)
	}
	return head.Schema, nil
}
