//go:build engine

package controller_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/schema"
)

// singleRunner is the single-container alternative: the candidate and the
// checks in one process, in one hardened container.
const singleRunner = `
import json, sys
sys.path.insert(0, "/work")
cases = json.load(open("/work/cases.json"))
from solution import solve
ok = all(solve(*c["args"]) == c["expected"] for c in cases)
print("PASS" if ok else "FAIL")
`

// BenchmarkGradeSum grades examples/sum's honest solution with the strict
// tier and with the single-container alternative, side by side.
func BenchmarkGradeSum(b *testing.B) {
	tk := loadTask(b, "sum")
	honest := filepath.Join("..", "examples", "sum", "solutions", "honest")
	b.Run("strict", func(b *testing.B) {
		for b.Loop() {
			res, err := ctrl.Grade(b.Context(), tk, controller.Submission{Dir: honest})
			if err != nil || res.Verdict.Outcome != schema.OutcomePass {
				b.Fatal(err, res.Verdict.Outcome)
			}
		}
	})
	b.Run("single-container", func(b *testing.B) {
		img, err := images.Ensure(b.Context(), eng, images.Python{}, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		archive := singleArchive(b, tk.Cases.Cases, filepath.Join(honest, "solution.py"))
		for b.Loop() {
			if out := singleGrade(b.Context(), b, img, archive); out != "PASS" {
				b.Fatalf("single-container grade said %q", out)
			}
		}
	})
}

func singleArchive(b testing.TB, cases any, solution string) []byte {
	sol, err := os.ReadFile(solution)
	if err != nil {
		b.Fatal(err)
	}
	casesJSON, err := json.Marshal(cases)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range map[string][]byte{"solution.py": sol, "cases.json": casesJSON, "runner.py": []byte(singleRunner)} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(data)
	}
	_ = tw.Close()
	return buf.Bytes()
}

func singleGrade(ctx context.Context, b testing.TB, img string, archive []byte) string {
	run := "bench-single"
	vol, _, err := eng.NewVolumeWith(ctx, run, "work", bytes.NewReader(archive), engine.CopyInOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.RemoveVolume(context.WithoutCancel(ctx), vol)
	res, err := eng.Run(ctx, engine.Spec{Run: run, Phase: "single", Image: img, Cmd: []string{"python3", "-I", "/work/runner.py"},
		Mounts: []engine.Mount{{Volume: vol, Target: "/work", ReadOnly: true}}})
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(res.Stdout))
}

// BenchmarkThroughput reports strict-tier grades per minute of
// examples/sum with 1, 2 and 4 grades in flight.
func BenchmarkThroughput(b *testing.B) {
	tk := loadTask(b, "sum")
	honest := filepath.Join("..", "examples", "sum", "solutions", "honest")
	for _, inFlight := range []int{1, 2, 4} {
		b.Run("inflight-"+itoa(inFlight), func(b *testing.B) {
			start := time.Now()
			total := b.N * inFlight
			var wg sync.WaitGroup
			errs := make(chan error, inFlight)
			for w := range inFlight {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for range b.N {
						res, err := ctrl.Grade(b.Context(), tk, controller.Submission{Dir: honest})
						if err != nil || res.Verdict.Outcome != schema.OutcomePass {
							errs <- err
							return
						}
					}
				}(w)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(total)/time.Since(start).Minutes(), "grades/min")
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
