// Package sandboxtest helps test code that runs on a sandbox.Backend, and
// tests backends themselves.
//
// Fake is an in-process backend: images are Go Programs registered by name,
// and everything a sandbox holds is in memory. It keeps the promises of
// package sandbox that can be observed through its interfaces — limits
// classified like Docker's, output caps, read-only places, the firewall on
// every crossing, labels and cleanup — so that code which behaves on the
// fake behaves on Docker. Runtime and Judge are its renderings of
// strictgrade's runtime and judge images, enough to run the controller's
// strict pipeline end to end without a daemon; Probe is its rendering of
// the probe image. A test that must see what a phase sends to a sandbox
// registers a Program that records it: the spec through Proc.Spec, the
// standard input and the mounted files through its Proc, as a workload
// would read them.
//
// Run is the conformance suite: the Docker backend passes it against a
// daemon (under the engine build tag) and the fake passes it everywhere. A
// new backend is done when it passes.
package sandboxtest
