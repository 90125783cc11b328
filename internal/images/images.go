package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/strictgrade/strictgrade/internal/engine"
)

// Store is the part of the engine that images need.
type Store interface {
	FindImage(ctx context.Context, name, recipe string) (engine.ImageInfo, bool, error)
	ImportImage(ctx context.Context, rootfs io.Reader, spec engine.ImportSpec) (string, error)
}

// Image is a buildable image.
type Image interface {
	// Name is the logical image name, e.g. "python".
	Name() string
	// Recipe returns the hash that identifies what Build would produce.
	// It may do cheap work (compiling Go binaries is cached by the go
	// command) but must not touch the daemon.
	Recipe(ctx context.Context) (string, error)
	// Build produces the image and returns its ID.
	Build(ctx context.Context, s Store, recipe string, progress io.Writer) (string, error)
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
