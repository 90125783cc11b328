//go:build linux

package firewall_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/firewall/internal/breakout"
)

const rssLimit = 64 << 20

// TestPeakRSS filters a 1 GiB archive and a 200,000-entry archive in a
// child process built without the race detector, fed through a pipe, and
// checks its peak resident set size. The child reports its own high-water
// mark (VmHWM); the ru_maxrss the parent gets from wait4 is logged too, but
// it includes the parent's RSS at the time of the fork (see
// internal/memprobe), so it only bounds the child's peak from above.
func TestPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a child process over 1.2 GB of input")
	}
	probe := buildProbe(t)

	t.Run("1GiB", func(t *testing.T) {
		const files, size = 16, 64 << 20
		policy := fmt.Sprintf(`{"max_file_bytes":%d,"max_total_bytes":%d,"max_input_bytes":%d}`, size, files*size, files*size+(1<<20))
		res := runProbe(t, probe, policy, func(w io.Writer) error {
			chunk := make([]byte, 1<<20)
			for i := range chunk {
				chunk[i] = byte(i*7 + i>>9)
			}
			for i := range files {
				if _, err := w.Write(breakout.Raw{Name: fmt.Sprintf("blob/%02d.bin", i), Size: size}.Block()); err != nil {
					return err
				}
				for range size / len(chunk) {
					binary.LittleEndian.PutUint32(chunk, uint32(i))
					if _, err := w.Write(chunk); err != nil {
						return err
					}
				}
			}
			_, err := w.Write(make([]byte, 1024))
			return err
		})
		require.Equal(t, float64(files), res.summary["files"])
		require.Equal(t, float64(files*size), res.summary["total_bytes"])
		t.Logf("1 GiB archive: peak RSS %.1f MiB (ru_maxrss %.1f MiB), %.2f s CPU", mib(res.hwm), mib(res.maxRSS), res.seconds)
		require.Less(t, res.hwm, int64(rssLimit))
	})

	t.Run("200k-entries", func(t *testing.T) {
		const files, perDir = 200_000, 1000
		policy := `{"max_entries":250000,"max_input_bytes":1073741824}`
		res := runProbe(t, probe, policy, func(w io.Writer) error {
			bw := bufio.NewWriterSize(w, 1<<20)
			tmpl := breakout.Raw{Name: "d000/f000000", Size: 16}.Block()
			data := make([]byte, 512)
			for i := range files {
				h := bytes.Clone(tmpl)
				copy(h, fmt.Sprintf("d%03d/f%06d", i/perDir, i))
				breakout.Recheck(h)
				copy(data, fmt.Sprintf("content %08d", i))
				bw.Write(h)
				bw.Write(data)
			}
			bw.Write(make([]byte, 1024))
			return bw.Flush()
		})
		require.Equal(t, float64(files), res.summary["files"])
		require.Equal(t, float64(files/perDir), res.summary["dirs"])
		t.Logf("200,000-entry archive: peak RSS %.1f MiB (ru_maxrss %.1f MiB), %.2f s CPU", mib(res.hwm), mib(res.maxRSS), res.seconds)
		require.Less(t, res.hwm, int64(rssLimit))
	})
}

// buildProbe compiles internal/memprobe without the race detector.
func buildProbe(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "memprobe")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(gobin, "build", "-buildvcs=false", "-o", exe, "./internal/memprobe")
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return exe
}

type probeResult struct {
	summary map[string]any
	hwm     int64 // the child's VmHWM
	maxRSS  int64 // ru_maxrss from wait4
	seconds float64
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// runProbe runs the probe with the archive written by gen on its stdin.
func runProbe(t *testing.T, exe, policy string, gen func(io.Writer) error) probeResult {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), exe, policy)
	cmd.Env = append(os.Environ(), "GOGC=", "GOMEMLIMIT=")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	genErr := gen(stdin)
	stdin.Close()
	err = cmd.Wait()
	require.NoError(t, err, "probe: %s", stderr.String())
	require.NoError(t, genErr)
	var res probeResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res.summary))
	hwm, ok := res.summary["vm_hwm_bytes"].(float64)
	require.True(t, ok && hwm > 0, "no vm_hwm_bytes in %s", stdout.String())
	res.hwm = int64(hwm)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	res.maxRSS = ru.Maxrss << 10 // kilobytes on Linux
	res.seconds = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return res
}
