// Command gencorpus writes the firewall's breakout corpus: one .tar file per
// case of package breakout and cases.json listing each case with its
// expected decision. Run it through go generate in the firewall directory.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strictgrade/strictgrade/firewall/internal/breakout"
)

func main() {
	out := flag.String("out", "testdata/breakout", "directory to write the corpus to")
	flag.Parse()
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	files, err := breakout.Files()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Remove stale archives so renamed cases do not linger.
	old, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if _, ok := files[filepath.Base(f)]; !ok {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
