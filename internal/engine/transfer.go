package engine

// This file is the only place in the module that calls the Docker copy API
// (CopyToContainer, CopyFromContainer). Both directions pass every archive
// through the firewall; TestCopyAPIConfined enforces the confinement.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/errdefs"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/tarball"
)

// loaderMount is where a loader container mounts the volume it fills.
const loaderMount = "/v"

// createLoader creates, and never starts, a hardened container with the
// volume mounted writable at loaderMount. The caller removes it.
func (d *Docker) createLoader(ctx context.Context, run, vol string) (string, error) {
	img, err := d.loaderImage(ctx)
	if err != nil {
		return "", err
	}
	lim, _ := Limits{}.Resolve()
	spec := Spec{
		Run:     run,
		Phase:   "loader",
		Image:   img,
		Cmd:     []string{"/never-started"},
		Mounts:  []Mount{{Volume: vol, Target: loaderMount}},
		Runtime: d.cfg.Runtime,
	}
	cfg, hc := hardened(spec, lim, false)
	// The one place where the image's directory is copied onto the volume:
	// it gives a fresh volume's root to the sandbox user.
	hc.Mounts[0].VolumeOptions.NoCopy = false
	id, _, err := d.createContainer(ctx, objectName(run, "loader"), cfg, hc)
	return id, err
}

// CopyIn implements Engine. The archive is filtered to a temporary file
// first, so a rejected archive never reaches the volume, and only the
// canonical bytes are copied into the stopped loader container.
func (d *Docker) CopyIn(ctx context.Context, run, vol string, archive io.Reader, opts CopyInOptions) (*firewall.Manifest, error) {
	if !labelSafe(run) {
		return nil, fmt.Errorf("%w: run must be [a-z0-9-] of at most 64 bytes", ErrSpec)
	}
	src, man, cleanup, err := stage(ctx, archive, opts)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	id, err := d.createLoader(ctx, run, vol)
	if id != "" {
		defer d.removeContainer(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	if err := d.cli.CopyToContainer(ctx, id, loaderMount, src, container.CopyToContainerOptions{}); err != nil {
		return nil, fmt.Errorf("engine: copy into volume: %w", err)
	}
	return man, nil
}

// NewVolumeWith creates a volume and fills it with archive, filtered through
// the firewall under opts, using a single loader container. A rejected
// archive creates no volume.
func (d *Docker) NewVolumeWith(ctx context.Context, run, phase string, archive io.Reader, opts CopyInOptions) (string, *firewall.Manifest, error) {
	if archive == nil {
		return "", nil, fmt.Errorf("%w: nil archive", ErrSpec)
	}
	return d.newVolume(ctx, run, phase, archive, opts)
}

// newVolume creates a volume whose root belongs to the sandbox user and,
// when archive is not nil, copies its canonical form in through the same
// never-started loader.
func (d *Docker) newVolume(ctx context.Context, run, phase string, archive io.Reader, opts CopyInOptions) (name string, man *firewall.Manifest, err error) {
	if !labelSafe(run) || !labelSafe(phase) {
		return "", nil, fmt.Errorf("%w: run and phase must be [a-z0-9-] of at most 64 bytes", ErrSpec)
	}
	var src io.Reader
	if archive != nil {
		var cleanup func()
		if src, man, cleanup, err = stage(ctx, archive, opts); err != nil {
			return "", nil, err
		}
		defer cleanup()
	}
	vol := objectName(run, phase)
	defer func() {
		// vol, not the named result: an error return has already
		// replaced name with "".
		if err != nil {
			cctx, cancel := d.cleanupCtx(ctx)
			defer cancel()
			_ = d.RemoveVolume(cctx, vol)
		}
	}()
	// The create call is not interrupted by ctx (see create).
	cctx, cancel := d.cleanupCtx(ctx)
	_, err = d.cli.VolumeCreate(cctx, volume.CreateOptions{Name: vol, Driver: "local", Labels: labels(run, phase)})
	cancel()
	if err != nil {
		return "", nil, fmt.Errorf("engine: create volume: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	// Mounting the empty volume where the loader image has a directory
	// owned by the sandbox user copies that ownership onto the volume root.
	id, err := d.createLoader(ctx, run, vol)
	if id != "" {
		defer d.removeContainer(ctx, id)
	}
	if err != nil {
		return "", nil, err
	}
	if src != nil {
		if err := d.cli.CopyToContainer(ctx, id, loaderMount, src, container.CopyToContainerOptions{}); err != nil {
			return "", nil, fmt.Errorf("engine: copy into volume: %w", err)
		}
	}
	return vol, man, nil
}

// stage filters archive into a temporary file, so that a rejected archive
// never reaches a container, and returns a reader of the canonical bytes
// (with the sandbox user as owner when opts.Writable) and a cleanup that
// removes the file.
func stage(ctx context.Context, archive io.Reader, opts CopyInOptions) (io.Reader, *firewall.Manifest, func(), error) {
	tmp, err := os.CreateTemp("", "strictgrade-copyin-*.tar")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("engine: staging file: %w", err)
	}
	var pr *io.PipeReader
	cleanup := func() {
		if pr != nil {
			pr.Close()
		}
		tmp.Close()
		os.Remove(tmp.Name())
	}
	man, err := firewall.Filter(ctx, archive, tmp, opts.Policy)
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	if !opts.Writable {
		return tmp, man, cleanup, nil
	}
	var pw *io.PipeWriter
	pr, pw = io.Pipe()
	go func() { pw.CloseWithError(chownArchive(tmp, pw, SandboxUID)) }()
	return pr, man, cleanup, nil
}

// chownArchive rewrites the owner of every entry of a canonical archive.
// Its input is the firewall's own output, never untrusted bytes.
func chownArchive(r io.Reader, w io.Writer, uid int) error {
	return tarball.Rewrite(w, r, func(h *tar.Header) bool {
		h.Uid, h.Gid = uid, uid
		return true
	})
}

// collect copies a directory or regular file out of a container through
// the firewall. The archive's entries are rooted at the base name of p, as
// the daemon sends them. Callers make sure nothing runs in the container
// meanwhile: it has exited, or it is paused.
func (d *Docker) collect(ctx context.Context, id, p string, pol firewall.Policy) (Collected, error) {
	rc, stat, err := d.cli.CopyFromContainer(ctx, id, p)
	if err != nil {
		// The daemon failing to read its own container is not the
		// container's doing: no ErrCollect here.
		return Collected{}, fmt.Errorf("engine: copy %s out of the container: %w", p, err)
	}
	defer rc.Close()
	if !(stat.Mode.IsDir() || stat.Mode.IsRegular()) || stat.LinkTarget != "" {
		return Collected{}, fmt.Errorf("%w: %s is neither a directory nor a regular file (mode %v, link %q)", ErrCollect, p, stat.Mode, stat.LinkTarget)
	}
	var buf bytes.Buffer
	man, err := firewall.Filter(ctx, rc, &buf, pol)
	var rej *firewall.RejectError
	switch {
	case err == nil:
	case errors.As(err, &rej) && ctx.Err() == nil:
		// What the container left was refused: its doing.
		return Collected{}, fmt.Errorf("%w: %s: %w", ErrCollect, p, err)
	default:
		// A broken stream from the daemon, or our own deadline.
		return Collected{}, fmt.Errorf("engine: copy %s out of the container: %w", p, err)
	}
	return Collected{Archive: buf.Bytes(), Manifest: man}, nil
}

// collectStream passes the archive a StreamOut wrapper wrote on standard
// output through the firewall. The stream is whatever the container wrote
// on that channel, so anything the firewall refuses, a cut or malformed
// stream included, is the container's doing: ErrCollect. The bytes are
// already in memory; only an expired ctx is the engine's own failure.
func collectStream(ctx context.Context, archive []byte, dir string, pol firewall.Policy) (Collected, error) {
	var buf bytes.Buffer
	man, err := firewall.Filter(ctx, bytes.NewReader(archive), &buf, pol)
	switch {
	case err == nil:
		return Collected{Archive: buf.Bytes(), Manifest: man}, nil
	case ctx.Err() != nil:
		return Collected{}, fmt.Errorf("engine: stream of %s: %w", dir, ctx.Err())
	}
	return Collected{}, fmt.Errorf("%w: %s: %w", ErrCollect, dir, err)
}

// paused runs f with the session's container frozen (when it is running),
// so that no process inside can race the daemon's walk of the filesystem.
func (s *Session) paused(ctx context.Context, f func() error) error {
	ins, err := s.d.cli.ContainerInspect(ctx, s.id)
	if err != nil {
		return fmt.Errorf("engine: inspect session: %w", err)
	}
	if ins.State != nil && ins.State.Running && !ins.State.Paused {
		froze, err := s.freeze(ctx)
		if err != nil {
			return err
		}
		if froze {
			defer func() {
				uctx, cancel := s.d.cleanupCtx(ctx)
				defer cancel()
				if err := s.d.cli.ContainerUnpause(uctx, s.id); err != nil {
					s.d.log.Warn("unpause failed", "container", s.id, "err", err)
				}
			}()
		}
	}
	return f()
}

// freezeTries is how many times a session's freeze is tried before it is
// the engine's error.
const freezeTries = 6

// freeze pauses the running session's container. On cgroup v1, runc's
// freezer gives up ("unable to freeze") when the cgroup's tasks do not all
// stop within its own retries, and on a loaded host they may not: runc
// thaws the cgroup again and the pause may be tried anew. So a failed
// pause is tried again, with a growing pause between tries (0.1 s to 1.6
// s), as long as the container still runs unpaused. It reports whether it
// froze the container (false: it ended meanwhile, and there is nothing to
// freeze or thaw).
func (s *Session) freeze(ctx context.Context) (bool, error) {
	wait := 100 * time.Millisecond
	for try := 1; ; try++ {
		var err error
		if s.failPauses > 0 {
			s.failPauses--
			err = errors.New("OCI runtime pause failed: unable to freeze (a test's)")
		} else {
			err = s.d.cli.ContainerPause(ctx, s.id)
		}
		if err == nil {
			return true, nil
		}
		if try == freezeTries || ctx.Err() != nil {
			return false, fmt.Errorf("engine: pause session (%d tries): %w", try, err)
		}
		ins, ierr := s.d.cli.ContainerInspect(ctx, s.id)
		switch {
		case ierr != nil:
			return false, fmt.Errorf("engine: pause session: %w (inspect: %w)", err, ierr)
		case ins.State == nil || !ins.State.Running:
			return false, nil
		case ins.State.Paused:
			return true, nil
		}
		s.d.log.Warn("pause failed; trying again", "container", s.id, "try", try, "err", err)
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("engine: pause session: %w", err)
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// writableMount reports whether dir lies at or below a writable volume
// mount of the session.
func (s *Session) writableMount(dir string) bool {
	for _, m := range s.spec.Mounts {
		if !m.ReadOnly && (dir == m.Target || strings.HasPrefix(dir, m.Target+"/")) {
			return true
		}
	}
	return false
}

// CopyIn filters archive through the firewall and extracts the canonical
// result at dir, an existing directory at or below a writable volume mount.
func (s *Session) CopyIn(ctx context.Context, dir string, archive io.Reader, opts CopyInOptions) (*firewall.Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSessionClosed
	}
	if !path.IsAbs(dir) || path.Clean(dir) != dir || !s.writableMount(dir) {
		return nil, fmt.Errorf("%w: %q is not inside a writable volume of the session", ErrSpec, dir)
	}
	src, man, cleanup, err := stage(ctx, archive, opts)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	err = s.paused(ctx, func() error {
		return s.d.cli.CopyToContainer(ctx, s.id, dir, src, container.CopyToContainerOptions{})
	})
	if err != nil {
		return nil, fmt.Errorf("engine: copy into session: %w", err)
	}
	return man, nil
}

// CopyOut copies a directory or regular file out of the session through
// the firewall, with the container paused while the daemon reads it.
func (s *Session) CopyOut(ctx context.Context, p string, pol firewall.Policy) (Collected, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Collected{}, ErrSessionClosed
	}
	if !path.IsAbs(p) || path.Clean(p) != p {
		return Collected{}, fmt.Errorf("%w: path %q", ErrSpec, p)
	}
	var c Collected
	err := s.paused(ctx, func() error {
		if err := s.noLinksAlong(ctx, p); err != nil {
			return err
		}
		var err error
		c, err = s.d.collect(ctx, s.id, p, pol)
		return err
	})
	return c, err
}

// noLinksAlong refuses a path with a symbolic link in any of its parent
// directories. The daemon's copy resolves such links inside the
// container's root, so without this check a link the agent planted under
// its work directory would let a read reach anywhere in the container;
// the final component is checked by collect itself. The container is
// paused, so nothing can swap a directory for a link in between.
func (s *Session) noLinksAlong(ctx context.Context, p string) error {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := 1; i < len(parts); i++ {
		dir := "/" + strings.Join(parts[:i], "/")
		st, err := s.d.cli.ContainerStatPath(ctx, s.id, dir)
		if err != nil {
			if errdefs.IsNotFound(err) {
				return fmt.Errorf("%w: %s does not exist", ErrCollect, dir)
			}
			return fmt.Errorf("engine: stat %s in the session: %w", dir, err)
		}
		if st.LinkTarget != "" || !st.Mode.IsDir() {
			return fmt.Errorf("%w: %s is not a directory (a link or a file on the way to %s)", ErrCollect, dir, p)
		}
	}
	return nil
}
