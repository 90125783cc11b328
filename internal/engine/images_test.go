//go:build engine

package engine_test

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"

	"github.com/strictgrade/strictgrade/internal/engine"
)

// TestFindImageWantsItsTag: an image made from a built one (here a
// commit of a container of it) carries the same name and recipe labels;
// FindImage still returns the built image, and once that is gone, none,
// rather than the derived image.
func TestFindImageWantsItsTag(t *testing.T) {
	ctx := t.Context()
	cli := dockerClient(t)
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "marker", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	recipe := hex.EncodeToString(nonce)
	const name = "findtest"
	id, err := eng.ImportImage(ctx, &layer, engine.ImportSpec{Name: name, Recipe: recipe})
	if err != nil {
		t.Fatal(err)
	}
	ref := engine.ImageRef(name, recipe)
	var derived string
	t.Cleanup(func() {
		for _, r := range []string{derived, ref, id} {
			if r != "" {
				_, _ = cli.ImageRemove(ctx, r, image.RemoveOptions{Force: true, PruneChildren: true})
			}
		}
	})

	// A container of it, committed: the new image inherits the labels.
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: id, Cmd: []string{"/none"}}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	commit, err := cli.ContainerCommit(ctx, c.ID, container.CommitOptions{Config: &container.Config{Entrypoint: []string{"/other"}}})
	_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	derived = commit.ID
	ins, err := cli.ImageInspect(ctx, derived)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Config == nil || ins.Config.Labels[engine.LabelRecipe] != recipe {
		t.Fatalf("the derived image does not carry the recipe label: %+v", ins.Config)
	}

	info, ok, err := eng.FindImage(ctx, name, recipe)
	if err != nil || !ok || info.ID != id {
		t.Errorf("FindImage with both present: %+v %v %v, want %s", info, ok, err, id)
	}
	// The built image untagged (it stays as the derived one's parent).
	if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	info, ok, err = eng.FindImage(ctx, name, recipe)
	if err != nil || ok {
		t.Errorf("FindImage with only the derived image: %+v %v %v, want none", info, ok, err)
	}
}
