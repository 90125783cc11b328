package proofmatrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTaxonomyNamesEveryProbe keeps TAXONOMY.md in step with the registry:
// the row of each probe's taxonomy id names the probe.
func TestTaxonomyNamesEveryProbe(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "TAXONOMY.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| V") {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		rows[id] = line
	}
	for _, p := range All() {
		if p.Control {
			continue
		}
		row, ok := rows[p.Taxonomy]
		if !ok {
			t.Errorf("%s: TAXONOMY.md has no row %s", p.ID, p.Taxonomy)
			continue
		}
		if !strings.Contains(row, "`"+p.ID+"`") {
			t.Errorf("TAXONOMY.md row %s does not name probe %s", p.Taxonomy, p.ID)
		}
	}
}
