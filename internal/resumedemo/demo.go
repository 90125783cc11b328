// Package resumedemo shows that `strictgrade run` survives SIGKILL: it
// grades a mix of honest, wrong, empty and attacking submissions to the
// strict examples and the compat example with the CLI binary, kills the
// run with SIGKILL part way, resumes it with the same output directory,
// and checks that every item was graded exactly once, that every bundle
// verifies (`verify --run`), that each grade is the one the submission
// deserves, and that after `strictgrade gc` nothing the killed or the
// resumed process made is left in the engine. Run is the whole
// demonstration; cmd/resumedemo runs it from the command line and an
// engine test runs a small one.
package resumedemo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/schema"
)

// Config configures Run.
type Config struct {
	// Repo is the module root (examples/, cmd/strictgrade).
	Repo string
	// Work is a directory for the binary, the key, the submissions and
	// the run directory (Work/out); created if missing.
	Work string
	// Binary is the strictgrade CLI; built from Repo into Work when empty.
	Binary string
	// Items is how many items to grade; default 60.
	Items int
	// KillAfter is how many finished items the first run writes before
	// it is killed; default a third of Items.
	KillAfter int
	// Parallel is run's --parallel; default 2.
	Parallel int
	// Log receives the commands and progress; default io.Discard.
	Log io.Writer
}

// Numbers are what Run measured.
type Numbers struct {
	Items    int
	Parallel int
	// DoneBeforeKill is how many complete lines results.jsonl held when
	// the first run was killed; BundlesBeforeKill how many bundles.
	DoneBeforeKill, BundlesBeforeKill int
	FirstRun                          time.Duration // start to SIGKILL
	Resume                            time.Duration
	// ResumeKept and ResumeGraded are the resumed run's summary.
	ResumeKept, ResumeGraded int
	// ResumeGradesPerMinute is the resumed run's own throughput;
	// GradesPerMinute is Items over both runs' wall time.
	ResumeGradesPerMinute, GradesPerMinute float64
	Outcomes                               map[schema.Outcome]int
	// GCRemoved is how many containers and volumes gc removed (those the
	// killed run left, and any other abandoned ones).
	GCRemoved int
	// KilledPID and ResumedPID own the engine objects the runs made.
	KilledPID, ResumedPID int
}

func (n *Numbers) String() string {
	return fmt.Sprintf("%d items, --parallel %d: killed (SIGKILL) after %.1fs with %d items in results.jsonl (%d bundles); resume %.1fs kept %d, graded %d (%.1f grades/min); overall %.1f grades/min; outcomes %v; gc removed %d objects",
		n.Items, n.Parallel, n.FirstRun.Seconds(), n.DoneBeforeKill, n.BundlesBeforeKill, n.Resume.Seconds(), n.ResumeKept, n.ResumeGraded,
		n.ResumeGradesPerMinute, n.GradesPerMinute, n.Outcomes, n.GCRemoved)
}

// Run performs the demonstration. It returns the numbers and an error
// naming every check that failed.
func Run(ctx context.Context, c Config) (*Numbers, error) {
	if c.Items == 0 {
		c.Items = 60
	}
	if c.KillAfter == 0 {
		c.KillAfter = max(1, c.Items/3)
	}
	if c.Parallel == 0 {
		c.Parallel = 2
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.KillAfter >= c.Items {
		return nil, fmt.Errorf("resumedemo: KillAfter %d must be below Items %d", c.KillAfter, c.Items)
	}
	var err error
	if c.Repo, err = filepath.Abs(c.Repo); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Work, 0o755); err != nil {
		return nil, err
	}
	if c.Binary == "" {
		c.Binary = filepath.Join(c.Work, "strictgrade")
		build := exec.CommandContext(ctx, "go", "build", "-o", c.Binary, "./cmd/strictgrade")
		build.Dir = c.Repo
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("resumedemo: go build: %v\n%s", err, out)
		}
	}
	keyDir := filepath.Join(c.Work, "key")
	if _, err := os.Stat(filepath.Join(keyDir, "strictgrade.key")); errors.Is(err, os.ErrNotExist) {
		if _, err := c.cli(ctx, "keygen", "--out", keyDir); err != nil {
			return nil, err
		}
	}
	priv, pub := filepath.Join(keyDir, "strictgrade.key"), filepath.Join(keyDir, "strictgrade.pub")
	itemsFile, items, err := WriteItems(c.Repo, c.Work, c.Items)
	if err != nil {
		return nil, fmt.Errorf("resumedemo: items: %w", err)
	}
	out := filepath.Join(c.Work, "out")
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	runArgs := []string{"run", "--items", itemsFile, "--tasks", strings.Join(TaskDirs(c.Repo), ","), "--out", out,
		"--parallel", strconv.Itoa(c.Parallel), "--key", priv}
	n := &Numbers{Items: c.Items, Parallel: c.Parallel}

	// The first run, killed once KillAfter items are in results.jsonl.
	fmt.Fprintf(c.Log, "$ %s %s  # SIGKILL after %d items\n", c.Binary, strings.Join(runArgs, " "), c.KillAfter)
	first := exec.Command(c.Binary, runArgs...)
	logFile, err := os.Create(filepath.Join(c.Work, "run1.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	first.Stdout, first.Stderr = logFile, logFile
	start := time.Now()
	if err := first.Start(); err != nil {
		return nil, err
	}
	n.KilledPID = first.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	results := filepath.Join(out, batch.ResultsFile)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("resumedemo: the first run ended (%v) before %d items were done; see %s", err, c.KillAfter, logFile.Name())
		case <-ctx.Done():
			first.Process.Kill()
			<-exited
			return nil, ctx.Err()
		case <-tick.C:
			if complete(results) >= c.KillAfter {
				break wait
			}
		}
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("resumedemo: SIGKILL: %w", err)
	}
	werr := <-exited
	n.FirstRun = time.Since(start)
	var exit *exec.ExitError
	if !errors.As(werr, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		return nil, fmt.Errorf("resumedemo: the first run was not killed by SIGKILL: %v", werr)
	}
	before := readRecords(results)
	n.DoneBeforeKill, n.BundlesBeforeKill = len(before), countBundles(out)
	fmt.Fprintf(c.Log, "killed pid %d after %.1fs: %d items in results.jsonl, %d bundles\n", n.KilledPID, n.FirstRun.Seconds(), n.DoneBeforeKill, n.BundlesBeforeKill)

	// The resume, with the same command.
	fmt.Fprintf(c.Log, "$ %s %s  # resume\n", c.Binary, strings.Join(runArgs, " "))
	start = time.Now()
	res, err := c.cliPID(ctx, &n.ResumedPID, runArgs...)
	n.Resume = time.Since(start)
	var problems []string
	fail := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if err != nil {
		fail("the resumed run: %v", err)
	}
	fmt.Fprintf(c.Log, "%s", res)

	// Every item graded exactly once.
	final, lines := readRecords(results), completeLines(results)
	if lines != c.Items || len(final) != c.Items {
		fail("results.jsonl holds %d lines for %d distinct items; want %d of each", lines, len(final), c.Items)
	}
	n.Outcomes = map[schema.Outcome]int{}
	for _, it := range items {
		r, ok := final[it.ID]
		if !ok {
			fail("item %s is not in results.jsonl", it.ID)
			continue
		}
		n.Outcomes[r.Outcome]++
		if r.Outcome != it.Want {
			fail("item %s: %s (%s %s), want %s", it.ID, r.Outcome, r.ReasonCode, r.Error, it.Want)
		}
	}
	for id, r := range before {
		if f := final[id]; f.Nonce != r.Nonce || f.Bundle != r.Bundle || f.Outcome != r.Outcome {
			fail("item %s, finished before the kill, was graded again (nonce %s, then %s)", id, r.Nonce, f.Nonce)
		}
	}
	if b := countBundles(out); b != c.Items {
		fail("%d bundles for %d items", b, c.Items)
	}
	var sum batch.Summary
	if data, err := os.ReadFile(filepath.Join(out, batch.SummaryFile)); err != nil || json.Unmarshal(data, &sum) != nil {
		fail("summary.json: %v", err)
	}
	n.ResumeKept, n.ResumeGraded, n.ResumeGradesPerMinute = sum.Resumed, sum.Graded, sum.GradesPerMinute
	if sum.Resumed < len(before) || sum.Resumed+sum.Graded != c.Items || sum.Pending != 0 {
		fail("the resume kept %d and graded %d of %d items (%d pending); %d were finished before the kill", sum.Resumed, sum.Graded, c.Items, sum.Pending, len(before))
	}
	n.GradesPerMinute = float64(c.Items) / ((n.FirstRun + n.Resume).Minutes())
	for _, f := range []string{batch.ReportMarkdown, batch.ReportHTML} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			fail("the run wrote no %s: %v", f, err)
		}
	}

	// Every bundle verifies.
	fmt.Fprintf(c.Log, "$ %s verify --run %s --key %s\n", c.Binary, out, pub)
	ver, err := c.cli(ctx, "verify", "--run", out, "--key", pub)
	if want := fmt.Sprintf("%d items: %d verified, 0 not verified, 0 without a signed verdict", c.Items, c.Items); err != nil || !strings.Contains(ver, want) {
		fail("verify --run: %v; want %q in:\n%s", err, want, ver)
	} else {
		fmt.Fprintln(c.Log, want)
	}

	// Nothing left behind once gc reaped what the killed run left.
	fmt.Fprintf(c.Log, "$ %s gc\n", c.Binary)
	gc, err := c.cli(ctx, "gc")
	if err != nil {
		fail("gc: %v", err)
	}
	for _, l := range strings.Split(gc, "\n") {
		if strings.HasPrefix(l, "container\t") || strings.HasPrefix(l, "volume\t") {
			n.GCRemoved++
		}
	}
	fmt.Fprintf(c.Log, "%s", gc)
	for _, pid := range []int{n.KilledPID, n.ResumedPID} {
		left, err := leftovers(ctx, pid)
		if err != nil {
			fail("%v", err)
		} else if len(left) > 0 {
			fail("left in the engine by pid %d: %s", pid, strings.Join(left, " "))
		}
	}
	if len(problems) > 0 {
		return n, fmt.Errorf("resumedemo: %d checks failed:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return n, nil
}

// cli runs the binary to the end and returns its output (stdout, then
// stderr).
func (c Config) cli(ctx context.Context, args ...string) (string, error) {
	var pid int
	return c.cliPID(ctx, &pid, args...)
}

func (c Config) cliPID(ctx context.Context, pid *int, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Start()
	if err == nil {
		*pid = cmd.Process.Pid
		err = cmd.Wait()
	}
	outs := stdout.String() + stderr.String()
	if err != nil {
		return outs, fmt.Errorf("strictgrade %s: %w\n%s", args[0], err, outs)
	}
	return outs, nil
}

// complete counts the complete lines of a file (0 if it is missing).
func complete(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(data, []byte("\n"))
}

// completeLines counts the non-blank lines of results.jsonl.
func completeLines(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

// readRecords reads the complete, well-formed records of results.jsonl by
// item; a later line for an item wins (a duplicate shows in the counts).
func readRecords(path string) map[string]batch.Record {
	recs := map[string]batch.Record{}
	f, err := os.Open(path)
	if err != nil {
		return recs
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, batch.MaxLine)
	for sc.Scan() {
		var r batch.Record
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Item != "" {
			recs[r.Item] = r
		}
	}
	return recs
}

func countBundles(out string) int {
	m, _ := filepath.Glob(filepath.Join(out, batch.ItemsDir, "*", batch.BundleFile))
	return len(m)
}

// leftovers lists the managed containers and volumes the process pid (in
// this process's pid namespace, as the runs are its children) owns.
func leftovers(ctx context.Context, pid int) ([]string, error) {
	pidns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return nil, err
	}
	var left []string
	for _, args := range [][]string{{"ps", "-aq"}, {"volume", "ls", "-q"}} {
		args = append(args, "--filter", "label=dev.strictgrade.managed=true",
			"--filter", "label=dev.strictgrade.owner.pid="+strconv.Itoa(pid), "--filter", "label=dev.strictgrade.owner.pidns="+pidns)
		out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, out)
		}
		left = append(left, strings.Fields(string(out))...)
	}
	return left, nil
}
