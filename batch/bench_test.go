package batch_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/batch"
)

// BenchmarkResume measures a run that keeps every one of 50 strict items:
// what a resume costs per item now that each kept item's workspace is
// admitted again and its verdict checked against it.
func BenchmarkResume(b *testing.B) {
	root := b.TempDir()
	copyTask(b, filepath.Join(root, "tasks"), "copy")
	files := map[string]string{"honest/solution.py": copySource}
	var lines []string
	for i := range 50 {
		lines = append(lines, fmt.Sprintf(`{"id":"i%d","task":"copy","submission":"honest"}`, i))
	}
	files["items.jsonl"] = strings.Join(lines, "\n") + "\n"
	writeFiles(b, root, files)
	items, err := batch.ReadItems(filepath.Join(root, "items.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	tasks, err := batch.LoadTasks(b.Context(), []string{filepath.Join(root, "tasks")})
	if err != nil {
		b.Fatal(err)
	}
	signer := newSigner(b)
	opts := batch.Options{Controller: fakeController(b, signer, 2, false), Signer: signer, Items: items, Tasks: tasks, Out: filepath.Join(root, "out")}
	if _, err := batch.Run(b.Context(), opts); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		sum, err := batch.Run(b.Context(), opts)
		if err != nil || sum.Resumed != 50 {
			b.Fatalf("%+v, %v", sum, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*50), "µs/item")
}
