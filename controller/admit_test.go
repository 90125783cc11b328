package controller_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/strictgrade/strictgrade/controller"
)

// TestAdmit: Admit returns exactly the bytes a Grade of the same
// submission binds its verdict to (Result.Archive), for a workspace, for
// a tar stream, for one the firewall rejects and for one missing its
// artifact, and refuses a submission of the other tier's form.
func TestAdmit(t *testing.T) {
	ctrl, _ := fakeController(t)
	tk := loadCopyTask(t)
	work := t.TempDir()
	writeFiles(t, work, map[string]string{"solution.py": copySource, "notes.txt": "not an artifact\n"})
	empty := t.TempDir()
	canonical, err := controller.Admit(t.Context(), tk, controller.Submission{Dir: work})
	if err != nil {
		t.Fatal(err)
	}
	for name, sub := range map[string]func() controller.Submission{
		"workspace": func() controller.Submission { return controller.Submission{Dir: work} },
		"archive":   func() controller.Submission { return controller.Submission{Archive: bytes.NewReader(canonical)} },
		"rejected archive": func() controller.Submission {
			return controller.Submission{Archive: bytes.NewReader(symlinkArchive(t))}
		},
		"missing artifact": func() controller.Submission { return controller.Submission{Dir: empty} },
	} {
		t.Run(name, func(t *testing.T) {
			got, err := controller.Admit(t.Context(), tk, sub())
			if err != nil {
				t.Fatal(err)
			}
			res, err := ctrl.Grade(t.Context(), tk, sub())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, res.Archive) || res.Verdict.Submission.SHA256 != sha256Hex(got) {
				t.Errorf("Admit gave %d bytes (sha256 %s); the grade bound %d (%s)", len(got), sha256Hex(got),
					len(res.Archive), res.Verdict.Submission.SHA256)
			}
		})
	}
	// A changed workspace admits other bytes.
	if err := os.WriteFile(filepath.Join(work, "solution.py"), []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := controller.Admit(t.Context(), tk, controller.Submission{Dir: work}); err != nil || bytes.Equal(changed, canonical) {
		t.Errorf("a changed workspace: %v, the same bytes %v", err, bytes.Equal(changed, canonical))
	}
	if _, err := controller.Admit(t.Context(), tk, controller.Submission{Diff: []byte{}}); !errors.Is(err, controller.ErrBadRequest) {
		t.Errorf("a diff for a strict task: %v, want ErrBadRequest", err)
	}
}

// BenchmarkAdmit measures admitting a one-file workspace, what a batch
// resume pays for each strict item it keeps.
func BenchmarkAdmit(b *testing.B) {
	tk := loadCopyTask(b)
	work := b.TempDir()
	writeFiles(b, work, map[string]string{"solution.py": copySource})
	for range b.N {
		if _, err := controller.Admit(b.Context(), tk, controller.Submission{Dir: work}); err != nil {
			b.Fatal(err)
		}
	}
}
