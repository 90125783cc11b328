package compat

import (
	"slices"
	"strings"
	"testing"
)

// TestImportsCmd: the imports probe runs pytest with the suites' own
// arguments, collecting only, and writing no JUnit report.
func TestImportsCmd(t *testing.T) {
	ids := []string{"tests/test_a.py::test_x", "tests/test_b.py::test_y[a b]"}
	cmd := importsCmd(ids)
	suite := pytestCmd(ids)
	if !slices.Equal(cmd[:5], []string{"python3", "-P", "-s", "-B", "-c"}) || cmd[5] != importsScript ||
		cmd[6] != RepoDir || cmd[7] != OutDir+"/imports.json" {
		t.Fatalf("interpreter and script: %q", cmd[:8])
	}
	var want []string
	for _, a := range suite[6:] {
		if strings.HasPrefix(a, "--junitxml=") {
			continue
		}
		if a == "--" {
			want = append(want, "--collect-only")
		}
		want = append(want, a)
	}
	if !slices.Equal(cmd[8:], want) || !slices.Equal(suite[4:6], []string{"-m", "pytest"}) {
		t.Errorf("pytest arguments %q\nwant %q", cmd[8:], want)
	}
	if !slices.Contains(cmd, "-c") || !slices.Contains(cmd, IniPath) || !slices.Equal(cmd[len(cmd)-3:], append([]string{"--"}, ids...)) {
		t.Errorf("%q", cmd)
	}
}
