package firewall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Extract filters r like Filter and materialises the accepted tree into dir,
// which must be an existing, empty directory. Every path is opened through an
// os.Root on dir, so nothing is created outside it; directories are created
// with Mkdir and files with O_CREATE|O_EXCL (never following a symlink, never
// replacing anything), and their permissions are set through the open file
// descriptor (0755 or 0644, whatever the umask). Modification times are
// those of the extraction.
//
// On rejection, or any other error, what was created is removed and dir is
// left empty. Use a fresh directory per archive, and one that no other
// process can write to.
func Extract(ctx context.Context, r io.Reader, dir string, p Policy) (m *Manifest, err error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("firewall: extract: %w", err)
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("firewall: extract: %w", err)
	}
	names, err := d.Readdirnames(1)
	d.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("firewall: extract: %w", err)
	}
	if len(names) > 0 {
		return nil, fmt.Errorf("firewall: extract: %s is not empty", dir)
	}
	ex := &extractor{root: root}
	defer func() {
		if err != nil {
			if cerr := ex.cleanup(); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()
	return run(ctx, r, nil, ex, p)
}

// extractor creates the canonical entries under root as they are emitted.
type extractor struct {
	root *os.Root
	f    *os.File
	top  []string // top-level names created, for cleanup
}

func (x *extractor) mkdir(p string) error {
	if err := x.root.Mkdir(p, modeDir); err != nil {
		return fmt.Errorf("firewall: extract: %w", err)
	}
	x.created(p)
	d, err := x.root.Open(p)
	if err != nil {
		return fmt.Errorf("firewall: extract: %w", err)
	}
	err = d.Chmod(modeDir)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("firewall: extract: %w", err)
	}
	return nil
}

func (x *extractor) create(p string, mode fs.FileMode) error {
	f, err := x.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("firewall: extract: %w", err)
	}
	x.created(p)
	x.f = f
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("firewall: extract: %w", err)
	}
	return nil
}

func (x *extractor) write(b []byte) error {
	if _, err := x.f.Write(b); err != nil {
		return fmt.Errorf("firewall: extract: %w", err)
	}
	return nil
}

func (x *extractor) closeFile() error {
	f := x.f
	x.f = nil
	if err := f.Close(); err != nil {
		return fmt.Errorf("firewall: extract: %w", err)
	}
	return nil
}

func (x *extractor) created(p string) {
	if !strings.Contains(p, "/") {
		x.top = append(x.top, p)
	}
}

// cleanup removes everything created, leaving the directory empty.
func (x *extractor) cleanup() error {
	var errs []error
	if x.f != nil {
		x.f.Close()
		x.f = nil
	}
	for i := len(x.top) - 1; i >= 0; i-- {
		if err := x.root.RemoveAll(x.top[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("firewall: extract: cleanup: %w", errors.Join(errs...))
	}
	return nil
}
