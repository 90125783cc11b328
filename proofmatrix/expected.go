package proofmatrix

import (
	_ "embed"
	"encoding/json"
	"strings"
)

//go:embed expected.json
var expectedJSON []byte

// ExpectedPath is where the committed expectation lives in the repository.
const ExpectedPath = "proofmatrix/expected.json"

// DefaultExpected returns the expectation compiled into this build.
func DefaultExpected() (*Expected, error) {
	dec := json.NewDecoder(strings.NewReader(string(expectedJSON)))
	dec.DisallowUnknownFields()
	var e Expected
	if err := dec.Decode(&e); err != nil {
		return nil, err
	}
	return &e, nil
}
