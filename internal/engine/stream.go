package engine

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/volume"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/streamout"
)

// userSpaceKernel reports whether runtime runs sandboxes on a kernel of its
// own in user space (gVisor's runsc).
func userSpaceKernel(runtime string) bool { return runtime == "runsc" }

// newStreamVolume makes the host tmpfs that holds a StreamOut directory
// under gVisor. gVisor serves a container's --tmpfs mounts from its own
// kernel, whose tmpfs honours the size but not the inode count; a volume
// of the local driver's tmpfs type is mounted by the host and reached
// through gVisor's file server, so the host kernel enforces both, as it
// does for runc's tmpfs. It is labelled like every object of the run, so
// Leftovers and GC see it.
func (d *Docker) newStreamVolume(ctx context.Context, run, phase string, so StreamOut) (string, error) {
	vol := objectName(run, phase)
	cctx, cancel := d.cleanupCtx(ctx)
	defer cancel()
	_, err := d.cli.VolumeCreate(cctx, volume.CreateOptions{
		Name: vol, Driver: "local", Labels: labels(run, phase),
		DriverOpts: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": tmpfsOptions(so)},
	})
	if err != nil {
		return "", fmt.Errorf("engine: create stream-out volume: %w", err)
	}
	if err := ctx.Err(); err != nil {
		d.removeStreamVolume(ctx, vol)
		return "", err
	}
	return vol, nil
}

// removeStreamVolume removes a stream-out volume, if there is one, on a
// context that survives the caller's; GC reaps one that outlives this.
func (d *Docker) removeStreamVolume(ctx context.Context, vol string) {
	if vol == "" {
		return
	}
	cctx, cancel := d.cleanupCtx(ctx)
	defer cancel()
	if err := d.RemoveVolume(cctx, vol); err != nil {
		d.log.Warn("engine: remove stream-out volume", "volume", vol, "err", err)
	}
}

// tmpfsOptions are the mount options of a StreamOut tmpfs: capped in size
// and inodes, owned by the sandbox user, nothing executable or special.
func tmpfsOptions(so StreamOut) string {
	return fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,nr_inodes=%d,uid=%d,gid=%d,mode=0700",
		so.Bytes, so.Inodes, SandboxUID, SandboxUID)
}

// streamCommand wraps cmd in the stream-out wrapper.
func streamCommand(so StreamOut, cmd []string, pol firewall.Policy) []string {
	return streamout.Command(so, cmd, pol)
}

// streamCap is the most the wrapper writes for a tmpfs with these caps.
func streamCap(so StreamOut, pol firewall.Policy) int64 { return streamout.Cap(so, pol) }

// quotaPolicy narrows pol to the stream-out quota (streamout.QuotaPolicy).
func quotaPolicy(so StreamOut, pol firewall.Policy) firewall.Policy {
	return streamout.QuotaPolicy(so, pol)
}
