package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/strictgrade/strictgrade/firewall"
)

func init() {
	register(command{name: "firewall", summary: "check a tar archive with the tar firewall", do: runFirewall})
}

func runFirewall(ctx context.Context, args []string, stdio IO) error {
	if isHelp(args) {
		checkFlags(stdio, &fwCheck{}).Usage()
		return nil
	}
	if len(args) == 0 || args[0] != "check" {
		return usagef("the only subcommand is check")
	}
	return within("firewall check", runFirewallCheck(ctx, args[1:], stdio))
}

// fwCheck is a firewall check's command line.
type fwCheck struct {
	out, manifest, policyFile string
	timeout                   time.Duration
	policy                    firewall.Policy
}

func checkFlags(stdio IO, c *fwCheck) *flag.FlagSet {
	fs := flagSet(stdio.Stderr, "firewall check", "[flags] < archive.tar",
		"Filters the tar archive on standard input through the tar firewall. Outputs are written only when it is\naccepted; a rejection's reason goes to standard error.")
	fs.StringVar(&c.out, "out", "", "write the canonical archive to `FILE` (- for standard output) if accepted; removed otherwise")
	fs.StringVar(&c.manifest, "manifest", "", "write the manifest as JSON to `FILE` (- for standard output) if accepted; removed otherwise")
	fs.StringVar(&c.policyFile, "policy", "", "read the firewall policy from the JSON `FILE` (default: the strict built-in policy)")
	fs.DurationVar(&c.timeout, "timeout", 0, "time budget for reading and checking the archive (0: none)")
	return fs
}

// runFirewallCheck filters standard input. The canonical archive and the
// manifest are written only when the archive is accepted, each through a
// temporary file in the target's directory renamed into place; on any other
// outcome the targets are removed, so no usable output is left behind.
func runFirewallCheck(ctx context.Context, args []string, stdio IO) error {
	c, err := parseCheck(args, stdio)
	if err != nil {
		return err
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	sp := &spools{}
	defer sp.cleanup()
	m, err := c.filter(ctx, stdio, sp)
	if err != nil {
		removeTarget(c.out)
		removeTarget(c.manifest)
		return err
	}
	summary := fmt.Sprintf("accepted sha256:%s (%d files, %d directories, %d bytes, %d dropped)",
		m.ArchiveSHA256, len(m.Files), len(m.Dirs), m.TotalBytes, len(m.Dropped))
	if c.out == "-" || c.manifest == "-" {
		fmt.Fprintln(stdio.Stderr, summary)
	} else {
		fmt.Fprintln(stdio.Stdout, summary)
	}
	return nil
}

// parseCheck reads and checks a firewall check's command line.
func parseCheck(args []string, stdio IO) (*fwCheck, error) {
	c := &fwCheck{}
	fs := checkFlags(stdio, c)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() != 0:
		return nil, usagef("takes no arguments: the archive is read from standard input")
	case c.out == "-" && c.manifest == "-":
		return nil, usagef("--out and --manifest cannot both be standard output")
	case c.out != "" && c.out == c.manifest:
		return nil, usagef("--out and --manifest name the same file")
	case c.timeout < 0:
		return nil, usagef("--timeout is negative")
	}
	for _, target := range []string{c.out, c.manifest} {
		if err := checkTarget(target); err != nil {
			return nil, badInput(err)
		}
	}
	if c.policyFile != "" {
		data, err := os.ReadFile(c.policyFile)
		if err != nil {
			return nil, usagef("--policy: %w", err)
		}
		if c.policy, err = firewall.ParsePolicy(data); err != nil {
			return nil, usagef("--policy %s: %w", c.policyFile, err)
		}
	}
	return c, nil
}

// filter runs the firewall over standard input and, when it accepts,
// puts the archive and the manifest in place.
func (c *fwCheck) filter(ctx context.Context, stdio IO, sp *spools) (*firewall.Manifest, error) {
	var w io.Writer = io.Discard
	var outTmp *os.File
	if c.out != "" {
		var err error
		if outTmp, err = sp.spool(c.out); err != nil {
			return nil, err
		}
		w = outTmp
	}
	m, err := firewall.Filter(ctx, stdio.Stdin, w, c.policy)
	if err != nil {
		return nil, err // a *firewall.RejectError is a rejection
	}
	var manTmp *os.File
	if c.manifest != "" {
		data, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return nil, err
		}
		data = append(data, '\n')
		if c.manifest == "-" {
			if _, err := stdio.Stdout.Write(data); err != nil {
				return nil, err
			}
		} else {
			if manTmp, err = sp.spool(c.manifest); err != nil {
				return nil, err
			}
			if _, err := manTmp.Write(data); err != nil {
				return nil, err
			}
		}
	}
	if outTmp != nil {
		if err := sp.emit(outTmp, c.out, stdio.Stdout); err != nil {
			return nil, err
		}
	}
	if manTmp != nil {
		if err := sp.commit(manTmp, c.manifest); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// spools are the temporary files of one check; cleanup removes those not
// committed.
type spools struct{ files []*os.File }

// spool makes a temporary file in target's directory (the default
// directory for standard output).
func (sp *spools) spool(target string) (*os.File, error) {
	dir := filepath.Dir(target)
	if target == "-" {
		dir = ""
	}
	f, err := os.CreateTemp(dir, ".strictgrade-firewall-*")
	if err != nil {
		return nil, err
	}
	sp.files = append(sp.files, f)
	return f, nil
}

// emit copies f to stdout for "-" and commits it to target otherwise.
func (sp *spools) emit(f *os.File, target string, stdout io.Writer) error {
	if target != "-" {
		return sp.commit(f, target)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(stdout, f)
	return err
}

func (sp *spools) cleanup() {
	for _, f := range sp.files {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
}

// checkTarget refuses an output path that exists and is not a regular file
// (a directory, /dev/null, a FIFO): it would be replaced by a rename.
func checkTarget(target string) error {
	if target == "" || target == "-" {
		return nil
	}
	fi, err := os.Lstat(target)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s exists and is not a regular file", target)
	}
	return nil
}

// removeTarget deletes a stale output file so that a failed check leaves
// nothing usable at the path.
func removeTarget(target string) {
	if target == "" || target == "-" {
		return
	}
	if fi, err := os.Lstat(target); err == nil && fi.Mode().IsRegular() {
		os.Remove(target)
	}
}

// commit makes a spooled temporary file durable and renames it to target,
// then forgets it so the cleanup does not touch the name again.
func (sp *spools) commit(f *os.File, target string) error {
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), target); err != nil {
		return err
	}
	for i := range sp.files {
		if sp.files[i] == f {
			sp.files[i] = nil
		}
	}
	return nil
}
