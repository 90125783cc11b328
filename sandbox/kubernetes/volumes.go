package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/sandbox"
)

// volumeStore keeps host-side volumes: a directory per volume holding
// record.json and the canonical archives 0.tar, 1.tar … in the order they
// were copied in.
type volumeStore struct {
	dir string
	mu  sync.Mutex
}

// volumeRecord is a volume's labels and owner.
type volumeRecord struct {
	Run     string            `json:"run"`
	Phase   string            `json:"phase"`
	Created time.Time         `json:"created"`
	Owner   map[string]string `json:"owner"`
}

func openVolumeStore(dir string) (*volumeStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &volumeStore{dir: dir}, nil
}

// validVolumeName is the shape of every name the store hands out.
func validVolumeName(name string) bool {
	return sandbox.ValidName(strings.TrimPrefix(name, "sgv-")) && strings.HasPrefix(name, "sgv-") && len(name) <= 100
}

func (s *volumeStore) path(name string) string { return filepath.Join(s.dir, name) }

func (s *volumeStore) create(run, phase string) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "sgv-" + hex.EncodeToString(b[:])
	dir := s.path(name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("kubernetes: create volume: %w", err)
	}
	rec, _ := json.Marshal(volumeRecord{Run: run, Phase: phase, Created: time.Now().UTC(), Owner: self()})
	if err := os.WriteFile(filepath.Join(dir, "record.json"), rec, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("kubernetes: create volume: %w", err)
	}
	return name, nil
}

func (s *volumeStore) record(name string) (volumeRecord, error) {
	var rec volumeRecord
	b, err := os.ReadFile(filepath.Join(s.path(name), "record.json"))
	if err != nil {
		return rec, err
	}
	return rec, json.Unmarshal(b, &rec)
}

// lostFile, in a volume's directory, says why its content is unknown: a
// pod that mounted it writable did not end in a way that let its content
// be read back (see markLost).
const lostFile = "lost"

// markLost records that a volume's content is unknown, and why, until
// replace gives it content again. A pod that mounts a volume writable
// marks it before its workload starts, so that every way the pod can end
// but a clean read-back leaves it so.
func (s *volumeStore) markLost(name, why string) error {
	if !validVolumeName(name) {
		return fmt.Errorf("%w: volume %q", sandbox.ErrSpec, name)
	}
	if err := os.WriteFile(filepath.Join(s.path(name), lostFile), []byte(why), 0o600); err != nil {
		return fmt.Errorf("kubernetes: volume %s: %w", name, err)
	}
	return nil
}

// archives lists a volume's archives in order; a volume marked lost is an
// error that says why.
func (s *volumeStore) archives(name string) ([]string, int64, error) {
	if !validVolumeName(name) {
		return nil, 0, fmt.Errorf("%w: volume %q", sandbox.ErrSpec, name)
	}
	ents, err := os.ReadDir(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("%w: no volume %q", sandbox.ErrSpec, name)
	}
	if err != nil {
		return nil, 0, err
	}
	if why, err := os.ReadFile(filepath.Join(s.path(name), lostFile)); err == nil {
		return nil, 0, fmt.Errorf("kubernetes: volume %s has no known content: %s", name, why)
	}
	type arc struct {
		n    int
		path string
	}
	var as []arc
	var total int64
	for _, e := range ents {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".tar"))
		if err != nil || !strings.HasSuffix(e.Name(), ".tar") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, 0, err
		}
		total += info.Size()
		as = append(as, arc{n, filepath.Join(s.path(name), e.Name())})
	}
	sort.Slice(as, func(i, j int) bool { return as[i].n < as[j].n })
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.path
	}
	return out, total, nil
}

// add filters archive through the firewall into the volume's next
// archive; a rejected archive leaves nothing.
func (s *volumeStore) add(ctx context.Context, name string, archive io.Reader, pol firewall.Policy) (*firewall.Manifest, error) {
	existing, _, err := s.archives(name)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(s.path(name), "incoming-*")
	if err != nil {
		return nil, fmt.Errorf("kubernetes: staging file: %w", err)
	}
	defer os.Remove(tmp.Name())
	man, err := firewall.Filter(ctx, archive, tmp, pol)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Numbered after every archive there now, not only those seen above.
	existing, _, err = s.archives(name)
	if err != nil {
		return nil, err
	}
	final := filepath.Join(s.path(name), strconv.Itoa(len(existing))+".tar")
	if err := os.Rename(tmp.Name(), final); err != nil {
		return nil, fmt.Errorf("kubernetes: store archive: %w", err)
	}
	return man, nil
}

// replace makes what fill writes, a canonical archive from the
// firewall, the volume's whole content: the archives it held go, and so
// does a lost mark. When fill fails nothing changes.
func (s *volumeStore) replace(name string, fill func(w io.Writer) error) error {
	if !validVolumeName(name) {
		return fmt.Errorf("%w: volume %q", sandbox.ErrSpec, name)
	}
	tmp, err := os.CreateTemp(s.path(name), "incoming-*")
	if err != nil {
		return fmt.Errorf("kubernetes: staging file: %w", err)
	}
	defer os.Remove(tmp.Name())
	err = fill(tmp)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ents, err := os.ReadDir(s.path(name))
	if err != nil {
		return fmt.Errorf("kubernetes: volume %s: %w", name, err)
	}
	// The older archives go, then the new one takes their place, then
	// the mark: a crash between two steps leaves a volume marked lost
	// (as the pod that wrote it marked it), never a mixed one.
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tar") {
			if err := os.Remove(filepath.Join(s.path(name), e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("kubernetes: volume %s: %w", name, err)
			}
		}
	}
	if err := os.Rename(tmp.Name(), filepath.Join(s.path(name), "0.tar")); err != nil {
		return fmt.Errorf("kubernetes: store archive: %w", err)
	}
	if err := os.Remove(filepath.Join(s.path(name), lostFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("kubernetes: volume %s: %w", name, err)
	}
	return nil
}

func (s *volumeStore) remove(name string) error {
	if !validVolumeName(name) {
		return fmt.Errorf("%w: volume %q", sandbox.ErrSpec, name)
	}
	if err := os.RemoveAll(s.path(name)); err != nil {
		return fmt.Errorf("kubernetes: remove volume: %w", err)
	}
	return nil
}

// list returns every volume's name and record, for Leftovers and GC.
func (s *volumeStore) list() (map[string]volumeRecord, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	out := map[string]volumeRecord{}
	for _, e := range ents {
		if !e.IsDir() || !validVolumeName(e.Name()) {
			continue
		}
		rec, err := s.record(e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile, or being created
		}
		if err != nil {
			return nil, fmt.Errorf("kubernetes: volume %s: %w", e.Name(), err)
		}
		out[e.Name()] = rec
	}
	return out, nil
}

func checkRunPhase(run, phase string) error {
	if !sandbox.ValidName(run) || !sandbox.ValidName(phase) {
		return fmt.Errorf("%w: run and phase must be [a-z0-9-] of at most 64 bytes", sandbox.ErrSpec)
	}
	return checkLabelValues(run, phase)
}

// NewVolume implements sandbox.Volumes: an empty host-side volume.
func (b *Backend) NewVolume(ctx context.Context, run, phase string) (string, error) {
	if err := checkRunPhase(run, phase); err != nil {
		return "", err
	}
	return b.vols.create(run, phase)
}

// NewVolumeWith implements sandbox.Volumes; a rejected archive creates
// nothing.
func (b *Backend) NewVolumeWith(ctx context.Context, run, phase string, archive io.Reader, opts sandbox.CopyInOptions) (string, *firewall.Manifest, error) {
	name, err := b.NewVolume(ctx, run, phase)
	if err != nil {
		return "", nil, err
	}
	man, err := b.vols.add(ctx, name, archive, opts.Policy)
	if err != nil {
		_ = b.vols.remove(name)
		return "", nil, err
	}
	return name, man, nil
}

// CopyIn implements sandbox.Volumes: archive's canonical form is laid out
// at the volume's root after what is there, replacing files of the same
// name. Every file in a pod is owned by the sandbox user (the loader runs
// as it), Writable or not: the read-only mount is what keeps the workload
// from changing it.
func (b *Backend) CopyIn(ctx context.Context, run, volume string, archive io.Reader, opts sandbox.CopyInOptions) (*firewall.Manifest, error) {
	if !sandbox.ValidName(run) {
		return nil, fmt.Errorf("%w: run must be [a-z0-9-] of at most 64 bytes", sandbox.ErrSpec)
	}
	return b.vols.add(ctx, volume, archive, opts.Policy)
}

// RemoveVolume implements sandbox.Volumes; a missing volume is not an
// error.
func (b *Backend) RemoveVolume(ctx context.Context, name string) error {
	return b.vols.remove(name)
}
