package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/strslice"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/initproto"
)

// A spec with trees runs under sginit when the backend has its image
// (Config.InitImage; ADR 0013). The container starts as root holding only
// these capabilities; sginit lays the trees out, drops them for good and
// becomes the sandbox user before it executes the command.
var initCaps = strslice.StrSlice{"CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID"}

// MountPointDirs and MountPointFiles are the paths the daemon and the
// runtime mount over in every sandbox under sginit: sginit's directory and
// the daemon's init binary (HostConfig.Init). A runtime image that holds
// them (an empty directory, an empty file) spares every container making
// them in its own writable layer, which on a fuse-overlayfs daemon costs a
// copy-up of their parents and new inodes on the daemon's disk (ADR 0016).
// Images without them work the same.
var (
	MountPointDirs  = []string{initMount}
	MountPointFiles = []string{"/sbin/docker-init"}
)

// initUser is the user the container starts as under sginit.
const initUser = "0:0"

// initMount is where the read-only volume holding sginit is mounted, and
// initPath the binary in it.
const (
	initMount = "/.sginit"
	initPath  = initMount + "/sginit"
)

// UseInit sets the image holding sginit (Config.InitImage); call it before
// the backend is used. Empty turns sginit off.
func (d *Docker) UseInit(image string) {
	d.cfg.InitImage = image
	if image == "" {
		return
	}
	// The sginit volume is found (or made) now, in the background, so
	// that the first sandbox does not wait for it (initVolume serialises
	// callers; one that finds it failed tries again and reports the
	// error).
	d.initWG.Add(1)
	go func() {
		defer d.initWG.Done()
		ctx, cancel := d.cleanupCtx(context.Background())
		defer cancel()
		if _, err := d.initVolume(ctx); err != nil {
			d.log.Warn("engine: making the sginit volume ahead of time", "err", err)
		}
	}()
}

// usesInit reports whether spec's trees go through sginit.
func (d *Docker) usesInit(spec Spec) bool { return len(spec.Trees) > 0 && d.cfg.InitImage != "" }

// sginitKind is the sginit volumes' kind (the prefix is the backend's).
func (d *Docker) sginitKind() volumeKind {
	return volumeKind{what: "sginit", label: LabelSginit, markerLabel: labelSginitVolume, prefix: d.sginitPrefix}
}

// initVolume returns the volume holding the sginit binary for the
// backend's init image: the daemon's shared one when its marker names a
// volume that exists, else a new one, filled and then published.
func (d *Docker) initVolume(ctx context.Context) (string, error) {
	d.initM.Lock()
	defer d.initM.Unlock()
	if d.initVol != "" {
		return d.initVol, nil
	}
	began := time.Now()
	img, err := d.cli.ImageInspect(ctx, d.cfg.InitImage)
	if err != nil {
		return "", fmt.Errorf("engine: the init image %s: %w", d.cfg.InitImage, err)
	}
	digest, ok := strings.CutPrefix(img.ID, "sha256:")
	if !ok || len(digest) < 24 {
		return "", fmt.Errorf("engine: the init image has an unexpected ID %q", img.ID)
	}
	kind := d.sginitKind()
	// A never-started container of the init image mounts the empty
	// volume over /bin; the daemon fills it with the image's /bin
	// (root's, mode 0755).
	vol, err := d.imageVolume(ctx, kind, kind.prefix+digest[:24], img.ID, "/bin", []string{"/bin/sginit"})
	if err != nil {
		return "", err
	}
	d.initVol = vol
	d.log.Debug("engine: sginit volume ready", "volume", vol, "ms", time.Since(began).Milliseconds())
	return vol, nil
}

// initArgv is the command the frame carries: the spec's, wrapped for
// StreamOut as the container's command would be without sginit.
func initArgv(s Spec) []string {
	if s.StreamOut != nil {
		return streamCommand(*s.StreamOut, s.Cmd, s.CollectPolicy)
	}
	return slices.Clone(s.Cmd)
}

// withInit turns a hardened configuration into its sginit form: started as
// root with initCaps, sginit as the entrypoint, an empty tmpfs per tree
// (charged to the memory limit, at most that large), the sginit volume
// read-only, standard input open for the frame. The command travels in
// the frame, so the configuration depends on the spec's shape only, which
// is what lets a pool start it ahead of time.
//
// A shared directory of the image (shared.go) is mounted read-only from
// its volume once that exists; until then (and in a shape's key) nothing
// is mounted, and the image's own copy is read through the root
// filesystem, the same files.
func withInit(cfg *container.Config, hc *container.HostConfig, s Spec, l Limits, vol string, idle time.Duration, share sharedDir) {
	dirs := make([]string, len(s.Trees))
	for i, t := range s.Trees {
		dirs[i] = t.Dir
		hc.Tmpfs[t.Dir] = fmt.Sprintf("rw,nosuid,nodev,exec,size=%d,mode=0755", l.MemoryBytes)
	}
	cfg.User = initUser
	cfg.Entrypoint = strslice.StrSlice{initPath, "-dirs", strings.Join(dirs, ","), "-idle", idle.String()}
	cfg.Cmd = nil
	cfg.AttachStdin, cfg.OpenStdin, cfg.StdinOnce = true, true, true
	// The daemon would give root's HOME; the sandbox user's is "/".
	if !slices.ContainsFunc(cfg.Env, func(e string) bool { return strings.HasPrefix(e, "HOME=") }) {
		cfg.Env = append(cfg.Env, "HOME=/")
	}
	hc.CapAdd = slices.Clone(initCaps)
	hc.Mounts = append(hc.Mounts, mount.Mount{
		Type: mount.TypeVolume, Source: vol, Target: initMount, ReadOnly: true,
		VolumeOptions: &mount.VolumeOptions{NoCopy: true},
	})
	if share.dir != "" && share.vol != "" {
		hc.Mounts = append(hc.Mounts, mount.Mount{
			Type: mount.TypeVolume, Source: share.vol, Target: share.dir, ReadOnly: true,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true},
		})
	}
}

// initFrame returns the trees of s as initproto wants them.
func initTrees(s Spec) []initproto.Tree {
	out := make([]initproto.Tree, len(s.Trees))
	for i, t := range s.Trees {
		out[i] = initproto.Tree{Dir: t.Dir, Archive: t.Archive}
	}
	return out
}

// treesThroughFirewall filters every tree's archive under its policy and
// returns the spec with the canonical forms: what crosses into the
// sandbox is what the firewall emitted, never the caller's bytes.
func treesThroughFirewall(ctx context.Context, s Spec) (Spec, error) {
	out := s
	out.Trees = slices.Clone(s.Trees)
	for i, t := range out.Trees {
		canon, err := canonical(ctx, t.Archive, t.Policy)
		if err != nil {
			return Spec{}, fmt.Errorf("%w: tree %s: %w", ErrSpec, t.Dir, err)
		}
		out.Trees[i].Archive = canon
	}
	return out, nil
}

// canonical returns the firewall's canonical form of archive under pol.
func canonical(ctx context.Context, archive []byte, pol firewall.Policy) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := firewall.Filter(ctx, bytes.NewReader(archive), &buf, pol); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Warm implements sandbox.Warmer: for a spec with trees, with sginit's
// image at hand, it has n sandboxes of the spec's shape started in the
// background (beyond Config.Pool) for the next n calls of that shape.
func (d *Docker) Warm(ctx context.Context, spec Spec, n int) bool {
	if len(spec.Cmd) == 0 {
		// The command is no part of the shape, but a spec needs one.
		spec.Cmd = []string{"/shape"}
	}
	spec, lim, err := d.resolve(spec)
	if err != nil || !d.usesInit(spec) || n <= 0 {
		return false
	}
	d.pool.warm(spec, lim, n)
	return true
}

// Settle waits until the backend is making no sandbox ahead of time and
// removing none: for measurements that must not charge one side's
// background work to another's time.
func (d *Docker) Settle(ctx context.Context) error {
	if err := d.pool.settle(ctx); err != nil {
		return err
	}
	d.removals.Wait()
	return nil
}

// LiveVolumes implements sandbox.LiveVolumes: a container mounts the volume
// itself, so what is copied in later is there.
func (d *Docker) LiveVolumes() bool { return true }
