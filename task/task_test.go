package task_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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

// TestLoadRefusesHiddenFilesTheJudgeCannotRead: expected files larger than
// the judge reads of one, or of all hidden files, would make every grade
// an ERROR; the loader refuses them, and accepts them at the limits.
func TestLoadRefusesHiddenFilesTheJudgeCannotRead(t *testing.T) {
	const spec = `{"schema":"strictgrade.task/v1","id":"big-expected","version":"1","title":"t","kind":"data","runtime":"python",
		"data":{"argv":["python3","solution.py"]},"artifacts":["solution.py"]}`
	write := func(t *testing.T, sizes ...int) string {
		dir := t.TempDir()
		var cases []string
		files := map[string][]byte{task.SpecFile: []byte(spec), "public/README": []byte("x\n")}
		for i, n := range sizes {
			name := fmt.Sprintf("e%d", i)
			cases = append(cases, fmt.Sprintf(`{"id":"c%d","expected_files":{"out":%q}}`, i, name))
			files["hidden/"+name] = bytes.Repeat([]byte("e"), n)
		}
		files["hidden/"+task.CasesFile] = []byte(`{"cases":[` + strings.Join(cases, ",") + `]}`)
		for name, data := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	const mib = 1 << 20
	for _, tt := range []struct {
		name  string
		sizes []int
		ok    bool
	}{
		{"one file at the judge's limit", []int{judge.MaxFileSize}, true},
		{"one file past it", []int{judge.MaxFileSize + 1}, false},
		{"files within the hidden budget", []int{judge.MaxFileSize, judge.MaxFileSize, judge.MaxFileSize, judge.MaxFileSize - mib}, true},
		{"files past it", []int{judge.MaxFileSize, judge.MaxFileSize, judge.MaxFileSize, judge.MaxFileSize}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := task.Load(t.Context(), write(t, tt.sizes...))
			if tt.ok != (err == nil) || err != nil && !errors.Is(err, task.ErrInvalid) {
				t.Errorf("err = %v, want ok %v or ErrInvalid", err, tt.ok)
			}
		})
	}
}

// copyExample copies an example task into a temporary directory.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "examples", name, "task"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// entries returns the regular files of a tar archive by name.
func entries(t *testing.T, r io.Reader) map[string]string {
	t.Helper()
	files := map[string]string{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = string(data)
		}
	}
}

// TestReadsComeFromTheSnapshot: once loaded, a task's files are the ones
// its digest covers, whatever happens to the directory afterwards.
func TestReadsComeFromTheSnapshot(t *testing.T) {
	dir := copyExample(t, "csvstats")
	tk, err := task.Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	const input, expected = "cases/small/data.csv", "cases/small/stats.json"
	read := func(rel string) string {
		data, err := os.ReadFile(filepath.Join(dir, "hidden", filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	wantInput, wantExpected := read(input), read(expected)
	readme, err := os.ReadFile(filepath.Join(dir, "public", "README.md"))
	if err != nil {
		t.Fatal(err)
	}

	// Change every kind of file the grade reads, and remove one.
	for name, data := range map[string]string{
		"hidden/" + input:    "a\n1\n",
		"hidden/" + expected: `{"forged":true}`,
		"public/README.md":   "changed\n",
		"public/extra":       "new\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	again, err := task.Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest == tk.Digest {
		t.Errorf("the changed directory has the loaded digest %s", tk.Digest)
	}
	if err := os.RemoveAll(filepath.Join(dir, "hidden", "cases", "wide")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		got  func() (string, error)
		want string
	}{
		{"input file", func() (string, error) { b, err := tk.HiddenFile(input); return string(b), err }, wantInput},
		{"expected file", func() (string, error) { b, err := tk.HiddenFile(expected); return string(b), err }, wantExpected},
		{"removed file", func() (string, error) { b, err := tk.HiddenFile("cases/wide/data.csv"); return string(b), err }, read0(t, "csvstats", "hidden/cases/wide/data.csv")},
		{"hidden archive", func() (string, error) {
			var buf bytes.Buffer
			err := tk.WriteHidden(t.Context(), &buf)
			return entries(t, &buf)["hidden/"+expected], err
		}, wantExpected},
		{"public archive", func() (string, error) {
			var buf bytes.Buffer
			err := tk.WritePublic(t.Context(), &buf)
			return fmt.Sprint(entries(t, &buf)), err
		}, fmt.Sprint(map[string]string{"public/README.md": string(readme)})},
		{"public view", func() (string, error) { return fmt.Sprint(entries(t, tk.Public().Files())), nil },
			fmt.Sprint(map[string]string{"README.md": string(readme)})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want the loaded %q", got, tt.want)
			}
		})
	}
}

// read0 reads a file of an example task as committed.
func read0(t *testing.T, example, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", example, "task", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestPublicHoldsNothingHidden: the public view of a task carries public/
// and the task's declared shape, and nothing that leads to its cases.
func TestPublicHoldsNothingHidden(t *testing.T) {
	tk, err := task.Load(t.Context(), filepath.Join("..", "examples", "csvstats", "task"))
	if err != nil {
		t.Fatal(err)
	}
	p := tk.Public()
	if p.ID() != tk.Spec.ID || p.Kind() != tk.Spec.Kind || p.Limits() != tk.Spec.Limits || !slices.Equal(p.Artifacts(), tk.Spec.Artifacts) {
		t.Errorf("public view %s %s %v %v differs from the spec", p.ID(), p.Kind(), p.Limits(), p.Artifacts())
	}
	for name := range entries(t, p.Files()) {
		if strings.Contains(name, "hidden") || strings.Contains(name, "cases") || name == task.SpecFile {
			t.Errorf("public files hold %s", name)
		}
	}
	// By type: no exported field, and no method that returns anything
	// holding cases.
	typ := reflect.TypeFor[task.Public]()
	for f := range typ.Fields() {
		if f.IsExported() {
			t.Errorf("task.Public has an exported field %s", f.Name)
		}
	}
	pt := reflect.TypeFor[*task.Public]()
	for m := range pt.Methods() {
		for out := range m.Type.Outs() {
			if out == reflect.TypeFor[*task.Task]() || out.PkgPath() == reflect.TypeFor[judge.Cases]().PkgPath() {
				t.Errorf("task.Public.%s returns %s", m.Name, out)
			}
		}
	}
}

// TestCheckerModuleRequired: a task whose checker comparator names no
// hidden file does not load.
func TestCheckerModuleRequired(t *testing.T) {
	dir := copyExample(t, "toposort")
	if _, err := task.Load(t.Context(), dir); err != nil {
		t.Fatalf("examples/toposort: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "hidden", "checker.wasm")); err != nil {
		t.Fatal(err)
	}
	_, err := task.Load(t.Context(), dir)
	if !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), "checker module hidden/checker.wasm is not a regular file") {
		t.Errorf("err = %v, want ErrInvalid naming the missing checker module", err)
	}
}

// TestReferenceStaysOutOfThePublicView: a reference solution in the task
// directory (reference/, next to public/ and hidden/) is covered by the
// digest, which is of the whole directory, but never reaches the public view
// or the hidden files the judge receives.
func TestReferenceStaysOutOfThePublicView(t *testing.T) {
	dir := copyExample(t, "sum")
	if err := os.RemoveAll(filepath.Join(dir, "reference")); err != nil {
		t.Fatal(err)
	}
	without, err := task.Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "reference"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reference", "solution.py"), []byte("def solve(xs):\n    return sum(xs)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	with, err := task.Load(t.Context(), dir)
	if err != nil {
		t.Fatalf("a task with reference/ must load: %v", err)
	}
	if with.Digest == without.Digest {
		t.Errorf("the digest does not cover reference/")
	}
	for name := range entries(t, with.Public().Files()) {
		if strings.Contains(name, "reference") || strings.Contains(name, "solution") {
			t.Errorf("the public view holds %s", name)
		}
	}
	var hidden bytes.Buffer
	if err := with.WriteHidden(t.Context(), &hidden); err != nil {
		t.Fatal(err)
	}
	for name := range entries(t, &hidden) {
		if !strings.HasPrefix(name, task.HiddenDir+"/") {
			t.Errorf("the judge's hidden files hold %s", name)
		}
	}
	if _, err := with.HiddenFile("../reference/solution.py"); err == nil {
		t.Errorf("HiddenFile reaches reference/")
	}
}
