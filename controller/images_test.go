package controller_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandboxtest"
)

// recorder is a backend that can find and build images by recipe, holds
// none, and counts what it is asked.
type recorder struct {
	sandbox.Backend
	finds, imports int
}

func (r *recorder) FindImage(context.Context, string, string) (engine.ImageInfo, bool, error) {
	r.finds++
	return engine.ImageInfo{}, false, nil
}

func (r *recorder) ImportImage(context.Context, io.Reader, engine.ImportSpec) (string, error) {
	r.imports++
	return "", errors.New("recorder builds nothing")
}

// TestNewResolvesAndNeverBuilds runs New with no go command on PATH: it
// finds images by recipe or takes them from Config, and a missing image
// is ErrImageMissing naming the build command, with nothing built.
func TestNewResolvesAndNeverBuilds(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	priv, _, err := attest.GenerateKey(attest.KeyECDSAP256, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := attest.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		runtime, judge string
		missing        string // the image named missing; "" for success
		finds          int
	}{
		{"nothing pinned", "", "", "python", 1},
		{"runtime pinned", sandboxtest.RuntimeImage, "", "judge", 1},
		{"both pinned", sandboxtest.RuntimeImage, sandboxtest.JudgeImage, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := sandboxtest.NewFake()
			runtimeID := fake.Image(sandboxtest.RuntimeImage, sandboxtest.Runtime(nil))
			judgeID := fake.Image(sandboxtest.JudgeImage, sandboxtest.Judge)
			b := &recorder{Backend: fake}
			ctrl, err := controller.New(t.Context(), controller.Config{Backend: b, Signer: signer, RuntimeImage: tt.runtime, JudgeImage: tt.judge})
			if b.imports != 0 {
				t.Errorf("New imported %d images", b.imports)
			}
			if b.finds != tt.finds {
				t.Errorf("New looked up %d images by recipe, want %d", b.finds, tt.finds)
			}
			if tt.missing != "" {
				if !errors.Is(err, controller.ErrImageMissing) {
					t.Fatalf("New: %v, want ErrImageMissing", err)
				}
				for _, want := range []string{"no " + tt.missing + " image", "strictgrade images build", "controller.BuildImages"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ctrl.Close()
			if ctrl.RuntimeImage() != runtimeID || ctrl.JudgeImage() != judgeID {
				t.Errorf("images %s, %s; want %s, %s", ctrl.RuntimeImage(), ctrl.JudgeImage(), runtimeID, judgeID)
			}
		})
	}
}
