package controller

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/sandbox"
	"github.com/strictgrade/strictgrade/sandbox/docker"
)

// ErrImageMissing is wrapped by New's error when the runtime or judge image
// with the recipe this build expects is not on the backend. BuildImages or
// `strictgrade images build` builds it; Config.RuntimeImage and
// Config.JudgeImage name images from elsewhere.
var ErrImageMissing = errors.New("controller: image missing")

// BuildImages builds the runtime and judge images New resolves, when
// missing, on b (nil: Docker from the environment), reporting progress to
// progress (nil discards it). It is the explicit build step New never
// takes: the judge is compiled from this module's source with the Go
// toolchain, and the Python runtime is made with debootstrap, which needs
// root and the debootstrap command on this host (apt-get install
// debootstrap).
func BuildImages(ctx context.Context, b sandbox.Backend, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	if b == nil {
		d, err := docker.New(ctx, docker.Config{})
		if err != nil {
			return err
		}
		defer d.Close()
		b = d
	}
	s, ok := b.(images.Store)
	if !ok {
		return fmt.Errorf("controller: the %s backend cannot build images", b.Runtime())
	}
	for _, img := range []images.Image{images.Python{}, images.Judge(), images.Init()} {
		if _, err := images.Ensure(ctx, s, img, progress); err != nil {
			return err
		}
	}
	return nil
}
