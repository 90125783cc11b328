package engine

import (
	"context"
	_ "embed"
	"fmt"
	"path"
	"strconv"

	"github.com/docker/docker/api/types/volume"

	"github.com/strictgrade/strictgrade/firewall"
)

// streamScript is the wrapper that runs a StreamOut command and writes its
// directory on standard output (see StreamOut and the script's header).
//
//go:embed streamout.py
var streamScript string

// tmpfsOptions are the mount options of a StreamOut tmpfs: capped in size
// and inodes, owned by the sandbox user, nothing executable or special.
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

func tmpfsOptions(so StreamOut) string {
	return fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,nr_inodes=%d,uid=%d,gid=%d,mode=0700",
		so.Bytes, so.Inodes, SandboxUID, SandboxUID)
}

// pathBounds returns the name length and depth beyond which the firewall
// rejects an entry under pol; the wrapper stops there.
func pathBounds(pol firewall.Policy) (maxName, maxDepth int) {
	maxName, maxDepth = pol.MaxNameLen, pol.MaxDepth
	if maxName <= 0 {
		maxName = firewall.DefaultMaxNameLen
	}
	if maxDepth <= 0 {
		maxDepth = firewall.DefaultMaxDepth
	}
	return min(maxName, firewall.CeilingMaxNameLen), min(maxDepth, firewall.CeilingMaxDepth)
}

// streamCommand wraps cmd in the stream-out wrapper.
func streamCommand(so StreamOut, cmd []string, pol firewall.Policy) []string {
	maxName, maxDepth := pathBounds(pol)
	return append([]string{"python3", "-I", "-c", streamScript,
		so.Dir, path.Base(so.Dir), strconv.Itoa(maxName), strconv.Itoa(maxDepth)}, cmd...)
}

// streamCap is the most the wrapper writes for a tmpfs with these caps. Every
// entry it writes but the last is a distinct inode of the tmpfs; an entry
// costs at most a PAX header block, a path record of at most the cut name
// (the name bound plus a few bytes and the record's framing) rounded up to
// a block, a USTAR header block and the padding of its data; the data of
// the regular files, none of them sparse, fits in the tmpfs's size; and
// the archive ends with two zero blocks.
// quotaPolicy narrows pol to the stream-out quota so: no more entries than
// the quota's inodes and no more bytes than its size. Where the runtime's
// tmpfs enforces the quota (runc) this refuses nothing new; where it does
// not count inodes (gVisor's tmpfs), a tree over the quota leaves as an
// archive the firewall refuses.
func quotaPolicy(so StreamOut, pol firewall.Policy) firewall.Policy {
	if pol.MaxEntries == 0 || int64(pol.MaxEntries) > so.Inodes {
		pol.MaxEntries = int(so.Inodes)
	}
	if pol.MaxTotalBytes == 0 || pol.MaxTotalBytes > so.Bytes {
		pol.MaxTotalBytes = so.Bytes
	}
	return pol
}

func streamCap(so StreamOut, pol firewall.Policy) int64 {
	const block = 512
	maxName, _ := pathBounds(pol)
	record := (int64(maxName) + 64 + block - 1) / block * block
	perEntry := 3*block + record
	return so.Bytes + (so.Inodes+1)*perEntry + 2*block
}
