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
	"log/slog"
	"time"

	"github.com/strictgrade/strictgrade/internal/engine"
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
}

// New connects to the Docker daemon and runs the preflight: seccomp, the
// memory, swap and pids controllers and the runtime must be there, or the
// error wraps sandbox.ErrPreflight. Close the backend when done.
func New(ctx context.Context, cfg Config) (sandbox.Backend, error) {
	d, err := engine.NewDocker(ctx, engine.Config{Runtime: cfg.Runtime, CleanupTimeout: cfg.CleanupTimeout, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	return d, nil
}
