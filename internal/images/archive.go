package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	goruntime "runtime"
	"time"

	"github.com/strictgrade/strictgrade/internal/engine"
)

// loader loads an image archive whose configuration it keeps, so the
// same archive is the same image ID everywhere (engine.Docker).
type loader interface {
	LoadImage(ctx context.Context, archive io.Reader, ref string) (string, error)
}

// imageArchive wraps a root filesystem layer into an image archive in the
// format of docker save, with a configuration that holds no time and no
// builder detail: the same layer and spec give the same bytes, hence the
// same image ID. It returns the archive and the reference it tags.
func imageArchive(layer []byte, spec engine.ImportSpec) ([]byte, string, error) {
	ref := engine.ImageRef(spec.Name, spec.Recipe)
	labels := map[string]string{engine.LabelImage: spec.Name, engine.LabelRecipe: spec.Recipe}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	layerSum := sha256.Sum256(layer)
	layerHex := hex.EncodeToString(layerSum[:])
	epoch := time.Unix(0, 0).UTC()
	config, err := json.Marshal(map[string]any{
		"architecture": goruntime.GOARCH,
		"os":           "linux",
		"created":      epoch,
		"config":       map[string]any{"Env": spec.Env, "Labels": labels},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerHex}},
		"history":      []map[string]any{{"created": epoch, "created_by": "strictgrade images"}},
	})
	if err != nil {
		return nil, "", err
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{
		"Config": configName, "RepoTags": []string{ref}, "Layers": []string{layerHex + "/layer.tar"},
	}})
	if err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{layerHex + "/layer.tar", layer}, {configName, config}, {"manifest.json", manifest}} {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), ref, nil
}
