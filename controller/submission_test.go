package controller_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"testing"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/sandboxtest"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// loadCopyTask writes the copy task of TestGradeUsesTheLoadedTask and loads it.
func loadCopyTask(t testing.TB) *task.Task {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"task.json": `{"schema":"strictgrade.task/v1","id":"copy","version":"1","kind":"data","runtime":"python",
			"data":{"argv":["python3","solution.py"]},"artifacts":["solution.py"]}`,
		"public/README.md":  "copy /input/in.txt to /output/out.txt\n",
		"hidden/cases.json": `{"cases":[{"id":"a","input_files":{"in.txt":"in/a.txt"},"expected_files":{"out.txt":"want/a.txt"}}]}`,
		"hidden/in/a.txt":   "x\n",
		"hidden/want/a.txt": "x\n",
	})
	tk, err := task.Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func fakeController(t *testing.T) (*controller.Controller, *attest.Signer) {
	t.Helper()
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
	ctrl, err := controller.New(t.Context(), controller.Config{Backend: fake, Signer: signer,
		RuntimeImage: sandboxtest.RuntimeImage, JudgeImage: sandboxtest.JudgeImage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close() })
	return ctrl, signer
}

// symlinkArchive is a tar stream the firewall rejects.
func symlinkArchive(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "solution.py", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSubmissionNonce: a caller's well-formed nonce is the verdict's, a
// malformed one is refused before anything runs, none gets a fresh one.
func TestSubmissionNonce(t *testing.T) {
	ctrl, _ := fakeController(t)
	tk := loadCopyTask(t)
	work := t.TempDir()
	writeFiles(t, work, map[string]string{"solution.py": copySource})
	issued := schema.NewNonce()
	for _, tt := range []struct {
		name, nonce string
		refused     bool
	}{
		{"issued by the caller", issued, false},
		{"none", "", false},
		{"too short", "abc", true},
		{"not base64url", "nonce with spaces and more", true},
		{"too long", string(bytes.Repeat([]byte("a"), 129)), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ctrl.Grade(t.Context(), tk, controller.Submission{Dir: work, Nonce: tt.nonce})
			if tt.refused {
				if res != nil || !errors.Is(err, controller.ErrBadRequest) || errors.Is(err, controller.ErrCouldNotGrade) {
					t.Fatalf("got %v, %v; want a refusal", res, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := res.Verdict.Nonce
			if tt.nonce != "" && got != tt.nonce || tt.nonce == "" && (got == "" || got == issued) {
				t.Errorf("verdict nonce %q for a request with %q", got, tt.nonce)
			}
		})
	}
}

// TestRejectedArchiveIsReturned: when the firewall rejects a submission,
// Result.Archive holds the presented bytes, and the signed FAIL verifies
// against them.
func TestRejectedArchiveIsReturned(t *testing.T) {
	ctrl, signer := fakeController(t)
	tk := loadCopyTask(t)
	presented := symlinkArchive(t)
	res, err := ctrl.Grade(t.Context(), tk, controller.Submission{Archive: bytes.NewReader(presented)})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verdict
	if v.Outcome != schema.OutcomeFail || v.ReasonCode != schema.ReasonRejectedArtifact {
		t.Fatalf("verdict %s %s, want a rejection", v.Outcome, v.ReasonCode)
	}
	if !bytes.Equal(res.Archive, presented) {
		t.Fatalf("Result.Archive is %d bytes, not the %d presented", len(res.Archive), len(presented))
	}
	if _, err := attest.Verify(res.Signed.Bundle, signer.PublicKey(), attest.Expect{
		SubmissionSHA256: sha256Hex(res.Archive), Tier: schema.TierStrict, Nonce: v.Nonce,
	}); err != nil {
		t.Errorf("the signed FAIL does not verify against Result.Archive: %v", err)
	}
}

// TestZeroController: a Controller not made by New fails at once.
func TestZeroController(t *testing.T) {
	tk := loadCopyTask(t)
	var c controller.Controller
	res, err := c.Grade(t.Context(), tk, controller.Submission{Dir: t.TempDir()})
	if res != nil || !errors.Is(err, controller.ErrCouldNotGrade) {
		t.Fatalf("got %v, %v; want ErrCouldNotGrade", res, err)
	}
}
