// Package images builds and resolves strictgrade's container images
// locally, without a registry: a Python runtime from Debian packages
// (debootstrap) and static Go binaries of this module on an empty root
// filesystem. Each image is labelled with the hash of its recipe.
//
// Resolve finds an image by the recipe this build expects and runs
// nothing: the Python recipe is a constant description, and the judge's
// includes its source hash recorded in judge_source.go (go generate,
// checked against the source by a test). Ensure and Build are the explicit
// build step, the only code here that needs the Go toolchain, this
// module's source or debootstrap. Go binaries are built with this module as
// the main module, -trimpath, -buildvcs=false and an empty build id, and
// loaded from an archive with a timeless configuration, so the judge is
// the same image ID for the same source whoever builds it.
package images
