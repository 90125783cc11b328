package judge

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenVerdict judges the committed input directory
// testdata/input/function (every kind of case outcome a function task can
// have) and compares the verdict with testdata/input/function.verdict.json.
// Run with -update to rewrite it.
func TestGoldenVerdict(t *testing.T) {
	root := filepath.Join("testdata", "input", "function")
	golden := root + ".verdict.json"
	v, err := judgeDir(t, root)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := json.Indent(&got, mustValidate(t, v), "", "  "); err != nil {
		t.Fatal(err)
	}
	got.WriteByte('\n')
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGoldenVerdict -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("verdict differs from %s (-want +got):\n%s", golden, diff)
	}
}
