package cli

import (
	"flag"
	"os"
)

// backendArgs chooses where sandboxes run: the flags every command that
// grades shares.
type backendArgs struct {
	runtime string
}

// register adds the backend flags to fs, defaulting from the environment.
func (b *backendArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&b.runtime, "runtime", os.Getenv("STRICTGRADE_RUNTIME"),
		"OCI runtime the Docker daemon runs sandboxes with, e.g. runsc for gVisor (default $STRICTGRADE_RUNTIME, else the daemon's default); refused when the daemon lacks it")
}
