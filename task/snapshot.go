package task

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/tarball"
)

// snapshot is a task directory as Load read it: the canonical archive the
// digest covers, and indexes into it. It is never changed after Load.
type snapshot struct {
	archive []byte
	digest  string
	dirs    map[string]bool
	// files holds the regular files outside public/ by their path in the
	// task directory; public/ is only ever handed on whole.
	files map[string][]byte
	// hidden holds the files below hidden/, by their path relative to it.
	hidden map[string][]byte
	// public is the canonical archive of public/, entries relative to it.
	public []byte
}

// takeSnapshot reads the directory at abs through the firewall into a
// snapshot.
func takeSnapshot(ctx context.Context, abs string) (*snapshot, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarball.WriteDir(pw, abs, nil)) }()
	defer pr.Close()
	var buf bytes.Buffer
	man, err := firewall.Filter(ctx, pr, &buf, taskPolicy)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, abs, err)
	}
	s := &snapshot{archive: buf.Bytes(), digest: man.ArchiveSHA256, dirs: map[string]bool{},
		files: map[string][]byte{}, hidden: map[string][]byte{}}
	for _, d := range man.Dirs {
		s.dirs[d] = true
	}
	tr := tar.NewReader(bytes.NewReader(s.archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("task: read the snapshot: %w", err)
		}
		if h.Typeflag != tar.TypeReg || under(h.Name, PublicDir) {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("task: read the snapshot: %w", err)
		}
		s.files[h.Name] = data
		if rel, ok := strings.CutPrefix(h.Name, HiddenDir+"/"); ok {
			s.hidden[rel] = data
		}
	}
	// The public files, rerooted and filtered again so that the result is
	// canonical too.
	pr, pw = io.Pipe()
	go func() {
		pw.CloseWithError(tarball.Rewrite(pw, bytes.NewReader(s.archive), func(h *tar.Header) bool {
			name, ok := strings.CutPrefix(h.Name, PublicDir+"/")
			// A name that shrank may no longer need the PAX path record
			// the canonical header held it in.
			h.Name, h.Format = name, tar.FormatUnknown
			delete(h.PAXRecords, "path")
			return ok && name != ""
		}))
	}()
	defer pr.Close()
	var public bytes.Buffer
	if _, err := firewall.Filter(ctx, pr, &public, taskPolicy); err != nil {
		return nil, fmt.Errorf("task: reroot the public files: %w", err)
	}
	s.public = public.Bytes()
	return s, nil
}

// under reports whether the archive entry name is dir or lies below it.
func under(name, dir string) bool {
	name = strings.TrimSuffix(name, "/")
	return name == dir || strings.HasPrefix(name, dir+"/")
}

// file returns the regular file at name (outside public/), refusing one
// larger than limit.
func (s *snapshot) file(name string, limit int) ([]byte, error) {
	data, ok := s.files[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s is missing or not a regular file", ErrInvalid, name)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInvalid, name, limit)
	}
	return data, nil
}

// narrow writes the entries of the archive at or below dir, as they are.
func (s *snapshot) narrow(w io.Writer, dir string) error {
	return tarball.Rewrite(w, bytes.NewReader(s.archive), func(h *tar.Header) bool {
		return under(h.Name, dir)
	})
}
