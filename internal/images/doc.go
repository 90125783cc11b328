// Package images builds strictgrade's container images locally, without a
// registry: a Python runtime from Debian packages (debootstrap) and static
// Go binaries of this module on an empty root filesystem. Each image is
// labelled with the hash of its recipe and rebuilt only when the recipe
// changes; callers record the image ID the daemon reports.
package images
