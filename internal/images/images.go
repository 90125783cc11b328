package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/strictgrade/strictgrade/internal/engine"
)

// ErrMissing reports that no image with the expected recipe exists.
var ErrMissing = errors.New("images: image missing")

// Finder finds an image by its name and recipe: all that resolving needs.
type Finder interface {
	FindImage(ctx context.Context, name, recipe string) (engine.ImageInfo, bool, error)
}

// Store is the part of the engine that building needs.
type Store interface {
	Finder
	ImportImage(ctx context.Context, rootfs io.Reader, spec engine.ImportSpec) (string, error)
}

// Image is a buildable image.
type Image interface {
	// Name is the logical image name, e.g. "python".
	Name() string
	// Recipe returns the hash that identifies what Build would produce.
	// It never touches the daemon, and for the images a controller
	// resolves (Python, Judge) it runs nothing at all: no Go toolchain,
	// no source tree.
	Recipe(ctx context.Context) (string, error)
	// Build produces the image and returns its ID.
	Build(ctx context.Context, s Store, recipe string, progress io.Writer) (string, error)
}

// Resolve returns the ID of img's image with the current recipe, or an
// error wrapping ErrMissing. It never builds.
func Resolve(ctx context.Context, f Finder, img Image) (string, error) {
	recipe, err := img.Recipe(ctx)
	if err != nil {
		return "", fmt.Errorf("images: %s recipe: %w", img.Name(), err)
	}
	info, ok, err := f.FindImage(ctx, img.Name(), recipe)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: no %s image with recipe %s", ErrMissing, img.Name(), recipe[:12])
	}
	return info.ID, nil
}

// Ensure returns the ID of img's image, building it when no image with the
// current recipe exists. Progress goes to progress (may be io.Discard).
func Ensure(ctx context.Context, s Store, img Image, progress io.Writer) (string, error) {
	recipe, err := img.Recipe(ctx)
	if err != nil {
		return "", fmt.Errorf("images: %s recipe: %w", img.Name(), err)
	}
	info, ok, err := s.FindImage(ctx, img.Name(), recipe)
	if err != nil {
		return "", err
	}
	if ok {
		fmt.Fprintf(progress, "images: %s is up to date (%s)\n", img.Name(), short(info.ID))
		return info.ID, nil
	}
	fmt.Fprintf(progress, "images: building %s (recipe %s)\n", img.Name(), recipe[:12])
	id, err := img.Build(ctx, s, recipe, progress)
	if err != nil {
		return "", fmt.Errorf("images: build %s: %w", img.Name(), err)
	}
	fmt.Fprintf(progress, "images: built %s as %s\n", img.Name(), short(id))
	return id, nil
}

func short(id string) string {
	if len(id) > 19 {
		return id[:19]
	}
	return id
}

// hashJSON returns the hex sha256 of v's JSON encoding.
func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called on plain structs
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Ref returns the reference img's image with the current recipe is tagged
// with when built here, "strictgrade/NAME:RECIPE12": how a backend that
// finds no images by recipe (a cluster the images were loaded into) is
// told which one to run.
func Ref(ctx context.Context, img Image) (string, error) {
	recipe, err := img.Recipe(ctx)
	if err != nil {
		return "", fmt.Errorf("images: %s recipe: %w", img.Name(), err)
	}
	return engine.ImageRef(img.Name(), recipe), nil
}
