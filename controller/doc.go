// Package controller is strictgrade's host controller: it grades a
// submission against a task by running the candidate and judge phases in
// their own hardened containers, passing every crossing archive through the
// tar firewall, validating the judge's verdict against the schema, binding
// it to the run and signing it with a key that never enters a container.
//
// Grading fails closed: only a clean, complete, schema-valid judge verdict
// that agrees with what the controller asked for can become a signed PASS.
// A failing candidate is a FAIL verdict; a failure of the grader is an
// ERROR verdict, returned together with a non-nil error.
package controller
