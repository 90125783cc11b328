//go:build engine

package candidate

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/engine"
	"github.com/strictgrade/strictgrade/internal/images"
	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// These tests run candidates in real containers: a missing daemon fails
// them, it never skips them.

var docker = sync.OnceValues(func() (*engine.Docker, error) {
	return engine.NewDocker(context.Background(), engine.Config{})
})

var pythonImage = sync.OnceValues(func() (string, error) {
	d, err := docker()
	if err != nil {
		return "", err
	}
	return images.Ensure(context.Background(), d, images.Python{}, os.Stderr)
})

// realEngine returns the Docker engine and the Python runtime image.
func realEngine(t *testing.T) (*engine.Docker, string) {
	t.Helper()
	d, err := docker()
	if err != nil {
		t.Fatalf("these tests need a Docker daemon: %v", err)
	}
	img, err := pythonImage()
	if err != nil {
		t.Fatal(err)
	}
	return d, img
}

// submission is the canonical archive of one solution.py.
func submission(t *testing.T, source string) []byte {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	_ = tw.WriteHeader(&tar.Header{Name: "solution.py", Mode: 0o644, Size: int64(len(source)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(source))
	_ = tw.Close()
	var out bytes.Buffer
	if _, err := firewall.Filter(t.Context(), &raw, &out, firewall.Policy{}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

var runSeq sync.Mutex
var runN int

// newRun returns a run id of this process and checks, when the test ends,
// that nothing labelled with it is left.
func newRun(t *testing.T) string {
	runSeq.Lock()
	runN++
	run := fmt.Sprintf("cand%d-%d", os.Getpid(), runN)
	runSeq.Unlock()
	t.Cleanup(func() {
		if d, err := docker(); err == nil {
			_ = d.Settle(context.Background()) // removals under way end first
		}
		if cs, vs := leftovers(t, run); len(cs)+len(vs) > 0 {
			t.Errorf("run %s left containers %v and volumes %v", run, cs, vs)
		}
	})
	return run
}

func leftovers(t *testing.T, run string) (cs, vs []string) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	f := filters.NewArgs(filters.Arg("label", engine.LabelRun+"="+run))
	ctx := context.Background()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		cs = append(cs, c.ID)
	}
	vl, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vl.Volumes {
		vs = append(vs, v.Name)
	}
	return cs, vs
}

// judged runs the judge's logic in this process on what the phase
// produced, as the judge container would.
func judged(t *testing.T, tk *task.Task, out *Outputs) *schema.Verdict {
	t.Helper()
	in := &judge.Input{
		Meta:   judge.Meta{Verdict: *schema.New(schema.Task{ID: tk.Spec.ID, Kind: tk.Spec.Kind}, schema.TierStrict), Kind: tk.Spec.Kind},
		Cases:  tk.Cases,
		Hidden: map[string][]byte{},
	}
	for _, c := range tk.Cases.Cases {
		for _, rel := range c.ExpectedFiles {
			data, err := tk.HiddenFile(rel)
			if err != nil {
				t.Fatal(err)
			}
			in.Hidden[rel] = data
		}
	}
	for _, oc := range out.Cases {
		r := oc.Record
		res := judge.RunResult{Exit: r.Exit, ExitCode: r.Code, DurationMS: r.Duration.Milliseconds(),
			StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated, Error: r.Refused}
		o := judge.Output{Result: &res, Files: map[string]*judge.Blob{}}
		if oc.Stdout != nil {
			o.Stdout = &judge.Blob{Data: oc.Stdout}
		}
		for name, data := range oc.Files {
			o.Files[name] = &judge.Blob{Data: data}
		}
		in.Outputs = append(in.Outputs, o)
	}
	v, err := judge.Judge(in)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOrderKeyedAnswersFail(t *testing.T) {
	// Not parallel: it swaps callOrder for the package.
	eng, img := realEngine(t)
	tk := loadExample(t, "sum")
	// The candidate holds every expected value in the task's order (say,
	// leaked) and answers the k-th call with the k-th.
	var answers []json.RawMessage
	for _, c := range tk.Cases.Cases {
		answers = append(answers, c.Expected)
	}
	table, err := json.Marshal(answers)
	if err != nil {
		t.Fatal(err)
	}
	source := fmt.Sprintf("import json\nANSWERS = json.loads(%s)\ncalls = 0\n\ndef solve(numbers):\n    global calls\n    calls += 1\n    return ANSWERS[calls - 1]\n", strconv.Quote(string(table)))
	grade := func(nonce string) *schema.Verdict {
		run := newRun(t)
		out, err := Run(t.Context(), eng, forTask(t, tk, Request{Run: run, Image: img, Artifacts: submission(t, source), Nonce: nonce}))
		if err != nil {
			t.Fatal(err)
		}
		out.Wait()
		return judged(t, tk, out)
	}

	// In the task's own order, the table is right every time.
	callOrder = func(string, int) []int {
		order := make([]int, len(tk.Cases.Cases))
		for i := range order {
			order[i] = i
		}
		return order
	}
	fixed := grade("fixed")
	callOrder = CallOrder
	if fixed.Outcome != schema.OutcomePass {
		t.Fatalf("with the fixed order: %s %s", fixed.Outcome, fixed.Reason)
	}
	const nonce = "a-grade-nonce"
	if o := CallOrder(nonce, len(tk.Cases.Cases)); slices.IsSorted(o) {
		t.Fatalf("the test's nonce draws the identity %v", o)
	}
	shuffled := grade(nonce)
	if shuffled.Outcome != schema.OutcomeFail || shuffled.ReasonCode != schema.ReasonWrongAnswer {
		t.Fatalf("with the nonce's order: %s %s %s", shuffled.Outcome, shuffled.ReasonCode, shuffled.Reason)
	}
	t.Logf("fixed order: %s; shuffled: %s (%s)", fixed.Outcome, shuffled.Outcome, shuffled.Reason)
}

// diskFiller writes 1 MiB files (the per-file limit) until a write fails,
// up to 2 GiB, then creates empty files until that fails, up to 20 000,
// and reports how far it got.
const diskFiller = `import errno, sys
written = files = 0
chunk = b"z" * (1 << 16)
try:
    for i in range(2048):
        with open("/output/fill%d" % i, "wb", buffering=0) as f:
            for _ in range(16):
                f.write(chunk)
                written += len(chunk)
except OSError as e:
    sys.stderr.write("writing stopped: %s\n" % errno.errorcode.get(e.errno))
try:
    for i in range(20000):
        open("/output/empty%d" % i, "w").close()
        files += 1
except OSError as e:
    sys.stderr.write("creating stopped: %s\n" % errno.errorcode.get(e.errno))
sys.stderr.write("written %d files %d\n" % (written, files))
`

// volumesUsage walks the daemon's volumes directory and returns the bytes
// and inodes in it; entries that vanish during the walk are skipped.
func volumesUsage(dir string, skip map[string]bool) (bytes, inodes int64) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && filepath.Dir(p) == dir && skip[d.Name()] {
			return filepath.SkipDir
		}
		if info, err := d.Info(); err == nil {
			inodes++
			if info.Mode().IsRegular() {
				bytes += info.Size()
			}
		}
		return nil
	})
	return bytes, inodes
}

// imageVolumes names the daemon's image volumes (sginit's, the shared
// directories', and the engine tests' own of either kind): made once per
// image, by whichever process or test package comes first, never by a
// grade's candidate, so a measurement of what a grade writes leaves them out.
func imageVolumes(ctx context.Context, cli *client.Client) map[string]bool {
	out := map[string]bool{}
	for _, l := range []string{engine.LabelShared, engine.LabelSginit} {
		list, err := cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", l))})
		if err != nil {
			continue
		}
		for _, v := range list.Volumes {
			out[v.Name] = true
		}
	}
	return out
}

func TestDiskFillingCandidateFails(t *testing.T) {
	eng, img := realEngine(t)
	tk := loadExample(t, "csvstats")
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	info, err := cli.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	volDir := filepath.Join(info.DockerRootDir, "volumes")
	if _, err := os.Stat(volDir); err != nil {
		t.Fatalf("the daemon's volumes directory must be readable here to measure it: %v", err)
	}

	// Sample the volumes directory all through the grade.
	before, beforeInodes := volumesUsage(volDir, imageVolumes(t.Context(), cli))
	var peak, peakInodes int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			b, i := volumesUsage(volDir, imageVolumes(t.Context(), cli))
			peak, peakInodes = max(peak, b), max(peakInodes, i)
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	run := newRun(t)
	out, err := Run(t.Context(), eng, forTask(t, tk, Request{Run: run, Image: img, Artifacts: submission(t, diskFiller)}))
	if err == nil {
		out.Wait()
	}
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	after, afterInodes := volumesUsage(volDir, imageVolumes(t.Context(), cli))
	t.Logf("daemon volumes directory: before %d bytes / %d inodes, peak %d / %d, after %d / %d",
		before, beforeInodes, peak, peakInodes, after, afterInodes)

	report := regexp.MustCompile(`written (\d+) files (\d+)`)
	limit := tk.Spec.Limits.OutputBytes
	for i, c := range out.Cases {
		m := report.FindSubmatch(c.Stderr)
		if m == nil {
			t.Fatalf("case %d: no report in %q (error %q)", i, c.Stderr, c.Record.Refused)
		}
		written, _ := strconv.ParseInt(string(m[1]), 10, 64)
		files, _ := strconv.ParseInt(string(m[2]), 10, 64)
		t.Logf("case %d: the candidate wrote %d bytes and made %d empty files; %s", i, written, files, bytes.TrimSpace(c.Stderr))
		if written > limit || files >= outputInodes {
			t.Errorf("case %d: %d bytes and %d files got past a quota of %d bytes and %d inodes", i, written, files, limit, outputInodes)
		}
	}
	v := judged(t, tk, out)
	if v.Outcome != schema.OutcomeFail {
		t.Fatalf("verdict %s %s", v.Outcome, v.Reason)
	}
	t.Logf("verdict: %s %s: %s", v.Outcome, v.ReasonCode, v.Reason)
	// Nothing the candidate wrote reached the daemon's disk: what other
	// tests on the machine do meanwhile stays far below what the
	// candidate tried (2 GiB and 20 000 files per case).
	if peak-before > 128<<20 || peakInodes-beforeInodes > 2000 {
		t.Errorf("the volumes grew by %d bytes and %d inodes during the grade", peak-before, peakInodes-beforeInodes)
	}
}
