package engine

import (
	"context"
	"fmt"
	"io"

	"github.com/docker/docker/client"
)

// LoadImage loads an image archive in the format of docker save (trusted,
// made on the host) and returns the ID ref then resolves to. Unlike
// ImportImage, the image's configuration is the archive's own, so the same
// archive is the same image ID on every daemon.
func (d *Docker) LoadImage(ctx context.Context, archive io.Reader, ref string) (string, error) {
	resp, err := d.cli.ImageLoad(ctx, archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		return "", fmt.Errorf("engine: load image: %w", err)
	}
	defer resp.Body.Close()
	if _, err := readProgress(resp.Body, "load image"); err != nil {
		return "", err
	}
	return d.ImageID(ctx, ref)
}
