// Package docker is the Docker backend of package sandbox, for harnesses
// that build on strictgrade from their own module: New connects to the
// daemon named by the environment (DOCKER_HOST or the default socket) and
// checks that it can apply the hardened profile. Every container is made by
// strictgrade's one Docker door (ADR 0005): a non-root user, no
// capabilities, no network, a read-only root, limits checked after create,
// and archives through the firewall both ways.
package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/sandbox"
)

// Config configures the Docker backend. The zero value is usable.
type Config struct {
	// Runtime is the OCI runtime to require and use ("runsc" for
	// gVisor); empty means the daemon's default runtime.
	Runtime string
	// CleanupTimeout bounds each removal on the way out; zero means 30s.
	CleanupTimeout time.Duration
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
	// InitImage names the image holding sginit, the trusted init that
	// lays a spec's trees out from the sandbox's standard input (ADR
	// 0013). Empty finds the one this build expects by its recipe (built
	// by `strictgrade images build`); when it is missing, or with "none",
	// trees become read-only volumes instead: slower, equally strict.
	InitImage string
	// Pool is how many started, never-used sandboxes the backend keeps
	// ready per shape of spec, for specs with trees under sginit; zero
	// keeps none. A pooled sandbox is used once or discarded.
	Pool int
	// PoolMaxIdle is how long a pooled sandbox may wait before it is
	// discarded unused; zero means two minutes.
	PoolMaxIdle time.Duration
}

// New connects to the Docker daemon and runs the preflight: seccomp, the
// memory, swap and pids controllers and the runtime must be there, or the
// error wraps sandbox.ErrPreflight. Close the backend when done.
func New(ctx context.Context, cfg Config) (sandbox.Backend, error) {
	d, err := engine.NewDocker(ctx, engine.Config{
		Runtime: cfg.Runtime, CleanupTimeout: cfg.CleanupTimeout, Logger: cfg.Logger,
		Pool: cfg.Pool, PoolMaxIdle: cfg.PoolMaxIdle,
	})
	if err != nil {
		return nil, err
	}
	var id string
	switch cfg.InitImage {
	case "none":
	case "":
		id, err = images.Resolve(ctx, d, images.Init())
		if errors.Is(err, images.ErrMissing) {
			id, err = "", nil
		}
	default:
		id, err = d.ImageID(ctx, cfg.InitImage)
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("docker: init image: %w", err)
	}
	d.UseInit(id)
	return d, nil
}
