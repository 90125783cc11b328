package firewall_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/strictgrade/strictgrade/firewall"
)

// The benchmark archives: one 64 MiB file, and 10,000 small files (0-2 KiB,
// about 1 KiB on average) in 100 directories.
var benchArchives = sync.OnceValue(func() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	write := func(fn func(tw *tar.Writer)) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		fn(tw)
		if err := tw.Close(); err != nil {
			panic(err)
		}
		return b.Bytes()
	}
	large := write(func(tw *tar.Writer) {
		data := random(64 << 20)
		tw.WriteHeader(&tar.Header{Name: "large.bin", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))})
		tw.Write(data)
	})
	small := write(func(tw *tar.Writer) {
		pool := random(4 << 10)
		for d := range 100 {
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("dir%03d/", d), Typeflag: tar.TypeDir, Mode: 0o755})
			for f := range 100 {
				n := rng.IntN(2 << 10)
				off := rng.IntN(len(pool) - n)
				tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("dir%03d/file%03d.txt", d, f), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(n)})
				tw.Write(pool[off : off+n])
			}
		}
	})
	return map[string][]byte{"large": large, "small": small}
})

var benchPolicy = firewall.Policy{MaxEntries: 20_000, MaxFileBytes: 128 << 20, MaxTotalBytes: 1 << 30, MaxInputBytes: 1 << 30}

// BenchmarkFilter measures the firewall: parse, check, re-emit, hash every
// file and the canonical archive.
func BenchmarkFilter(b *testing.B) {
	for _, name := range []string{"large", "small"} {
		b.Run(name, func(b *testing.B) {
			data := benchArchives()[name]
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := firewall.Filter(b.Context(), bytes.NewReader(data), io.Discard, benchPolicy); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlainRewrite is the baseline: archive/tar reads each entry and
// writes it back unchanged, with no checks and no hashing.
func BenchmarkPlainRewrite(b *testing.B) {
	for _, name := range []string{"large", "small"} {
		b.Run(name, func(b *testing.B) {
			data := benchArchives()[name]
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := plainRewrite(data, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlainRewriteSHA256 is the plain rewrite plus the two SHA-256
// passes the manifest needs (each file, the whole output): the floor for
// any firewall that produces the manifest.
func BenchmarkPlainRewriteSHA256(b *testing.B) {
	for _, name := range []string{"large", "small"} {
		b.Run(name, func(b *testing.B) {
			data := benchArchives()[name]
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := plainRewrite(data, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func plainRewrite(data []byte, hash bool) error {
	var w io.Writer = io.Discard
	archive := sha256.New()
	if hash {
		w = archive
	}
	tr := tar.NewReader(bytes.NewReader(data))
	tw := tar.NewWriter(w)
	file := sha256.New()
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		var dst io.Writer = tw
		if hash {
			file.Reset()
			dst = io.MultiWriter(tw, file)
		}
		if _, err := io.Copy(dst, tr); err != nil {
			return err
		}
		if hash {
			file.Sum(nil)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	archive.Sum(nil)
	return nil
}
