//go:build engine

package docker_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/sandbox/docker"
	"github.com/strictgrade/strictgrade/sandboxtest"
)

// The images the suite runs, made once (built only when missing).
var suiteImages = sync.OnceValues(func() ([2]string, error) {
	ctx := context.Background()
	d, err := engine.NewDocker(ctx, engine.Config{})
	if err != nil {
		return [2]string{}, err
	}
	defer d.Close()
	probe, err := images.Ensure(ctx, d, images.Probe(), os.Stderr)
	if err != nil {
		return [2]string{}, err
	}
	python, err := images.Ensure(ctx, d, images.Python{}, os.Stderr)
	return [2]string{probe, python}, err
})

// TestDockerConforms runs the conformance suite against the Docker daemon
// named by the environment. Without one it fails: it never skips.
func TestDockerConforms(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) sandboxtest.Target {
		imgs, err := suiteImages()
		if err != nil {
			t.Fatalf("the Docker conformance run needs a daemon and strictgrade's images: %v", err)
		}
		b, err := docker.New(t.Context(), docker.Config{})
		if err != nil {
			t.Fatalf("the Docker conformance run needs a daemon: %v", err)
		}
		return sandboxtest.Target{Backend: b, Probe: imgs[0], Shell: imgs[1]}
	})
}
