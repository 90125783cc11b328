package controller_test

import (
	"context"
	"testing"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/internal/testtree"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// copySource is a data task's solution: it copies its input file to its
// output file. The fake runs copyProgram wherever a submission has this
// text.
const copySource = "import shutil\nshutil.copy('/input/in.txt', '/output/out.txt')\n"

func copyProgram(p *sandboxtest.Proc) int {
	data, err := p.ReadFile("/input/in.txt")
	if err == nil {
		err = p.WriteFile("/output/out.txt", data, 0o644)
	}
	if err != nil {
		p.Errorf("%v", err)
		return 1
	}
	return 0
}

// writeFiles lays files out under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) { testtree.Write(t, dir, files) }

// TestGradeUsesTheLoadedTask: the strict tier grades the task as Load read
// it. A data task's input file and expected file change on disk after
// Load; grading the loaded task still reads the loaded content for both
// the candidate's input and the judge's hidden files, and its verdict
// carries the loaded digest. Loading again takes the change, and another
// digest.
func TestGradeUsesTheLoadedTask(t *testing.T) {
	ctx := t.Context()
	fake := sandboxtest.NewFake()
	fake.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(map[string]sandboxtest.Python{copySource: {Main: copyProgram}}))
	fake.Image(sandboxtest.JudgeImage, sandboxtest.Judge)
	priv, _, err := attest.GenerateKey(attest.KeyEd25519, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := controller.New(ctx, controller.Config{Backend: fake, Signer: signer,
		RuntimeImage: sandboxtest.RuntimeImage, JudgeImage: sandboxtest.JudgeImage})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()

	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"task.json": `{"schema":"strictgrade.task/v1","id":"copy","version":"1","kind":"data","runtime":"python",
			"data":{"argv":["python3","solution.py"]},"artifacts":["solution.py"]}`,
		"public/README.md":  "copy /input/in.txt to /output/out.txt\n",
		"hidden/cases.json": `{"cases":[{"id":"a","input_files":{"in.txt":"in/a.txt"},"expected_files":{"out.txt":"want/a.txt"}}]}`,
		"hidden/in/a.txt":   "loaded\n",
		"hidden/want/a.txt": "loaded\n",
	})
	loaded, err := task.Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Re-reading either file at grade time would make the copy fail.
	writeFiles(t, dir, map[string]string{"hidden/in/a.txt": "changed input\n", "hidden/want/a.txt": "changed expected\n"})
	reloaded, err := task.Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if reloaded.Digest == loaded.Digest {
		t.Fatal("the changed task has the loaded digest")
	}
	work := t.TempDir()
	writeFiles(t, work, map[string]string{"solution.py": copySource})

	for _, tt := range []struct {
		name string
		tk   *task.Task
		want schema.Outcome
	}{
		{"loaded before the change", loaded, schema.OutcomePass},
		{"loaded after the change", reloaded, schema.OutcomeFail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ctrl.Grade(ctx, tt.tk, controller.Submission{Dir: work})
			if err != nil {
				t.Fatal(err)
			}
			v := res.Verdict
			if v.Outcome != tt.want {
				t.Errorf("%s (%s: %s), want %s", v.Outcome, v.ReasonCode, v.Reason, tt.want)
			}
			if v.Task.Digest != tt.tk.Digest {
				t.Errorf("verdict task digest %s, the graded task's %s", v.Task.Digest, tt.tk.Digest)
			}
			if _, err := attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
				SubmissionSHA256: v.Submission.SHA256, TaskDigest: tt.tk.Digest, Tier: schema.TierStrict, Nonce: v.Nonce,
			}); err != nil {
				t.Errorf("bundle does not verify against the graded task's digest: %v", err)
			}
			if left, err := fake.Leftovers(context.Background(), v.RunID); err != nil || len(left) > 0 {
				t.Errorf("leftovers %v, %v", left, err)
			}
		})
	}
}
