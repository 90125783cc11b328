package proofmatrix

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/strictgrade/strictgrade/proofmatrix/internal/wasmcheck"
)

var updateChecker = flag.Bool("update-checker", false, "write tasks/checked/hidden/checker.wasm from wasmcheck.Module")

// TestCheckerModuleCommitted holds the pm-checked task's checker to the
// code that assembles it (go test ./proofmatrix -run TestCheckerModuleCommitted
// -update-checker writes it again).
func TestCheckerModuleCommitted(t *testing.T) {
	const path = "tasks/checked/hidden/checker.wasm"
	want := wasmcheck.Module()
	if *updateChecker {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what wasmcheck.Module assembles: run with -update-checker", path)
	}
}
