package kubernetes

import (
	"archive/tar"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// loadScript is the init container's program (see load.py's header).
//
//go:embed load.py
var loadScript string

// writeLoad writes the loader's input: for each mount i, the entries of
// its volume's archives in order, renamed below "m<i>/", as one tar
// stream. The archives are the firewall's canonical output; an entry that
// is not a directory or a regular file is refused here too.
func writeLoad(w io.Writer, mounts [][]string) error {
	tw := tar.NewWriter(w)
	for i, archives := range mounts {
		prefix := "m" + strconv.Itoa(i) + "/"
		for _, path := range archives {
			if err := copyRenamed(tw, path, prefix); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

func copyRenamed(tw *tar.Writer, path, prefix string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("kubernetes: volume archive: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kubernetes: volume archive %s: %w", path, err)
		}
		if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
			return fmt.Errorf("kubernetes: volume archive %s: entry %q of type %q", path, h.Name, h.Typeflag)
		}
		name := strings.TrimPrefix(h.Name, "./")
		out := &tar.Header{Typeflag: h.Typeflag, Name: prefix + name, Mode: h.Mode & 0o755, Size: h.Size, Format: tar.FormatPAX}
		if h.Typeflag == tar.TypeDir {
			out.Size = 0
		}
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.CopyN(tw, tr, h.Size); err != nil {
				return err
			}
		}
	}
}
