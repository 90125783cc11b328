// Package schema defines the strictgrade verdict: a versioned JSON Schema
// (draft 2020-12), the Go types that match it field for field, and
// Validate, the only way bytes become a *Verdict.
//
// The current schema is verdict-v4.json ($id ID,
// https://strictgrade.dev/schema/verdict/v4); every verdict this build
// makes follows it. Released schema files are never edited, since a
// signed statement records the sha256 of the schema bytes: versions 1 to
// 3 (verdict-v1.json, IDv1; verdict-v2.json, IDv2; verdict-v3.json,
// IDv3) stay embedded, and
// Validate checks each document against the version its "schema" field
// names, so verdicts signed by earlier builds keep verifying. Version 2
// added the disclosure policy (Disclosure: what reasons may reveal,
// recorded in every strict-tier verdict) and case_order; version 3 a
// case's own reason_code (Case.ReasonCode), so that a failed case says
// why in the same words as the verdict, not only the first one; version 4
// a case's CPU time (Case.CPUMS) and the time limit a timeout met
// (Case.Limit: its CPU-time budget, or the wall-clock backstop).
//
// Validate is built on github.com/santhosh-tekuri/jsonschema/v5 and also
// refuses what a JSON Schema cannot see: input over MaxSize, trailing data,
// duplicate object keys at any depth, invalid UTF-8 and unpaired surrogate
// escapes, non-finite numbers, numbers that are not plain integers (a
// verdict has no fractional fields), nesting deeper than MaxDepth, and a
// verdict that contradicts itself. A refusal is a *ValidationError that
// lists every problem with its JSON pointer, each matching a sentinel such
// as ErrDuplicateKey with errors.Is.
//
// A verdict is PASS, FAIL, ERROR or QUARANTINED. The schema makes PASS hard
// to reach: it needs at least one case, every case passed, and the images
// that graded it named; FAIL and ERROR need nothing more than a reason.
package schema
