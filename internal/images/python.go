package images

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/strictgrade/strictgrade/internal/engine"
)

// Python is the Debian-based Python runtime used for Python candidates and
// the compat tier: a minimal bookworm made by debootstrap with python3 and
// pytest, imported as an image.
type Python struct {
	Suite    string   // Debian suite; default "bookworm"
	Packages []string // extra packages; default python3-minimal, python3-pytest, git
	// Mirror is the Debian mirror; default $STRICTGRADE_DEBIAN_MIRROR or
	// http://deb.debian.org/debian. It is not part of the recipe.
	Mirror string
}

// PythonPackages are the top-level Python packages and modules the Python
// image's recipe puts on sys.path besides the standard library: what
// Debian's python3-pytest brings with it into /usr/lib/python3/dist-packages
// (bookworm: pytest 7.2 and its dependencies). Debootstrap resolves them
// when the image is built, so they are listed here, and an engine test
// (compat's TestPythonImagePackages) checks the list against a built
// image. A tested repository's package of one of these names can be
// shadowed by the image's copy; the compat baseline detects it.
var PythonPackages = []string{
	"_pytest", "attr", "attrs", "exceptiongroup", "importlib_metadata", "iniconfig", "more_itertools",
	"packaging", "pkg_resources", "pluggy", "py", "pytest", "tomli", "typing_extensions", "zipp",
}

// pythonLayout versions the steps Build takes beyond debootstrap itself.
const pythonLayout = 3

// pythonShared is the Python image's shared directory (ADR 0016): /usr
// holds the interpreter, its standard library, pytest and the shared
// libraries (/bin and /lib link into it), so a sandbox under sginit reads
// all of them from one read-only volume rather than through its own root
// filesystem mount.
const pythonShared = "/usr"

// pythonLabels are the image's labels beyond its name and recipe.
var pythonLabels = map[string]string{engine.LabelSharedDir: pythonShared}

// Env is the environment the Python image declares.
var pythonEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"LANG=C.UTF-8",
	"PYTHONDONTWRITEBYTECODE=1",
}

func (p Python) withDefaults() Python {
	if p.Suite == "" {
		p.Suite = "bookworm"
	}
	if len(p.Packages) == 0 {
		p.Packages = []string{"python3-minimal", "python3-pytest", "git"}
	}
	if p.Mirror == "" {
		p.Mirror = os.Getenv("STRICTGRADE_DEBIAN_MIRROR")
	}
	if p.Mirror == "" {
		p.Mirror = "http://deb.debian.org/debian"
	}
	return p
}

// Name implements Image.
func (Python) Name() string { return "python" }

// Recipe implements Image.
func (p Python) Recipe(context.Context) (string, error) {
	p = p.withDefaults()
	return hashJSON(struct {
		Kind     string
		Suite    string
		Variant  string
		Packages []string
		Env      []string
		Labels   map[string]string
		Layout   int
	}{"debootstrap", p.Suite, "minbase", p.Packages, pythonEnv, pythonLabels, pythonLayout}), nil
}

// addMountPoints gives the root filesystem at root the paths every sandbox
// under sginit mounts over (engine.MountPointDirs and MountPointFiles), as
// root's, so that no container makes them in a layer of its own (ADR 0016).
// Paths through the image's own links resolve inside root (the links are
// relative), except that a mount point file must not land in the shared
// directory: the daemon mounts its init binary before the shared volume,
// which would then hide it. A link on the way there (Debian's /sbin to
// usr/sbin) becomes a directory of links, one per entry, beside it.
func addMountPoints(root, shared string) error {
	for _, f := range engine.MountPointFiles {
		if err := keepOutOf(root, path.Dir(f), shared); err != nil {
			return err
		}
	}
	for _, d := range engine.MountPointDirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	for _, f := range engine.MountPointFiles {
		full := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		// Not through a link that keepOutOf made to the shared copy.
		if fi, err := os.Lstat(full); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if err := os.Remove(full); err != nil {
				return err
			}
		}
		h, err := os.OpenFile(full, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if err := h.Close(); err != nil {
			return err
		}
	}
	return nil
}

// keepOutOf makes dir (absolute, in the image at root) a real directory
// outside shared when a link of its path leads into shared: the first
// such link is replaced by a directory holding one relative link per entry
// of its target, so every name it served still resolves, to the same file.
func keepOutOf(root, dir, shared string) error {
	under := func(p string) bool { return p == shared || strings.HasPrefix(p, shared+"/") }
	cur := "/"
	for _, part := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		next := path.Join(cur, part)
		full := filepath.Join(root, next)
		fi, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := os.Readlink(full)
		if err != nil {
			return err
		}
		if path.IsAbs(target) {
			target = path.Clean(target)
		} else {
			target = path.Join(cur, target)
		}
		if !under(target) || under(cur) {
			cur = target
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, target))
		if err != nil {
			return fmt.Errorf("link %s: %w", next, err)
		}
		if err := os.Remove(full); err != nil {
			return err
		}
		if err := os.Mkdir(full, 0o755); err != nil {
			return err
		}
		for _, e := range entries {
			rel, err := filepath.Rel(next, path.Join(target, e.Name()))
			if err != nil {
				return err
			}
			if err := os.Symlink(rel, filepath.Join(full, e.Name())); err != nil {
				return err
			}
		}
		cur = next
	}
	return nil
}

// Build implements Image. It needs root and the debootstrap command on the
// host that runs strictgrade (the daemon may be remote).
func (p Python) Build(ctx context.Context, s Store, recipe string, progress io.Writer) (id string, err error) {
	p = p.withDefaults()
	if os.Geteuid() != 0 {
		return "", errors.New("debootstrap needs root: run as root, or build the image where you are root (strictgrade images build)")
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", errors.New("debootstrap not found: install it with `apt-get install debootstrap` (Debian, Ubuntu), or name a runtime image you have (STRICTGRADE_RUNTIME_IMAGE, controller.Config.RuntimeImage)")
	}
	tmp, err := os.MkdirTemp("", "strictgrade-rootfs-")
	if err != nil {
		return "", err
	}
	root := filepath.Join(tmp, "root")
	defer func() {
		if cerr := removeRootfs(tmp); cerr != nil && err == nil {
			err = cerr
		}
	}()
	fmt.Fprintf(progress, "images: debootstrap %s with %s (about a minute)\n", p.Suite, strings.Join(p.Packages, ","))
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase",
		"--include="+strings.Join(p.Packages, ","), p.Suite, root, p.Mirror)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if err := runProgress(cmd, progress, "debootstrap"); err != nil {
		return "", fmt.Errorf("debootstrap: %w", err)
	}
	// Trim caches and add the directories the sandbox user owns.
	for _, d := range []string{"var/cache/apt/archives", "var/lib/apt/lists"} {
		entries, _ := os.ReadDir(filepath.Join(root, d))
		for _, e := range entries {
			if !e.IsDir() {
				_ = os.Remove(filepath.Join(root, d, e.Name()))
			}
		}
	}
	for _, d := range sandboxDirs {
		full := filepath.Join(root, d)
		if err := os.MkdirAll(full, 0o755); err != nil {
			return "", err
		}
		if err := os.Chown(full, engine.SandboxUID, engine.SandboxUID); err != nil {
			return "", err
		}
	}
	if err := addMountPoints(root, pythonShared); err != nil {
		return "", err
	}
	fmt.Fprintln(progress, "images: importing the root filesystem")
	tarCmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "--one-file-system", "-C", root, "-cf", "-", ".")
	out, err := tarCmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	var tarErr strings.Builder
	tarCmd.Stderr = &tarErr
	if err := tarCmd.Start(); err != nil {
		return "", err
	}
	id, ierr := s.ImportImage(ctx, out, engine.ImportSpec{Name: p.Name(), Recipe: recipe, Env: pythonEnv, Labels: pythonLabels})
	_, _ = io.Copy(io.Discard, out)
	werr := tarCmd.Wait()
	if ierr != nil {
		return "", ierr
	}
	if werr != nil {
		return "", fmt.Errorf("tar: %v: %s", werr, strings.TrimSpace(tarErr.String()))
	}
	return id, nil
}

// sandboxDirs exist in every strictgrade image, owned by the sandbox user,
// so that volumes mounted there are writable by it.
var sandboxDirs = []string{"work", "out", "artifacts", "inputs"}

// runProgress runs cmd, copying each line of its output to progress with a
// prefix, and keeps the last lines for the error message.
func runProgress(cmd *exec.Cmd, progress io.Writer, prefix string) error {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return err
	}
	var tail []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		steps := 0
		for sc.Scan() {
			line := sc.Text()
			// Per-package steps are summarised; everything else is shown.
			if routineStep(line) {
				if steps++; steps%50 == 0 {
					fmt.Fprintf(progress, "  %s: %d package steps done\n", prefix, steps)
				}
			} else {
				fmt.Fprintf(progress, "  %s: %s\n", prefix, line)
			}
			tail = append(tail, line)
			if len(tail) > 5 {
				tail = tail[1:]
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Wait()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.Join(tail, " | "))
	}
	return nil
}

// routineStep reports whether a debootstrap line is one of its many
// per-package steps.
func routineStep(line string) bool {
	for _, p := range []string{"I: Retrieving ", "I: Validating ", "I: Extracting ", "I: Unpacking ", "I: Configuring "} {
		if strings.HasPrefix(line, p) && !strings.HasSuffix(line, "system...") && !strings.HasSuffix(line, "packages...") {
			return true
		}
	}
	return false
}

// removeRootfs unmounts anything debootstrap left mounted under dir (a
// failed run can leave /proc or /sys mounted there) and then removes it, so
// that the removal never walks into a host filesystem.
func removeRootfs(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err == nil {
		var mounts []string
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
				mounts = append(mounts, f[4])
			}
		}
		for i := len(mounts) - 1; i >= 0; i-- {
			if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount %s: %w (not removing %s)", mounts[i], err, dir)
			}
		}
	}
	return os.RemoveAll(dir)
}
