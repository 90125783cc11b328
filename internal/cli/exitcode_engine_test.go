//go:build engine

package cli

func init() { withEngine = true }
