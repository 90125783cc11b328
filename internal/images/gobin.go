package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
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
//
// The binaries are built with this module as the main module (never the
// module that embeds the library), -trimpath, -buildvcs=false and an empty
// build id, so the same source gives the same bytes whoever builds it.
type GoBinaries struct {
	ImageName string   // logical image name, e.g. "judge"
	Packages  []string // import paths of main packages in this module
	// Source is the packages' source hash (sourceHash), recorded ahead of
	// time so that the recipe needs no Go toolchain; empty means compute
	// it with the toolchain (the images tests build).
	Source string
}

// goLayout versions the root filesystem layout and the build settings.
const goLayout = 3

// Name implements Image.
func (g GoBinaries) Name() string { return g.ImageName }

// ldflags strips symbols and the build id, which would otherwise differ
// between builders.
const ldflags = "-s -w -buildid="

// build compiles the binaries of the module at mod into dir and returns
// their names.
func (g GoBinaries) build(ctx context.Context, mod, dir string) ([]string, error) {
	if len(g.Packages) == 0 {
		return nil, fmt.Errorf("no packages for image %q", g.ImageName)
	}
	var names []string
	for _, pkg := range g.Packages {
		name := path.Base(pkg)
		if slices.Contains(names, name) {
			return nil, fmt.Errorf("two packages named %q", name)
		}
		names = append(names, name)
		if _, err := goCmd(ctx, mod, buildEnv(), "build", "-trimpath", "-buildvcs=false", "-ldflags="+ldflags, "-o", filepath.Join(dir, name), pkg); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// recipe is the hash of the layout and of the source.
func (g GoBinaries) recipe(source string) string {
	return hashJSON(struct {
		Kind   string
		Name   string
		Source string
		Arch   string
		Dirs   []string
		Layout int
	}{"go-scratch", g.ImageName, source, goruntime.GOARCH, sandboxDirs, goLayout})
}

// Recipe implements Image. With Source set it needs no toolchain.
func (g GoBinaries) Recipe(ctx context.Context) (string, error) {
	if g.Source != "" {
		return g.recipe(g.Source), nil
	}
	mod, err := moduleDir(ctx)
	if err != nil {
		return "", err
	}
	src, err := sourceHash(ctx, mod, g.Packages)
	if err != nil {
		return "", err
	}
	return g.recipe(src), nil
}

// Binaries builds the image's binaries into dir, from the source the
// recipe names, and returns their names.
func (g GoBinaries) Binaries(ctx context.Context, dir, recipe string) ([]string, error) {
	mod, err := moduleDir(ctx)
	if err != nil {
		return nil, err
	}
	src, err := sourceHash(ctx, mod, g.Packages)
	if err != nil {
		return nil, err
	}
	if g.recipe(src) != recipe {
		return nil, fmt.Errorf("the %s source in %s is not the source this build of strictgrade expects (in its own source tree, run go generate ./internal/images)", g.ImageName, mod)
	}
	return g.build(ctx, mod, dir)
}

// Build implements Image.
func (g GoBinaries) Build(ctx context.Context, s Store, recipe string, progress io.Writer) (string, error) {
	dir, err := os.MkdirTemp("", "strictgrade-gobin-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(progress, "images: compiling %s\n", strings.Join(g.Packages, " "))
	names, err := g.Binaries(ctx, dir, recipe)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := scratchTar(&buf, dir, slices.Sorted(slices.Values(names))); err != nil {
		return "", err
	}
	spec := engine.ImportSpec{Name: g.ImageName, Recipe: recipe, Env: []string{"PATH=/bin"}}
	l, ok := s.(loader)
	if !ok {
		fmt.Fprintf(progress, "images: importing %d binaries (%d KiB)\n", len(names), buf.Len()>>10)
		return s.ImportImage(ctx, &buf, spec)
	}
	archive, ref, err := imageArchive(buf.Bytes(), spec)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "images: loading %d binaries (%d KiB) as %s\n", len(names), buf.Len()>>10, ref)
	return l.LoadImage(ctx, bytes.NewReader(archive), ref)
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
	// The mount points of a sandbox under sginit (ADR 0016), root's.
	made := map[string]bool{"bin": true, "tmp": true}
	mkdirs := func(name string) error {
		parts := strings.Split(name, "/")
		for i := range parts {
			d := strings.Join(parts[:i+1], "/")
			if made[d] {
				continue
			}
			made[d] = true
			if err := tw.WriteHeader(dirHdr(d, 0, 0o755)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range engine.MountPointDirs {
		if err := mkdirs(strings.TrimPrefix(d, "/")); err != nil {
			return err
		}
	}
	for _, f := range engine.MountPointFiles {
		name := strings.TrimPrefix(f, "/")
		if err := mkdirs(path.Dir(name)); err != nil {
			return err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, ModTime: epoch, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
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
