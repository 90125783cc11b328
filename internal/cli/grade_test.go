package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestGradeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"grade"},
		{"grade", "--task", "nowhere", "--submission", "nowhere"},
		{"grade", "--bogus"},
		{"grade", "--task", filepath.Join("..", "..", "examples", "sum", "task"), "--submission", ".", "--disclosure", "everything"},
	} {
		if code, _, _ := run(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
}
