package agentbox

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/tarball"
	"github.com/strictgrade/strictgrade/sandbox"
)

// WorkDir is where the agent's working copy lives; the task's public files
// are placed here at start.
const WorkDir = "/work"

// Engine is what the agent phase needs from a sandbox backend.
type Engine interface {
	sandbox.Starter
	sandbox.Runner
	sandbox.Volumes
}

// Public is the part of a task the agent phase may know: the artifacts the
// agent must leave in WorkDir and the public files it starts from.
// *task.Public (Task.Public) implements it; a *task.Task, which holds the
// hidden cases, does not, and this package cannot name one.
type Public interface {
	// Artifacts lists the paths, relative to WorkDir, that Export copies
	// out.
	Artifacts() []string
	// Files returns a tar archive of the files to place in WorkDir,
	// entries named relative to it.
	Files() io.Reader
}

// Config configures a Box. Zero values take the defaults.
type Config struct {
	Run   string // run id (labels); default: a fresh one
	Image string // image ID for the agent; required
	// Limits for the box as a whole; Wall bounds the session's lifetime.
	Limits sandbox.Limits
	// Policy bounds every file that crosses; zero is the strict default.
	Policy firewall.Policy
}

// Box is one agent container. Close it on every path.
type Box struct {
	eng       Engine
	artifacts []string
	cfg       Config
	vol       string
	session   sandbox.Session
	stopped   bool
	cl        sandbox.Cleanup
}

// Open creates the work volume, copies the public files into it (through
// the firewall), and starts the agent container. The box sees pub and
// nothing else of the task.
func Open(ctx context.Context, eng Engine, pub Public, cfg Config) (b *Box, err error) {
	if cfg.Image == "" {
		return nil, errors.New("agentbox: Config.Image is required")
	}
	if pub == nil {
		return nil, errors.New("agentbox: no public view of a task")
	}
	if cfg.Run == "" {
		cfg.Run = "a" + strings.ReplaceAll(time.Now().UTC().Format("20060102150405.000000"), ".", "")
	}
	if cfg.Limits.Wall == 0 {
		cfg.Limits.Wall = 30 * time.Minute
	}
	box := &Box{eng: eng, artifacts: pub.Artifacts(), cfg: cfg}
	defer func() {
		// box, not the named result: an error return has already set b
		// to nil.
		if err != nil {
			box.Close(ctx)
		}
	}()
	b = box
	b.vol, err = eng.NewVolume(ctx, cfg.Run, "agent")
	b.cl.Volume(eng, b.vol)
	if err != nil {
		return nil, err
	}
	if _, err := eng.CopyIn(ctx, cfg.Run, b.vol, pub.Files(), sandbox.CopyInOptions{Policy: cfg.Policy, Writable: true}); err != nil {
		return nil, fmt.Errorf("agentbox: public inputs: %w", err)
	}
	b.session, err = eng.Start(ctx, sandbox.Spec{
		Run: cfg.Run, Phase: "agent", Image: cfg.Image, WorkDir: WorkDir,
		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TZ=UTC"},
		Mounts: []sandbox.Mount{{Volume: b.vol, Target: WorkDir}},
		Limits: cfg.Limits,
	})
	b.cl.Session(b.session)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// ContainerID returns the agent container's ID.
func (b *Box) ContainerID() string { return b.session.ID() }

// ImageID returns the agent image's ID.
func (b *Box) ImageID() string { return b.session.ImageID() }

// Exec runs a command in the box (working directory /work unless cmd sets
// one) and returns its bounded output.
func (b *Box) Exec(ctx context.Context, e sandbox.ExecSpec) (*sandbox.ExecResult, error) {
	if e.WorkDir == "" {
		e.WorkDir = WorkDir
	}
	return b.session.Exec(ctx, e)
}

// workPath resolves p (absolute, or relative to /work) inside /work.
func workPath(p string) (string, error) {
	if !path.IsAbs(p) {
		p = path.Join(WorkDir, p)
	}
	p = path.Clean(p)
	if p == WorkDir || !strings.HasPrefix(p, WorkDir+"/") {
		return "", fmt.Errorf("agentbox: %q is not a file under %s", p, WorkDir)
	}
	return p, nil
}

// ReadFile returns the content of a regular file under /work. A path that
// is a link, or passes through one, is refused (the container is paused
// while each directory on the way is checked), and so are special files.
func (b *Box) ReadFile(ctx context.Context, p string) ([]byte, error) {
	full, err := workPath(p)
	if err != nil {
		return nil, err
	}
	c, err := b.session.CopyOut(ctx, full, b.cfg.Policy)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(bytes.NewReader(c.Archive))
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("agentbox: %s is not a regular file", p)
		}
		if h.Typeflag == tar.TypeReg && h.Name == path.Base(full) {
			return io.ReadAll(tr)
		}
	}
}

// WriteFile writes data to a file under /work, creating parent directories
// as needed; the file belongs to the agent user.
func (b *Box) WriteFile(ctx context.Context, p string, data []byte, executable bool) error {
	full, err := workPath(p)
	if err != nil {
		return err
	}
	rel := strings.TrimPrefix(full, WorkDir+"/")
	mode := int64(0o644)
	if executable {
		mode = 0o755
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: mode, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err = b.session.CopyIn(ctx, WorkDir, &buf, sandbox.CopyInOptions{Policy: b.cfg.Policy, Writable: true})
	return err
}

// RunAgent stops the interactive session and runs cmd to completion as the
// agent, in a fresh container over the same work volume and limits.
func (b *Box) RunAgent(ctx context.Context, cmd []string, env []string) (*sandbox.Result, error) {
	if err := b.stop(ctx); err != nil {
		return nil, err
	}
	return b.eng.Run(ctx, sandbox.Spec{
		Run: b.cfg.Run, Phase: "agent", Image: b.cfg.Image, Cmd: cmd, WorkDir: WorkDir,
		Env:    append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TZ=UTC"}, env...),
		Mounts: []sandbox.Mount{{Volume: b.vol, Target: WorkDir}},
		Limits: b.cfg.Limits,
	})
}

func (b *Box) stop(ctx context.Context) error {
	if b.stopped {
		return nil
	}
	if err := b.session.Stop(ctx); err != nil {
		return err
	}
	b.stopped = true
	return nil
}

// Export stops the box and copies the task's declared artifacts out of it
// through the firewall. The result is a tar archive with entries rooted at
// the submission root, ready for controller.Submission{Archive: …}. A
// declared artifact that is missing or refused by the firewall is an error
// naming it.
func (b *Box) Export(ctx context.Context) ([]byte, error) {
	if err := b.stop(ctx); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, a := range b.artifacts {
		c, err := b.session.CopyOut(ctx, path.Join(WorkDir, a), b.cfg.Policy)
		if err != nil {
			return nil, fmt.Errorf("agentbox: artifact %s: %w", a, err)
		}
		// The daemon roots the copy at the artifact's base name.
		dir := path.Dir(a)
		if err := appendUnder(tw, c.Archive, dir); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appendUnder copies the entries of a canonical archive into tw, placing
// them under dir ("." for the root).
func appendUnder(tw *tar.Writer, archive []byte, dir string) error {
	return tarball.Copy(tw, bytes.NewReader(archive), func(h *tar.Header) bool {
		if dir != "." {
			h.Name = dir + "/" + h.Name
		}
		return true
	})
}

// Close removes the agent container and its work volume. Call it on every
// path; it is safe to call more than once.
func (b *Box) Close(ctx context.Context) {
	_ = b.cl.Run(ctx)
}
