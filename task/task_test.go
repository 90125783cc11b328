package task_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

const commandSpec = `{"schema":"strictgrade.task/v1","id":"t","version":"1","kind":"command","runtime":"python",
	"command":{"path":"run"},"artifacts":["run"]%s}`

func TestParseSpecDisclosure(t *testing.T) {
	for _, tt := range []struct {
		field string
		want  schema.Disclosure
		ok    bool
	}{
		{"", "", true},
		{`,"disclosure":"digest"`, schema.DisclosureDigest, true},
		{`,"disclosure":"detailed"`, schema.DisclosureDetailed, true},
		{`,"disclosure":"verbose"`, "", false},
		{`,"disclosure":""`, "", false},
	} {
		t.Run(tt.field, func(t *testing.T) {
			s, err := task.ParseSpec([]byte(fmt.Sprintf(commandSpec, tt.field)))
			if !tt.ok {
				if !errors.Is(err, task.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Disclosure != tt.want {
				t.Errorf("disclosure %q, want %q", s.Disclosure, tt.want)
			}
		})
	}
}

// writeTask lays out a command task with n cases.
func writeTask(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(`{"cases":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"case-%d","expected_exit":0}`, i)
	}
	b.WriteString(`]}`)
	for name, data := range map[string]string{
		task.SpecFile:              fmt.Sprintf(commandSpec, ""),
		"public/README":            "run prints nothing\n",
		"hidden/" + task.CasesFile: b.String(),
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLoadCaseLimit: the loader accepts as many cases as a verdict has
// room for (judge.MaxCases), and no more.
func TestLoadCaseLimit(t *testing.T) {
	tk, err := task.Load(t.Context(), writeTask(t, judge.MaxCases))
	if err != nil {
		t.Fatalf("the largest legal task: %v", err)
	}
	if len(tk.Cases.Cases) != judge.MaxCases {
		t.Errorf("%d cases", len(tk.Cases.Cases))
	}
	_, err = task.Load(t.Context(), writeTask(t, judge.MaxCases+1))
	if !errors.Is(err, task.ErrInvalid) || !errors.Is(err, judge.ErrCases) {
		t.Errorf("err = %v, want ErrInvalid and judge.ErrCases", err)
	}
}
