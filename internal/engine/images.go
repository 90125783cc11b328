package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/errdefs"
)

// ImageInfo describes a strictgrade-built image.
type ImageInfo struct {
	ID      string
	Name    string // logical name (LabelImage)
	Recipe  string // recipe hash (LabelRecipe)
	Tags    []string
	Size    int64
	Created time.Time
}

// FindImage returns the image built from the named recipe, if present:
// the one tagged with ImageRef. Labels alone do not name it: an image
// made from it (a docker commit, a Dockerfile's FROM) inherits them, and
// must not take its place.
func (d *Docker) FindImage(ctx context.Context, name, recipe string) (ImageInfo, bool, error) {
	if len(recipe) < 12 {
		return ImageInfo{}, false, fmt.Errorf("%w: recipe %q", ErrSpec, recipe)
	}
	f := filters.NewArgs(
		filters.Arg("label", LabelImage+"="+name),
		filters.Arg("label", LabelRecipe+"="+recipe),
	)
	list, err := d.cli.ImageList(ctx, image.ListOptions{Filters: f})
	if err != nil {
		return ImageInfo{}, false, fmt.Errorf("engine: list images: %w", err)
	}
	ref := ImageRef(name, recipe)
	for _, s := range list {
		if slices.Contains(s.RepoTags, ref) {
			return summaryInfo(s.ID, s.Labels, s.RepoTags, s.Size, s.Created), true, nil
		}
	}
	return ImageInfo{}, false, nil
}

// ImageRef is the reference an image built from recipe is tagged with:
// strictgrade/NAME:RECIPE[:12].
func ImageRef(name, recipe string) string {
	return "strictgrade/" + name + ":" + recipe[:min(12, len(recipe))]
}

// ListImages returns every image carrying strictgrade's image label.
func (d *Docker) ListImages(ctx context.Context) ([]ImageInfo, error) {
	list, err := d.cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelImage))})
	if err != nil {
		return nil, fmt.Errorf("engine: list images: %w", err)
	}
	out := make([]ImageInfo, 0, len(list))
	for _, s := range list {
		out = append(out, summaryInfo(s.ID, s.Labels, s.RepoTags, s.Size, s.Created))
	}
	slices.SortFunc(out, func(a, b ImageInfo) int { return strings.Compare(a.Name+a.ID, b.Name+b.ID) })
	return out, nil
}

func summaryInfo(id string, labels map[string]string, tags []string, size, created int64) ImageInfo {
	return ImageInfo{
		ID: id, Name: labels[LabelImage], Recipe: labels[LabelRecipe],
		Tags: slices.Clone(tags), Size: size, Created: time.Unix(created, 0).UTC(),
	}
}

// ImageID resolves a reference to the image ID the daemon holds.
func (d *Docker) ImageID(ctx context.Context, ref string) (string, error) {
	ins, err := d.cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("engine: inspect image %s: %w", ref, err)
	}
	return ins.ID, nil
}

// ImportSpec describes a root filesystem to import as an image.
type ImportSpec struct {
	Name   string            // logical name, e.g. "python"; becomes LabelImage
	Recipe string            // recipe hash; becomes LabelRecipe and the tag
	Env    []string          // ENV settings of the image
	Labels map[string]string // further labels
}

// ImportImage imports a root filesystem tar (trusted, built on the host) as
// an image tagged strictgrade/NAME:RECIPE[:12] and returns its ID. The
// daemon's progress stream is read to the end and any error in it fails the
// import.
func (d *Docker) ImportImage(ctx context.Context, rootfs io.Reader, spec ImportSpec) (string, error) {
	if !labelSafe(spec.Name) || len(spec.Recipe) < 12 {
		return "", fmt.Errorf("%w: image name %q or recipe %q", ErrSpec, spec.Name, spec.Recipe)
	}
	ref := ImageRef(spec.Name, spec.Recipe)
	lbl := map[string]string{LabelImage: spec.Name, LabelRecipe: spec.Recipe}
	maps.Copy(lbl, spec.Labels)
	var changes []string
	for _, k := range slices.Sorted(maps.Keys(lbl)) {
		changes = append(changes, fmt.Sprintf("LABEL %s=%q", k, lbl[k]))
	}
	for _, e := range spec.Env {
		k, v, ok := strings.Cut(e, "=")
		if !ok {
			return "", fmt.Errorf("%w: image env %q", ErrSpec, e)
		}
		changes = append(changes, fmt.Sprintf("ENV %s=%q", k, v))
	}
	rc, err := d.cli.ImageImport(ctx, image.ImportSource{Source: rootfs, SourceName: "-"}, ref, image.ImportOptions{Changes: changes})
	if err != nil {
		return "", fmt.Errorf("engine: import image: %w", err)
	}
	defer rc.Close()
	last, err := readProgress(rc, "import image")
	if err != nil {
		return "", err
	}
	id, err := d.ImageID(ctx, ref)
	if err != nil {
		return "", err
	}
	if last != "" && strings.HasPrefix(last, "sha256:") && last != id {
		return "", fmt.Errorf("engine: import image: daemon reported %s but %s resolves to %s", last, ref, id)
	}
	return id, nil
}

// readProgress reads a daemon's JSON progress stream to its end and returns
// the last status it reported; an error message in the stream is an error.
func readProgress(r io.Reader, what string) (last string, err error) {
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return last, nil
		} else if err != nil {
			return "", fmt.Errorf("engine: %s: reading progress: %w", what, err)
		}
		if msg.Error != "" {
			return "", fmt.Errorf("engine: %s: %s", what, msg.Error)
		}
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			return "", fmt.Errorf("engine: %s: %s", what, msg.ErrorDetail.Message)
		}
		if msg.Status != "" {
			last = msg.Status
		}
	}
}

// RemoveImage removes an image by ID or reference; missing is not an error.
func (d *Docker) RemoveImage(ctx context.Context, ref string) error {
	_, err := d.cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true})
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("engine: remove image %s: %w", ref, err)
	}
	return nil
}

// loaderTar is the root filesystem of the loader image: one directory,
// owned by the sandbox user, where loaders mount the volume they fill.
func loaderTar() []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeDir, Name: strings.TrimPrefix(loaderMount, "/") + "/", Mode: 0o755,
		Uid: SandboxUID, Gid: SandboxUID, ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR,
	})
	_ = tw.Close()
	return buf.Bytes()
}

// loaderImage returns the loader image's ID, importing it once if needed.
func (d *Docker) loaderImage(ctx context.Context) (string, error) {
	d.loaderM.Lock()
	defer d.loaderM.Unlock()
	if d.loader != "" {
		return d.loader, nil
	}
	fs := loaderTar()
	sum := sha256.Sum256(fs)
	recipe := hex.EncodeToString(sum[:])
	info, ok, err := d.FindImage(ctx, "loader", recipe)
	if err != nil {
		return "", err
	}
	id := info.ID
	if !ok {
		if id, err = d.ImportImage(ctx, bytes.NewReader(fs), ImportSpec{Name: "loader", Recipe: recipe}); err != nil {
			return "", err
		}
	}
	d.loader = id
	return id, nil
}
