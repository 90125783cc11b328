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
	return []Image{Probe(), Judge(), Python{}}
}

// judgePackage is the judge program.
const judgePackage = "github.com/strictgrade/strictgrade/judge/cmd/judge"

// Judge is the judge image: the judge binary on scratch, no shell and no
// interpreter. Its source hash is recorded in judgeSource, so resolving it
// needs no toolchain.
func Judge() GoBinaries {
	return GoBinaries{ImageName: "judge", Packages: []string{judgePackage}, Source: judgeSource}
}
