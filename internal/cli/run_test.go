package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/internal/cli"
	"github.com/strictgrade/strictgrade/internal/testtree"
	"github.com/strictgrade/strictgrade/sandboxtest"
)

const copySource = "import shutil\nshutil.copy('/input/in.txt', '/output/out.txt')\n"

func writeTree(t *testing.T, dir string, files map[string]string) { testtree.Write(t, dir, files) }

// TestRunUsage: a malformed items file, an unknown task or a resume
// without the key is a usage error, refused before any daemon is needed.
func TestRunUsage(t *testing.T) {
	dir := t.TempDir()
	sum := filepath.Join("..", "..", "examples", "sum", "task")
	writeTree(t, dir, map[string]string{
		"bad.jsonl":     "{\"task\":\"sum\",\"submission\":\"s\"}\n{\"task\":\n",
		"unknown.jsonl": "{\"task\":\"nope\",\"submission\":\"s\"}\n",
		"good.jsonl":    "{\"task\":\"sum\",\"submission\":\"s\"}\n",
		"s/solution.py": "x\n",
		"old/key.pub":   "x\n",
		// A run directory of f7459a3's layout: no run.json.
		"older/results.jsonl": "{}\n",
	})
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "required"},
		{[]string{"run", "--items", filepath.Join(dir, "bad.jsonl"), "--tasks", sum, "--out", filepath.Join(dir, "o")}, "line 2"},
		{[]string{"run", "--items", filepath.Join(dir, "good.jsonl"), "--tasks", sum, "--out", filepath.Join(dir, "o"), "--max-errors", "lots"}, "max-errors"},
		{[]string{"run", "--items", filepath.Join(dir, "good.jsonl"), "--tasks", sum + "," + sum, "--out", filepath.Join(dir, "o")}, "task id"},
		{[]string{"run", "--items", filepath.Join(dir, "good.jsonl"), "--tasks", sum, "--out", filepath.Join(dir, "old")}, "needs --key"},
		{[]string{"run", "--items", filepath.Join(dir, "good.jsonl"), "--tasks", sum, "--out", filepath.Join(dir, "older"), "--key", filepath.Join(dir, "old", "key.pub")}, "grade into a new --out"},
		{[]string{"run", "--items", filepath.Join(dir, "good.jsonl"), "--tasks", sum, "--out", filepath.Join(dir, "o"), "--parallel", "0"}, "parallel"},
	} {
		code, _, stderr := run(t, tt.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, want %d and %q in:\n%s", tt.args, code, cli.ExitUsage, tt.want, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "o")); err == nil {
		t.Error("a refused run made its --out")
	}
}

// TestVerifyRun: verify --run passes a run as graded, and fails (exit 1)
// one with a tampered bundle or submission, naming the item.
func TestVerifyRun(t *testing.T) {
	root, out, pub := gradedRun(t)

	code, stdout, stderr := run(t, "verify", "--run", out, "--key", pub)
	if code != cli.ExitOK || !strings.Contains(stdout, "3 items: 3 verified") {
		t.Fatalf("untouched run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// OUT/key.pub is the run's public key.
	if code, _, stderr := run(t, "verify", "--run", out, "--key", filepath.Join(out, batch.KeyFile)); code != cli.ExitOK {
		t.Errorf("with OUT/key.pub: exit %d\n%s", code, stderr)
	}

	sub := filepath.Join(out, "items", batch.SafeID("h"), batch.SubmissionFile)
	data, err := os.ReadFile(sub)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(sub, data, 0o644); err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(out, "items", batch.SafeID("w"), batch.BundleFile)
	other, err := os.ReadFile(filepath.Join(out, "items", batch.SafeID("h2"), batch.BundleFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, other, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(t, "verify", "--run", out, "--key", pub)
	if code != cli.ExitFail || !strings.Contains(stdout, "1 verified, 2 not verified") ||
		!regexpMatch(`(?m)^h +copy +PASS +NO: `, stdout) || !regexpMatch(`(?m)^w +copy +FAIL +NO: `, stdout) || !regexpMatch(`(?m)^h2 +copy +PASS +yes$`, stdout) {
		t.Fatalf("tampered run: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// Item w's line edited to name h2's verdict: w and h2 fail, each
	// naming the bundle both claim.
	res := filepath.Join(out, batch.ResultsFile)
	lines, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	var edited []string
	var h2 string
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		if strings.HasPrefix(l, `{"item":"h2"`) {
			h2 = l
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		if strings.HasPrefix(l, `{"item":"w"`) {
			l = strings.Replace(h2, `"item":"h2"`, `"item":"w"`, 1)
		}
		edited = append(edited, l)
	}
	if err := os.WriteFile(res, []byte(strings.Join(edited, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(t, "verify", "--run", out, "--key", pub)
	if code != cli.ExitFail || !strings.Contains(stdout, "0 verified, 3 not verified") ||
		!regexpMatch(`(?m)^w +copy +PASS +NO: .*backs items ("w" and "h2"|"h2" and "w")`, stdout) {
		t.Fatalf("edited results.jsonl: exit %d\n%s\n%s", code, stdout, stderr)
	}

	for _, args := range [][]string{
		{"verify", "--run", out},
		{"verify", "--run", out, "--key", pub, "--bundle", w},
		{"verify", "--run", out, "--key", pub, "--tier", "strict"},
	} {
		if code, _, _ := run(t, args...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, cli.ExitUsage)
		}
	}
	if code, _, _ := run(t, "verify", "--run", root, "--key", pub); code != cli.ExitError {
		t.Errorf("a directory without results.jsonl: exit %d, want %d", code, cli.ExitError)
	}
	// f7459a3's layout, without run.json: its verdicts name no item.
	if err := os.Remove(filepath.Join(out, batch.RunFile)); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "verify", "--run", out, "--key", pub); code != cli.ExitError || !strings.Contains(stderr, batch.RunFile) {
		t.Errorf("a run directory without %s: exit %d, want %d\n%s", batch.RunFile, code, cli.ExitError, stderr)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// gradedRun grades three items of a copy task with the fake engine into
// root/out and returns root, the run directory and the public key's file.
func gradedRun(t *testing.T) (root, out, pub string) {
	t.Helper()
	root = t.TempDir()
	writeTree(t, root, map[string]string{
		"tasks/copy/task.json": `{"schema":"strictgrade.task/v1","id":"copy","version":"1","kind":"data","runtime":"python",
			"data":{"argv":["python3","solution.py"]},"artifacts":["solution.py"]}`,
		"tasks/copy/public/README.md":  "copy /input/in.txt to /output/out.txt\n",
		"tasks/copy/hidden/cases.json": `{"cases":[{"id":"a","input_files":{"in.txt":"in/a.txt"},"expected_files":{"out.txt":"want/a.txt"}}]}`,
		"tasks/copy/hidden/in/a.txt":   "x\n",
		"tasks/copy/hidden/want/a.txt": "x\n",
		"honest/solution.py":           copySource,
		"wrong/solution.py":            "print('no')\n",
		"items.jsonl":                  "{\"id\":\"h\",\"task\":\"copy\",\"submission\":\"honest\"}\n{\"id\":\"w\",\"task\":\"copy\",\"submission\":\"wrong\"}\n{\"id\":\"h2\",\"task\":\"copy\",\"submission\":\"honest\"}\n",
	})
	fake := sandboxtest.NewFake()
	fake.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(map[string]sandboxtest.Python{copySource: {Main: func(p *sandboxtest.Proc) int {
		data, err := p.ReadFile("/input/in.txt")
		if err == nil {
			err = p.WriteFile("/output/out.txt", data, 0o644)
		}
		if err != nil {
			return 1
		}
		return 0
	}}}))
	fake.Image(sandboxtest.JudgeImage, sandboxtest.Judge)
	priv, pubPEM, err := attest.GenerateKey(attest.KeyEd25519, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := controller.New(t.Context(), controller.Config{Backend: fake, Signer: signer,
		RuntimeImage: sandboxtest.RuntimeImage, JudgeImage: sandboxtest.JudgeImage})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	items, err := batch.ReadItems(filepath.Join(root, "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := batch.LoadTasks(t.Context(), []string{filepath.Join(root, "tasks")})
	if err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(root, "out")
	if _, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: items, Tasks: tasks, Out: out}); err != nil {
		t.Fatal(err)
	}
	pub = filepath.Join(root, "key.pub")
	if err := os.WriteFile(pub, pubPEM, 0o644); err != nil {
		t.Fatal(err)
	}

	return root, out, pub
}

// TestReport: report writes a run directory's results.md and report.html
// again, counts the items that do not verify with the key given, and
// refuses a directory that is not a run's.
func TestReport(t *testing.T) {
	root, out, _ := gradedRun(t)
	for _, f := range []string{batch.ReportMarkdown, batch.ReportHTML} {
		if err := os.Remove(filepath.Join(out, f)); err != nil {
			t.Fatalf("the run wrote no %s: %v", f, err)
		}
	}
	code, stdout, stderr := run(t, "report", out)
	if code != cli.ExitOK || stdout != filepath.Join(out, batch.ReportMarkdown)+"\n"+filepath.Join(out, batch.ReportHTML)+"\n" {
		t.Fatalf("report: exit %d\n%s\n%s", code, stdout, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, batch.ReportMarkdown))
	if err != nil || !strings.Contains(string(md), "| copy | strict | 3 | 2 | 1 | 0 | 0 | 66.7% |") {
		t.Errorf("results.md: %v\n%s", err, md)
	}
	// Verified with another key, no item verifies.
	_, otherPEM, err := attest.GenerateKey(attest.KeyEd25519, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "other.pub")
	writeTree(t, root, map[string]string{"other.pub": string(otherPEM)})
	if code, _, stderr := run(t, "report", "--key", other, out); code != cli.ExitOK {
		t.Fatalf("report --key: exit %d\n%s", code, stderr)
	}
	if md, _ := os.ReadFile(filepath.Join(out, batch.ReportMarkdown)); !strings.Contains(string(md), "**3 of the items do not verify**") {
		t.Errorf("results.md with another key:\n%s", md)
	}
	for _, args := range [][]string{{"report"}, {"report", root}, {"report", out, out}, {"report", "--key", filepath.Join(root, "nope"), out}} {
		if code, _, _ := run(t, args...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, cli.ExitUsage)
		}
	}
	// A run directory without run.json (f7459a3's layout).
	if err := os.Remove(filepath.Join(out, batch.RunFile)); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "report", out); code != cli.ExitUsage || !strings.Contains(stderr, batch.RunFile) {
		t.Errorf("a run directory without %s: exit %d, want %d\n%s", batch.RunFile, code, cli.ExitUsage, stderr)
	}
}
