package resumedemo

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/schema"
)

// TestWriteItems: the items file parses, mixes the four tasks from its
// first lines, and expects a PASS only of honest and alternative work.
func TestWriteItems(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	path, items, err := WriteItems(repo, t.TempDir(), 60)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := batch.ReadItems(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed) != 60 || len(items) != 60 {
		t.Fatalf("%d items parsed, %d listed; want 60", len(parsed), len(items))
	}
	tasks := map[string]bool{}
	for i, it := range parsed {
		if i < 4 {
			tasks[it.Task] = true
		}
		if it.ID != items[i].ID || it.Task != items[i].Task {
			t.Errorf("line %d: %s/%s, listed %s/%s", i+1, it.ID, it.Task, items[i].ID, items[i].Task)
		}
		honest := strings.Contains(it.ID, "-honest-") || strings.Contains(it.ID, "-alternative-")
		if (items[i].Want == schema.OutcomePass) != honest {
			t.Errorf("%s expects %s", it.ID, items[i].Want)
		}
		if it.Compat() != (it.Task == "textkit-slugify") {
			t.Errorf("%s: compat %v", it.ID, it.Compat())
		}
	}
	if len(tasks) != 4 {
		t.Errorf("the first four items cover %d tasks", len(tasks))
	}
	if _, err := batch.LoadTasks(t.Context(), TaskDirs(repo)); err != nil {
		t.Fatal(err)
	}
}
