package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/strictgrade/strictgrade/firewall"
)

func init() {
	register(command{name: "firewall", summary: "check a tar archive with the tar firewall", run: runFirewall})
}

func firewallUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: strictgrade firewall check [--out FILE] [--manifest FILE] [--policy FILE] [--timeout D] < archive.tar")
	fmt.Fprintln(w, "\nexit codes: 0 accepted, 1 rejected (reason on stderr), 2 usage, 3 could not check")
}

func runFirewall(ctx context.Context, args []string, stdio IO) int {
	if len(args) == 0 {
		firewallUsage(stdio.Stderr)
		return ExitUsage
	}
	switch args[0] {
	case "check":
		return runFirewallCheck(ctx, args[1:], stdio)
	case "-h", "-help", "--help", "help":
		firewallUsage(stdio.Stderr)
		return ExitOK
	}
	fmt.Fprintf(stdio.Stderr, "strictgrade firewall: unknown subcommand %q\n", args[0])
	firewallUsage(stdio.Stderr)
	return ExitUsage
}

// runFirewallCheck filters standard input. The canonical archive and the
// manifest are written only when the archive is accepted, each through a
// temporary file in the target's directory renamed into place; on any other
// outcome the targets are removed, so no usable output is left behind.
func runFirewallCheck(ctx context.Context, args []string, stdio IO) int {
	const name = "firewall check"
	fs := newFlags(name, stdio.Stderr)
	out := fs.String("out", "", "write the canonical archive to `FILE` (- for standard output) if accepted; removed otherwise")
	manifest := fs.String("manifest", "", "write the manifest as JSON to `FILE` (- for standard output) if accepted; removed otherwise")
	policyFile := fs.String("policy", "", "read the firewall policy from the JSON `FILE` (default: the strict built-in policy)")
	timeout := fs.Duration("timeout", 0, "time budget for reading and checking the archive (0: none)")
	fs.Usage = func() {
		firewallUsage(stdio.Stderr)
		fmt.Fprintln(stdio.Stderr, "\nflags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stdio.Stderr, "strictgrade %s: %s\n", name, fmt.Sprintf(format, a...))
		return ExitUsage
	}
	switch {
	case fs.NArg() != 0:
		return usage("takes no arguments: the archive is read from standard input")
	case *out == "-" && *manifest == "-":
		return usage("--out and --manifest cannot both be standard output")
	case *out != "" && *out == *manifest:
		return usage("--out and --manifest name the same file")
	case *timeout < 0:
		return usage("--timeout is negative")
	}
	for _, target := range []string{*out, *manifest} {
		if err := checkTarget(target); err != nil {
			return usage("%v", err)
		}
	}
	var policy firewall.Policy
	if *policyFile != "" {
		data, err := os.ReadFile(*policyFile)
		if err != nil {
			return usage("--policy: %v", err)
		}
		if policy, err = firewall.ParsePolicy(data); err != nil {
			return usage("--policy %s: %v", *policyFile, err)
		}
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}

	// Whatever happens below, only an accepted archive leaves files behind.
	accepted := false
	var temps []*os.File
	defer func() {
		for _, f := range temps {
			if f != nil {
				f.Close()
				os.Remove(f.Name())
			}
		}
		if !accepted {
			removeTarget(*out)
			removeTarget(*manifest)
		}
	}()
	spool := func(target string) (*os.File, error) {
		dir := filepath.Dir(target)
		if target == "-" {
			dir = ""
		}
		f, err := os.CreateTemp(dir, ".strictgrade-firewall-*")
		if err != nil {
			return nil, err
		}
		temps = append(temps, f)
		return f, nil
	}

	var w io.Writer = io.Discard
	var outTmp *os.File
	if *out != "" {
		var err error
		if outTmp, err = spool(*out); err != nil {
			return fail(stdio, name, ExitError, err)
		}
		w = outTmp
	}
	m, err := firewall.Filter(ctx, stdio.Stdin, w, policy)
	if err != nil {
		if rej := (*firewall.RejectError)(nil); errors.As(err, &rej) {
			return fail(stdio, name, ExitFail, err)
		}
		return fail(stdio, name, ExitError, err)
	}

	var manTmp *os.File
	if *manifest != "" {
		data, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return fail(stdio, name, ExitError, err)
		}
		data = append(data, '\n')
		if *manifest == "-" {
			if _, err := stdio.Stdout.Write(data); err != nil {
				return fail(stdio, name, ExitError, err)
			}
		} else {
			if manTmp, err = spool(*manifest); err != nil {
				return fail(stdio, name, ExitError, err)
			}
			if _, err := manTmp.Write(data); err != nil {
				return fail(stdio, name, ExitError, err)
			}
		}
	}
	if outTmp != nil {
		if *out == "-" {
			if _, err := outTmp.Seek(0, io.SeekStart); err != nil {
				return fail(stdio, name, ExitError, err)
			}
			if _, err := io.Copy(stdio.Stdout, outTmp); err != nil {
				return fail(stdio, name, ExitError, err)
			}
		} else if err := commit(outTmp, *out, temps); err != nil {
			return fail(stdio, name, ExitError, err)
		}
	}
	if manTmp != nil {
		if err := commit(manTmp, *manifest, temps); err != nil {
			return fail(stdio, name, ExitError, err)
		}
	}
	accepted = true

	summary := fmt.Sprintf("accepted sha256:%s (%d files, %d directories, %d bytes, %d dropped)",
		m.ArchiveSHA256, len(m.Files), len(m.Dirs), m.TotalBytes, len(m.Dropped))
	if *out == "-" || *manifest == "-" {
		fmt.Fprintln(stdio.Stderr, summary)
	} else {
		fmt.Fprintln(stdio.Stdout, summary)
	}
	return ExitOK
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
// then forgets it in temps so the cleanup does not touch the name again.
func commit(f *os.File, target string, temps []*os.File) error {
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
	for i := range temps {
		if temps[i] == f {
			temps[i] = nil
		}
	}
	return nil
}
