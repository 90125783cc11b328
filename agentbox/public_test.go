package agentbox_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/strictgrade/strictgrade/agentbox"
	"github.com/strictgrade/strictgrade/task"
)

// TestOpenTakesThePublicView: the agent phase is handed a task's public
// view, which a whole task is not.
func TestOpenTakesThePublicView(t *testing.T) {
	public := reflect.TypeFor[agentbox.Public]()
	if !reflect.TypeFor[*task.Public]().Implements(public) {
		t.Error("*task.Public does not implement agentbox.Public")
	}
	if reflect.TypeFor[*task.Task]().Implements(public) {
		t.Error("*task.Task, which holds the hidden cases, implements agentbox.Public")
	}
	tk, err := task.Load(t.Context(), filepath.Join("..", "examples", "sum", "task"))
	if err != nil {
		t.Fatal(err)
	}
	var pub agentbox.Public = tk.Public()
	if got := pub.Artifacts(); len(got) != 1 || got[0] != "solution.py" {
		t.Errorf("artifacts %v", got)
	}
}
