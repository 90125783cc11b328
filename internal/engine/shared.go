package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/errdefs"
)

// Image volumes (ADR 0014, ADR 0016): a volume the daemon fills with one
// directory of an image, and a marker volume that names it once it is
// complete. Both are named and labelled by the image's ID, shared by every
// backend on the daemon and kept when a backend closes, like the image
// itself. They carry no managed label: no run owns them; GC removes those
// whose image is gone (and all with GCOptions.All).
//
// Two kinds exist: the sginit volume (the init image's /bin, ADR 0013) and
// a runtime image's shared directory.
type volumeKind struct {
	what        string // for messages
	label       string // holds the source image's ID, on markers and volumes
	markerLabel string // on a marker, names the filled volume
	prefix      string // every name of the kind starts with it
}

// LabelSharedDir, on a runtime image, names one directory of it (for the
// Python image, /usr) whose content sandboxes under sginit mount
// read-only from a volume the daemon filled from the image, instead of
// reading it through the container's root filesystem. On a daemon whose
// storage driver is fuse-overlayfs every container's root filesystem is a
// FUSE mount of its own, with a page cache of its own: a short-lived
// container reads its interpreter and libraries through it every time.
// The volume is one bind mount shared by all of them, cached once. The
// daemon mounts its init binary (MountPointFiles) before the volume, so no
// link of the image may lead that path into the directory: the volume
// would hide it and no sandbox would start.
const LabelSharedDir = "dev.strictgrade.shared-dir"

// The labels and names of both kinds. The sginit volumes hold the init
// image's /bin; the shared-directory volumes a runtime image's shared
// directory.
const (
	// LabelSginit and LabelShared hold the image ID a volume of the kind,
	// or its marker, was filled from.
	LabelSginit = "dev.strictgrade.sginit"
	LabelShared = "dev.strictgrade.shared"
	// On a marker, these name the filled volume.
	labelSginitVolume = "dev.strictgrade.sginit.volume"
	labelSharedVolume = "dev.strictgrade.shared.volume"
	sginitPrefix      = "strictgrade-sginit-"
	sharedPrefix      = "strictgrade-shared-"
)

// sharedKind is the shared-directory volumes' kind.
func (d *Docker) sharedKind() volumeKind {
	return volumeKind{what: "shared directory", label: LabelShared, markerLabel: labelSharedVolume, prefix: d.sharedPrefix}
}

// imageVolume returns the filled volume marker names: the daemon's when it
// exists, else a new one, filled from dir of image (imageID) and then
// published. Of processes that race to publish, the first marker wins and
// the others remove what they filled; a volume is used only once a marker
// names it, so none is ever used half filled. cmd is the never-started
// filling container's command (a container needs one).
func (d *Docker) imageVolume(ctx context.Context, kind volumeKind, marker, imageID, dir string, cmd []string) (string, error) {
	for attempt := 0; ; attempt++ {
		vol, err := d.findImageVolume(ctx, kind, marker)
		if err != nil {
			return "", err
		}
		if vol == "" {
			if vol, err = d.publishImageVolume(ctx, kind, marker, imageID, dir, cmd); err != nil {
				return "", err
			}
		}
		if vol != "" {
			return vol, nil
		}
		if attempt == 2 {
			return "", fmt.Errorf("engine: the %s volume %s kept disappearing", kind.what, marker)
		}
	}
}

// findImageVolume returns the filled volume marker names, or "" when there
// is no marker or it names a volume that is gone (then the marker goes
// too).
func (d *Docker) findImageVolume(ctx context.Context, kind volumeKind, marker string) (string, error) {
	m, err := d.cli.VolumeInspect(ctx, marker)
	if errdefs.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("engine: inspect the %s marker: %w", kind.what, err)
	}
	vol := m.Labels[kind.markerLabel]
	if vol != "" && strings.HasPrefix(vol, marker+"-") {
		if _, err := d.cli.VolumeInspect(ctx, vol); err == nil {
			return vol, nil
		} else if !errdefs.IsNotFound(err) {
			return "", fmt.Errorf("engine: inspect the %s volume: %w", kind.what, err)
		}
	}
	_ = d.RemoveVolume(ctx, marker)
	return "", nil
}

// publishImageVolume fills a fresh volume from dir of the image and
// publishes it under marker. It returns the volume the marker names
// afterwards (another process's, if that one published first), or "" when
// that one is already gone.
func (d *Docker) publishImageVolume(ctx context.Context, kind volumeKind, marker, imageID, dir string, cmd []string) (string, error) {
	vol := marker + "-" + randomSuffix()
	cctx, cancel := d.cleanupCtx(ctx)
	defer cancel()
	if _, err := d.cli.VolumeCreate(cctx, volume.CreateOptions{Name: vol, Driver: "local", Labels: map[string]string{kind.label: imageID}}); err != nil {
		return "", fmt.Errorf("engine: create the %s volume: %w", kind.what, err)
	}
	// A never-started container of the image mounts the empty volume
	// over dir; the daemon fills it with the image's content there,
	// owners and modes kept.
	lim, _ := Limits{}.Resolve()
	spec := Spec{
		Run: d.poolRun, Phase: "init", Image: imageID, Cmd: cmd,
		Mounts: []Mount{{Volume: vol, Target: dir}}, Runtime: d.cfg.Runtime,
	}
	cfg, hc := hardened(spec, lim, false)
	hc.Mounts[0].VolumeOptions.NoCopy = false
	id, _, err := d.createContainer(ctx, objectName(d.poolRun, "init"), cfg, hc)
	if id != "" {
		d.removeContainer(ctx, id)
	}
	if err != nil {
		_ = d.RemoveVolume(cctx, vol)
		return "", fmt.Errorf("engine: make the %s volume from %s: %w", kind.what, imageID, err)
	}
	// Creating a volume under an existing name returns the existing one,
	// labels and all: the first marker stands.
	m, err := d.cli.VolumeCreate(cctx, volume.CreateOptions{Name: marker, Driver: "local",
		Labels: map[string]string{kind.label: imageID, kind.markerLabel: vol}})
	if err != nil {
		_ = d.RemoveVolume(cctx, vol)
		return "", fmt.Errorf("engine: publish the %s volume: %w", kind.what, err)
	}
	if won := m.Labels[kind.markerLabel]; won != vol {
		_ = d.RemoveVolume(cctx, vol)
		return d.findImageVolume(ctx, kind, marker)
	}
	return vol, nil
}

// sharedDir is a runtime image's shared directory and its volume ("" while
// it is being made, or when it could not be).
type sharedDir struct {
	dir, vol string
}

// reservedDirs may not be shared: the sandbox's own mounts live there.
var reservedDirs = []string{"/", "/dev", "/proc", "/sys", "/tmp", "/etc", initMount}

// sharedDirOf returns spec's image's shared directory and, when it exists
// on the daemon, its volume. The first call for an image looks its label
// and marker up; a volume not made yet is made in the background (Close
// waits for it), so no grade waits for a copy of the directory, and the
// sandboxes made meanwhile read the image's own copy. A directory that
// overlaps the spec's trees, its StreamOut directory or a reserved one is
// refused: the image is misconfigured.
func (d *Docker) sharedDirOf(ctx context.Context, spec Spec) (sharedDir, error) {
	share, err := d.sharedDirFor(ctx, spec.Image)
	if err != nil || share.dir == "" {
		return sharedDir{}, err
	}
	under := func(a, b string) bool { return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") }
	clash := slices.Concat(reservedDirs, MountPointFiles)
	for _, t := range spec.Trees {
		clash = append(clash, t.Dir)
	}
	if spec.StreamOut != nil {
		clash = append(clash, spec.StreamOut.Dir)
	}
	for _, m := range spec.Mounts {
		clash = append(clash, m.Target)
	}
	for _, c := range clash {
		if share.dir == c || under(c, share.dir) || (c != "/" && under(share.dir, c)) {
			return sharedDir{}, fmt.Errorf("%w: image %s: label %s=%s overlaps %s", ErrSpec, spec.Image, LabelSharedDir, share.dir, c)
		}
	}
	return share, nil
}

func (d *Docker) sharedDirFor(ctx context.Context, image string) (sharedDir, error) {
	d.sharedM.Lock()
	defer d.sharedM.Unlock()
	if e, ok := d.shared[image]; ok {
		return *e, nil
	}
	img, err := d.cli.ImageInspect(ctx, image)
	if err != nil {
		return sharedDir{}, fmt.Errorf("engine: inspect image %s: %w", image, err)
	}
	e := &sharedDir{}
	if img.Config != nil {
		e.dir = img.Config.Labels[LabelSharedDir]
	}
	if e.dir == "" {
		d.shared[image] = e
		return sharedDir{}, nil
	}
	if !path.IsAbs(e.dir) || path.Clean(e.dir) != e.dir {
		return sharedDir{}, fmt.Errorf("%w: image %s: label %s=%q is not a clean absolute path", ErrSpec, image, LabelSharedDir, e.dir)
	}
	sum := sha256.Sum256([]byte(img.ID + "\x00" + e.dir))
	kind := d.sharedKind()
	marker := kind.prefix + hex.EncodeToString(sum[:])[:24]
	if e.vol, err = d.findImageVolume(ctx, kind, marker); err != nil {
		return sharedDir{}, err
	}
	d.shared[image] = e
	if e.vol == "" {
		d.initWG.Add(1)
		go func() {
			defer d.initWG.Done()
			began := time.Now()
			fctx, cancel := d.cleanupCtx(context.Background())
			defer cancel()
			vol, err := d.imageVolume(fctx, kind, marker, img.ID, e.dir, []string{"/shared-directory"})
			d.sharedM.Lock()
			e.vol = vol
			d.sharedM.Unlock()
			if err != nil {
				// Sandboxes keep reading the image's own copy; a
				// later backend tries again.
				d.log.Warn("engine: making the shared directory volume", "image", image, "dir", e.dir, "err", err)
				return
			}
			d.log.Debug("engine: shared directory volume ready", "image", image, "dir", e.dir, "volume", vol, "ms", time.Since(began).Milliseconds())
		}()
	}
	return *e, nil
}

// checkShared makes sure a container just created mounts the shared
// directory's volume itself: the daemon creates a volume a mount names that
// does not exist, empty and unlabelled, so one removed since it was found
// (by gc --all) would hand the workload an empty directory, and its failure
// would look like the candidate's. The volume is then forgotten, and the call is the grader's error (the caller removes the
// container, then the empty volume).
func (d *Docker) checkShared(ctx context.Context, image, vol string) error {
	v, err := d.cli.VolumeInspect(ctx, vol)
	if err == nil && v.Labels[LabelShared] != "" {
		return nil
	}
	d.sharedM.Lock()
	delete(d.shared, image)
	d.sharedM.Unlock()
	if err != nil {
		return fmt.Errorf("engine: inspect the shared directory volume %s: %w", vol, err)
	}
	return fmt.Errorf("%w: %s (gc --all?)", errSharedGone, vol)
}

// errSharedGone is checkShared's finding that the volume was replaced.
var errSharedGone = errors.New("engine: the shared directory volume was removed while in use")

// gcImageVolumes removes the image volumes whose image is gone, or every
// one with all, markers before the volumes they name. One still mounted
// stays (the removal's error is returned).
func (d *Docker) gcImageVolumes(ctx context.Context, all, dryRun bool, rep *GCReport) error {
	var errs []error
	gone := map[string]bool{}
	for _, kind := range []volumeKind{d.sginitKind(), d.sharedKind()} {
		vs, err := d.cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", kind.label))})
		if err != nil {
			errs = append(errs, fmt.Errorf("engine: list %s volumes: %w", kind.what, err))
			continue
		}
		pick := func(img string) bool {
			if all {
				return true
			}
			g, seen := gone[img]
			if !seen {
				_, err := d.cli.ImageInspect(ctx, img)
				g = errdefs.IsNotFound(err)
				gone[img] = g
			}
			return g
		}
		// Markers first: a filled volume is never left named by a
		// marker while being removed.
		slices.SortStableFunc(vs.Volumes, func(a, b *volume.Volume) int {
			am, bm := a.Labels[kind.markerLabel] != "", b.Labels[kind.markerLabel] != ""
			switch {
			case am && !bm:
				return -1
			case bm && !am:
				return 1
			}
			return 0
		})
		for _, v := range vs.Volumes {
			if !strings.HasPrefix(v.Name, kind.prefix) || !pick(v.Labels[kind.label]) {
				continue
			}
			if !dryRun {
				if err := d.RemoveVolume(ctx, v.Name); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			rep.Volumes = append(rep.Volumes, v.Name)
		}
	}
	return errors.Join(errs...)
}
