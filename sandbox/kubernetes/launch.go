package kubernetes

import (
	_ "embed"
	"encoding/json"
	"slices"
	"strings"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/tarball"
	"github.com/strictgrade/strictgrade/sandbox"
)

// launchScript is the launcher's program (see launch.py's header).
//
//go:embed launch.py
var launchScript string

// launchDir is the tree that holds a launched pod's command line, in the
// file launchFile.
const (
	launchDir  = "/.strictgrade-launch"
	launchFile = "argv.json"
)

// launchPolicy bounds the command line's tree: one file, and more bytes
// than the kernel lets a command line have.
var launchPolicy = firewall.Policy{MaxEntries: 2, MaxTotalBytes: 8 << 20}

// launchForm is spec as a launched pod runs it, when it is one: a pod's
// command and whether it reads standard input are fixed when it is made,
// so a spec whose command differs from one run of its shape to the next
// (a command task's cases: the same artifacts, environment and limits, an
// argv and an input of their own) runs the launcher instead, and its
// command line travels as one more tree, laid out by the loader when the
// run begins. A pod of that form can then be started ahead of time (Warm).
//
// That needs python3 in the workload's image, so only specs of the loader
// image (which has it) take this form, and only those a pooled pod could
// serve: trees and no mounts, nothing streamed out or collected. With shape
// set spec is a shape given to Warm, whose missing command says it comes
// with each run; otherwise it is a spec to run, which takes the form when
// it has a command and standard input (a spec without input keeps its own
// command, and is warmed as it is). The form always reads standard input,
// empty when the spec has none.
func (b *Backend) launchForm(spec sandbox.Spec, shape bool) (sandbox.Spec, bool) {
	if spec.Image != b.cfg.LoaderImage || len(spec.Trees) == 0 || len(spec.Mounts) > 0 ||
		spec.StreamOut != nil || len(spec.Collect) > 0 {
		return spec, false
	}
	switch {
	case shape && len(spec.Cmd) == 0:
	case len(spec.Cmd) > 0 && spec.Stdin != nil:
	default:
		return spec, false
	}
	argv, err := json.Marshal(spec.Cmd)
	if err != nil {
		return spec, false
	}
	l := spec
	l.Cmd = []string{"python3", "-I", "-S", "-c", launchScript, launchDir + "/" + launchFile}
	l.Trees = append(slices.Clone(spec.Trees), sandbox.Tree{Dir: launchDir, Archive: tarOf(launchFile, string(argv)), Policy: launchPolicy})
	if l.Stdin == nil {
		l.Stdin = strings.NewReader("")
	}
	if l.Validate() != nil {
		return spec, false
	}
	return l, true
}

// tarOf is an archive of regular files, given as name, body pairs.
func tarOf(kv ...string) []byte { return tarball.Files(kv...) }
