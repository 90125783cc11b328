package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/strictgrade/strictgrade/internal/engine"
)

// GoBinaries is an image holding static Go binaries of this module on an
// empty root filesystem: no shell, no libc, no interpreter. Each package is
// built with CGO_ENABLED=0 and installed as /bin/<last path element>.
type GoBinaries struct {
	ImageName string   // logical image name, e.g. "judge"
	Packages  []string // import paths of main packages in this module
}

// goLayout versions the root filesystem layout built around the binaries.
const goLayout = 1

// Name implements Image.
func (g GoBinaries) Name() string { return g.ImageName }

// build compiles the binaries into dir and returns their hashes by name.
// The go command's build cache makes repeated calls cheap, and -trimpath
// with -buildvcs=false makes the output depend on the source alone.
func (g GoBinaries) build(ctx context.Context, dir string) (map[string]string, error) {
	if len(g.Packages) == 0 {
		return nil, fmt.Errorf("no packages for image %q", g.ImageName)
	}
	sums := map[string]string{}
	for _, pkg := range g.Packages {
		name := path.Base(pkg)
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("two packages named %q", name)
		}
		out := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goruntime.GOARCH, "GOFLAGS=-mod=mod")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go build %s: %v: %s", pkg, err, strings.TrimSpace(stderr.String()))
		}
		data, err := os.ReadFile(out)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		sums[name] = hex.EncodeToString(sum[:])
	}
	return sums, nil
}

// Recipe implements Image: the hash of the layout and of every binary.
func (g GoBinaries) Recipe(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "strictgrade-gobin-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	sums, err := g.build(ctx, dir)
	if err != nil {
		return "", err
	}
	return hashJSON(struct {
		Kind   string
		Name   string
		Bins   map[string]string
		Dirs   []string
		Layout int
	}{"go-scratch", g.ImageName, sums, sandboxDirs, goLayout}), nil
}

// Build implements Image.
func (g GoBinaries) Build(ctx context.Context, s Store, recipe string, progress io.Writer) (string, error) {
	dir, err := os.MkdirTemp("", "strictgrade-gobin-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(progress, "images: compiling %s\n", strings.Join(g.Packages, " "))
	sums, err := g.build(ctx, dir)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := scratchTar(&buf, dir, slices.Sorted(maps.Keys(sums))); err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "images: importing %d binaries (%d KiB)\n", len(sums), buf.Len()>>10)
	return s.ImportImage(ctx, &buf, engine.ImportSpec{
		Name: g.ImageName, Recipe: recipe,
		Env: []string{"PATH=/bin"},
	})
}

// scratchTar writes a root filesystem with /bin holding the named files of
// dir, an empty /tmp, and the sandbox directories owned by the sandbox user.
func scratchTar(w io.Writer, dir string, names []string) error {
	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	dirHdr := func(name string, uid int, mode int64) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: epoch, Format: tar.FormatUSTAR}
	}
	if err := tw.WriteHeader(dirHdr("bin", 0, 0o755)); err != nil {
		return err
	}
	if err := tw.WriteHeader(dirHdr("tmp", 0, 0o1777)); err != nil {
		return err
	}
	for _, d := range sandboxDirs {
		if err := tw.WriteHeader(dirHdr(d, engine.SandboxUID, 0o755)); err != nil {
			return err
		}
	}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: "bin/" + n, Mode: 0o755, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}
