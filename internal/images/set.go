package images

// Module-relative import paths of the programs shipped in images.
const (
	probePackage = "github.com/strictgrade/strictgrade/internal/probe"
)

// Probe is the sandbox self-test image: the sgprobe binary on scratch.
func Probe() GoBinaries {
	return GoBinaries{ImageName: "probe", Packages: []string{probePackage}}
}

// All returns every image strictgrade uses, in build order.
func All() []Image {
	return []Image{Probe(), Judge(), Init(), Python{}}
}

// initPackage is sginit, the trusted init that lays out a sandbox's trees
// from its standard input (ADR 0013).
const initPackage = "github.com/strictgrade/strictgrade/internal/sginit"

// Init is the image that carries sginit: the binary on scratch, never run
// as an image of its own. The Docker backend copies it into a read-only
// volume that its sandboxes mount.
func Init() GoBinaries {
	return GoBinaries{ImageName: "init", Packages: []string{initPackage}, Source: initSource}
}

// judgePackage is the judge program.
const judgePackage = "github.com/strictgrade/strictgrade/judge/cmd/judge"

// Judge is the judge image: the judge binary on scratch, no shell and no
// interpreter. Its source hash is recorded in judgeSource, so resolving it
// needs no toolchain.
func Judge() GoBinaries {
	return GoBinaries{ImageName: "judge", Packages: []string{judgePackage}, Source: judgeSource}
}
