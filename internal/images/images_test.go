package images

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/strictgrade/strictgrade/internal/engine"
)

// store is a fake Store that records what it was asked.
type store struct {
	have    map[string]string // name+" "+recipe -> ID
	imports int
}

func (s *store) FindImage(_ context.Context, name, recipe string) (engine.ImageInfo, bool, error) {
	id, ok := s.have[name+" "+recipe]
	return engine.ImageInfo{ID: id, Name: name, Recipe: recipe}, ok, nil
}

func (s *store) ImportImage(context.Context, io.Reader, engine.ImportSpec) (string, error) {
	s.imports++
	return "", errors.New("no builds here")
}

func TestResolve(t *testing.T) {
	recipe, err := Python{}.Recipe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		have    map[string]string
		want    string
		missing bool
	}{
		{"present", map[string]string{"python " + recipe: "sha256:abc"}, "sha256:abc", false},
		{"absent", nil, "", true},
		{"other recipe", map[string]string{"python 0123456789abcdef": "sha256:old"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &store{have: tt.have}
			id, err := Resolve(t.Context(), s, Python{})
			if got := errors.Is(err, ErrMissing); got != tt.missing {
				t.Fatalf("Resolve error %v, missing %v", err, tt.missing)
			}
			if tt.missing && !strings.Contains(err.Error(), recipe[:12]) {
				t.Errorf("error %q does not name the recipe", err)
			}
			if id != tt.want {
				t.Errorf("ID %q, want %q", id, tt.want)
			}
			if s.imports != 0 {
				t.Errorf("Resolve imported %d images", s.imports)
			}
		})
	}
}
