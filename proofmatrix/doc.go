// Package proofmatrix is strictgrade's attack suite: a registry of probes,
// each a concrete malicious submission (files, a raw archive, a diff) or
// a scripted behaviour, tied to a row of TAXONOMY.md, with the outcome
// expected in each tier and the layer expected to stop it.
//
// Run grades every probe for real through the controller against small
// tasks embedded in this package, records the outcome and the layer that
// actually stopped it, and always includes the controls: an honest correct
// submission must PASS, an honest wrong one and an empty one must FAIL.
// Compare checks a report against the committed expectation
// (expected.json); any attack that now succeeds, any failed control and
// any change of stopping layer is a regression.
package proofmatrix
