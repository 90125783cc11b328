package cli

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the tests a cache directory of their own, so that the
// baselines task check records neither come from nor land in the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strictgrade-cli-cache-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(cacheEnv, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
