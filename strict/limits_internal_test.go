package strict

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strictgrade/strictgrade/candidate"
	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// maxOutputBytes is the largest limits.output_bytes a task may set
// (task-v1.json): the most one case's standard output, or a data case's
// output directory, or (a case per container) a function's record, may be.
const maxOutputBytes = 256 << 20

// TestOutputsArchiveAtLimits: at every limit's maximum (judge.MaxCases
// cases, each output as large as output_bytes allows), what reaches the
// judge is bounded by what the judge reads, whatever the task lets the
// candidate write: at most judge.MaxOutputsSize of candidate bytes, no file
// above the judge sandbox's file size limit, and a tree that takes at most
// half of the judge's memory (issue 29, item 3).
func TestOutputsArchiveAtLimits(t *testing.T) {
	// One buffer backs every output: only what is sent is ever touched.
	big := make([]byte, maxOutputBytes)
	const n = judge.MaxCases
	tests := []struct {
		kind  schema.TaskKind
		c     func(i int) judge.Case
		files func(i int) map[string][]byte
	}{{
		kind:  schema.KindCommand,
		c:     func(i int) judge.Case { return judge.Case{ID: "c" + strconv.Itoa(i), ExpectedStdout: new("x")} },
		files: func(int) map[string][]byte { return nil },
	}, {
		kind: schema.KindFunction,
		c:    func(i int) judge.Case { return judge.Case{ID: "c" + strconv.Itoa(i)} },
		files: func(i int) map[string][]byte {
			return map[string][]byte{judge.ValueFile: big[:size(i, maxOutputBytes)]}
		},
	}, {
		// Four expected files sharing the output directory's quota.
		kind: schema.KindData,
		c: func(i int) judge.Case {
			return judge.Case{ID: "c" + strconv.Itoa(i), ExpectedFiles: map[string]string{"a": "e", "b": "e", "c": "e", "d": "e"}}
		},
		files: func(i int) map[string][]byte {
			m := map[string][]byte{}
			for _, name := range []string{"a", "b", "c", "d"} {
				m[name] = big[:size(i, maxOutputBytes/4)]
			}
			return m
		},
	}}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			cases := make([]judge.Case, n)
			outs := &candidate.Outputs{Cases: make([]candidate.Case, n)}
			for i := range n {
				cases[i] = tt.c(i)
				outs.Cases[i] = candidate.Case{Record: candidate.Record{Exit: schema.ExitExited},
					Stdout: big[:size(i, maxOutputBytes)], Stderr: big[:64<<10], Files: tt.files(i)}
			}
			cs := &judge.Cases{Cases: cases}
			data, err := outputsArchive(outs, cs, tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			man, err := firewall.Filter(t.Context(), bytes.NewReader(data), io.Discard, judgePolicy)
			if err != nil {
				t.Fatalf("the judge's input refuses the outputs: %v", err)
			}
			var sent, largest int64
			for _, f := range man.Files {
				if !strings.HasSuffix(f.Path, "/"+judge.ResultFile) {
					sent += f.Size
				}
				largest = max(largest, f.Size)
			}
			g := &grade{task: &task.Task{Spec: task.Spec{Kind: tt.kind}, Cases: cs}}
			mem := g.judgeMemory()
			entries := int64(len(man.Files) + len(man.Dirs))
			// The hidden files the judge reads come on top, at most
			// judge.MaxHiddenSize and meta.json.
			tree := man.TotalBytes + judge.MaxHiddenSize + 1<<20 + entries*judgeFileMemory
			t.Logf("%d cases: %d candidate bytes sent, archive %d bytes, %d entries, largest file %d; judge memory %d MiB, tree at most %d MiB",
				n, sent, len(data), entries, largest, mem>>20, tree>>20)
			switch {
			case sent > judge.MaxOutputsSize:
				t.Errorf("%d candidate bytes reach the judge, more than the %d it reads", sent, judge.MaxOutputsSize)
			case sent < judge.MaxOutputsSize-judge.MaxFileSize:
				t.Errorf("%d candidate bytes reach the judge: the budget was not used", sent)
			case largest > sandbox.DefaultLimits.FileBytes:
				t.Errorf("a file of %d bytes, above the judge sandbox's file size limit", largest)
			case tree > mem/2:
				t.Errorf("a tree of up to %d bytes for a judge of %d bytes", tree, mem)
			}
		})
	}
}

// size is the size of case i's output at the limits: every third case
// exactly what the judge reads of a file, the others as large as the
// task allows.
func size(i int, most int) int {
	if i%3 == 0 {
		return min(judge.MaxFileSize, most)
	}
	return most
}

// TestOutputsArchiveIsInvisibleToJudge: the judge reads the outputs the
// candidate phase holds (candidateRequest's Hold and NoStdout) and
// outputsArchive sends exactly as it
// reads the outputs whole, sizes around what it reads of a file and of all
// outputs included, and decides the same verdict.
func TestOutputsArchiveIsInvisibleToJudge(t *testing.T) {
	const mib = 1 << 20
	fileMax := judge.MaxFileSize
	tests := []struct {
		name  string
		kind  schema.TaskKind
		cases string
		outs  []candidate.Case
	}{{
		name:  "command",
		kind:  schema.KindCommand,
		cases: `{"compare":{"kind":"exact"},"cases":[{"id":"a","expected_stdout":"x"},{"id":"b","expected_exit":0},{"id":"c","expected_stdout":"x"},{"id":"d","expected_stdout":"x"},{"id":"e","expected_stdout":"x"},{"id":"f","expected_stdout":"x"},{"id":"g","expected_stdout":"x"},{"id":"h","expected_stdout":"x"},{"id":"i","expected_stdout":"x"}]}`,
		outs: []candidate.Case{
			stdoutCase(fileMax + 1), // too large for a file: nothing charged
			stdoutCase(40 * mib),    // not read at all
			stdoutCase(fileMax),     // read whole: 48 MiB left
			stdoutCase(20 * mib),    // too large
			stdoutCase(fileMax),     // 32 MiB left
			stdoutCase(fileMax - 1), // 16 MiB + 1 left
			stdoutCase(fileMax + 2), // too large
			stdoutCase(fileMax),     // 1 byte left
			stdoutCase(1),           // read whole: the budget is spent
		},
	}, {
		name:  "data",
		kind:  schema.KindData,
		cases: `{"compare":{"kind":"exact"},"cases":[{"id":"a","expected_files":{"p":"e","q":"e","r":"e"}},{"id":"b","expected_files":{"p":"e","q":"e"}},{"id":"c","expected_files":{"p":"e","q":"e"}}]}`,
		outs: []candidate.Case{
			filesCase(map[string]int{"p": 1, "q": fileMax + 1, "r": 3, "junk": fileMax}), // q too large
			filesCase(map[string]int{"p": fileMax, "q": fileMax}),
			filesCase(map[string]int{"q": fileMax}), // p missing
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := judge.LoadCases([]byte(tt.cases), tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			outs := &candidate.Outputs{Cases: tt.outs}
			meta, err := json.Marshal(judge.Meta{Verdict: *judgeSkeleton(tt.kind), Kind: tt.kind})
			if err != nil {
				t.Fatal(err)
			}
			trusted := map[string][]byte{judge.MetaFile: meta, "hidden/cases.json": []byte(tt.cases), "hidden/e": []byte("x")}

			// Whole: every output as the candidate left it.
			whole := t.TempDir()
			for name, data := range trusted {
				put(t, whole, name, data)
			}
			for i, oc := range outs.Cases {
				dir := "outputs/" + strconv.Itoa(i) + "/"
				rr, _ := json.Marshal(runResult(oc.Record))
				put(t, whole, dir+judge.ResultFile, rr)
				put(t, whole, dir+judge.StdoutFile, oc.Stdout)
				for name, data := range oc.Files {
					put(t, whole, dir+judge.FilesDir+"/"+name, data)
				}
			}
			// Sent: what the candidate phase holds under the request
			// candidateRequest makes, as outputsArchive sends it.
			kept := holdOutputs(t, &task.Task{Spec: task.Spec{Kind: tt.kind}, Cases: cs}, tt.outs)
			data, err := outputsArchive(kept, cs, tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			cut := t.TempDir()
			for name, data := range trusted {
				put(t, cut, name, data)
			}
			untar(t, cut, data)

			want, err := judge.ReadInput(whole)
			if err != nil {
				t.Fatal(err)
			}
			got, err := judge.ReadInput(cut)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got.Outputs {
				if got.Outputs[i].Result != nil {
					got.Outputs[i].Result.TooLarge = nil
				}
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(bytes.Equal)); diff != "" {
				t.Errorf("the judge reads the sent outputs otherwise than the whole ones (-whole +sent):\n%s", diff)
			}
			vw, err := judge.Judge(want)
			if err != nil {
				t.Fatal(err)
			}
			vg, err := judge.Judge(got)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(vw, vg); diff != "" {
				t.Errorf("verdicts differ (-whole +sent):\n%s", diff)
			}
			t.Logf("%s: %v", vg.Outcome, caseLines(vg))
		})
	}
}

// holdOutputs is what a candidate phase under candidateRequest(tk) holds
// of outs (candidate.Request.Held).
func holdOutputs(t *testing.T, tk *task.Task, outs []candidate.Case) *candidate.Outputs {
	t.Helper()
	req, err := candidateRequest(tk)
	if err != nil {
		t.Fatal(err)
	}
	got := &candidate.Outputs{Cases: make([]candidate.Case, len(outs))}
	for i, oc := range outs {
		got.Cases[i] = req.Held(i, oc)
	}
	return got
}

func stdoutCase(n int) candidate.Case {
	return candidate.Case{Record: candidate.Record{Exit: schema.ExitExited}, Stdout: bytes.Repeat([]byte("x"), n)}
}

func filesCase(sizes map[string]int) candidate.Case {
	c := candidate.Case{Record: candidate.Record{Exit: schema.ExitExited}, Files: map[string][]byte{}}
	for name, n := range sizes {
		c.Files[name] = bytes.Repeat([]byte("x"), n)
	}
	return c
}

func caseLines(v *schema.Verdict) []string {
	var out []string
	for _, c := range v.Cases {
		out = append(out, c.ID+":"+string(c.Outcome)+":"+c.DecidedBy)
	}
	return out
}

// judgeSkeleton is a meta.json verdict as a grade writes it.
func judgeSkeleton(kind schema.TaskKind) *schema.Verdict {
	v := schema.New(schema.Task{ID: "limits", Digest: strings.Repeat("a1", 32), Kind: kind}, schema.TierStrict)
	v.RunID = "run-limits"
	v.Nonce = "bm9uY2UtZm9yLXRoZS1saW1pdHMtdGVzdA"
	v.Disclosure = schema.DisclosureDetailed
	v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: strings.Repeat("b2", 32), Size: 1}
	v.Images = schema.Images{Candidate: "sha256:" + strings.Repeat("d4", 32), Judge: "sha256:" + strings.Repeat("e5", 32)}
	v.Controller = schema.Controller{Version: "test", Runtime: "docker/runc"}
	return v
}

func put(t *testing.T, root, name string, data []byte) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// untar writes the regular files of an archive below root.
func untar(t *testing.T, root string, data []byte) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		put(t, root, h.Name, body)
	}
}

// TestJudgeMemory: the judge's memory depends on the task alone: 1 GiB for
// any task whose input tree has at most 32,768 entries, more in steps of
// 256 MiB for one with more (4,096 data cases expecting 100 files each),
// never above what a sandbox may ask for.
func TestJudgeMemory(t *testing.T) {
	data := func(cases, files int) *judge.Cases {
		cs := &judge.Cases{Cases: make([]judge.Case, cases)}
		for i := range cs.Cases {
			cs.Cases[i].ExpectedFiles = map[string]string{}
			for f := range files {
				cs.Cases[i].ExpectedFiles["f"+strconv.Itoa(f)] = "e"
			}
		}
		return cs
	}
	for _, tt := range []struct {
		name string
		kind schema.TaskKind
		cs   *judge.Cases
		want int64
	}{
		{"one case", schema.KindCommand, &judge.Cases{Cases: make([]judge.Case, 1)}, 1 << 30},
		{"the most cases", schema.KindFunction, &judge.Cases{Cases: make([]judge.Case, judge.MaxCases)}, 1 << 30},
		{"the most cases, 4 files each", schema.KindData, data(judge.MaxCases, 4), 1 << 30},
		{"the most cases, 100 files each", schema.KindData, data(judge.MaxCases, 100), 1<<30 + 13*(256<<20)},
		{"more files than any memory", schema.KindData, data(1024, 2100), sandbox.MaxLimits.MemoryBytes},
	} {
		g := &grade{task: &task.Task{Spec: task.Spec{Kind: tt.kind}, Cases: tt.cs}}
		if got := g.judgeMemory(); got != tt.want {
			t.Errorf("%s: %d MiB, want %d MiB", tt.name, got>>20, tt.want>>20)
		}
	}
}
