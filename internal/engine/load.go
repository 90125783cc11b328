package engine

import (
	"context"
	"encoding/json"
	"errors"
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
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", fmt.Errorf("engine: load image: reading progress: %w", err)
		}
		if msg.Error != "" {
			return "", fmt.Errorf("engine: load image: %s", msg.Error)
		}
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			return "", fmt.Errorf("engine: load image: %s", msg.ErrorDetail.Message)
		}
	}
	return d.ImageID(ctx, ref)
}
