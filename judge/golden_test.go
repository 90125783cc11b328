package judge

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strictgrade/strictgrade/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenVerdict judges the committed input directory
// testdata/input/function (every kind of case outcome a function task can
// have) and compares the verdict with testdata/input/function.verdict.json;
// then once more under the detailed disclosure policy, with
// function.detailed.verdict.json. Run with -update to rewrite them.
func TestGoldenVerdict(t *testing.T) {
	root := filepath.Join("testdata", "input", "function")
	for _, tt := range []struct {
		disclosure schema.Disclosure // "" keeps meta.json's (none: the default)
		golden     string
	}{
		{"", root + ".verdict.json"},
		{schema.DisclosureDetailed, root + ".detailed.verdict.json"},
	} {
		t.Run(filepath.Base(tt.golden), func(t *testing.T) {
			in, err := ReadInput(root)
			if err != nil {
				t.Fatal(err)
			}
			if tt.disclosure != "" {
				in.Meta.Verdict.Disclosure = tt.disclosure
			}
			v, err := Judge(in)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := json.Indent(&got, mustValidate(t, v), "", "  "); err != nil {
				t.Fatal(err)
			}
			got.WriteByte('\n')
			if *update {
				if err := os.WriteFile(tt.golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(tt.golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenVerdict -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("verdict differs from %s (-want +got):\n%s", tt.golden, diff)
			}
		})
	}
}
