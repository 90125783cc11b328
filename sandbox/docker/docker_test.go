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
	// The backend finds sginit's image by recipe, as a controller does.
	if _, err := images.Ensure(ctx, d, images.Init(), os.Stderr); err != nil {
		return [2]string{}, err
	}
	python, err := images.Ensure(ctx, d, images.Python{}, os.Stderr)
	return [2]string{probe, python}, err
})

// TestDockerConforms runs the conformance suite against the Docker daemon
// named by the environment, with the OCI runtime $STRICTGRADE_RUNTIME names
// (the daemon's default when unset), configured as a controller uses it:
// trees through sginit and a pool of started sandboxes. Without a daemon,
// or with a runtime the daemon lacks, it fails: it never skips.
func TestDockerConforms(t *testing.T) {
	conforms(t, docker.Config{Pool: 2})
}

// TestDockerConformsWithoutInit runs the suite with trees laid out as
// read-only volumes, the path of a backend without sginit's image.
func TestDockerConformsWithoutInit(t *testing.T) {
	conforms(t, docker.Config{InitImage: "none"})
}

func conforms(t *testing.T, cfg docker.Config) {
	cfg.Runtime = os.Getenv("STRICTGRADE_RUNTIME")
	sandboxtest.Run(t, func(t *testing.T) sandboxtest.Target {
		imgs, err := suiteImages()
		if err != nil {
			t.Fatalf("the Docker conformance run needs a daemon and strictgrade's images: %v", err)
		}
		b, err := docker.New(t.Context(), cfg)
		if err != nil {
			t.Fatalf("the Docker conformance run needs a daemon: %v", err)
		}
		tg := sandboxtest.Target{Backend: b, Probe: imgs[0], Shell: imgs[1]}
		if b.Runtime() == "docker/runsc" {
			// gVisor's kernel runs in user space behind a host-side
			// filter: the guest sees no seccomp filter of its own.
			tg.Seccomp = "0"
			tg.UserSpaceKernel = true
		}
		return tg
	})
}
