package schema_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/strictgrade/strictgrade/schema"
)

func ExampleValidate() {
	// A verdict with an unknown outcome, a duplicate key and an extra field.
	doc := `{"schema":"https://strictgrade.dev/schema/verdict/v1","run_id":"r1",
	"task":{"id":"t","digest":"` + strings.Repeat("a", 64) + `","kind":"function"},
	"tier":"strict","outcome":"MAYBE","reason":"","reason":"twice","cases":[],
	"tests_hash":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"submission":{"kind":"archive","sha256":"` + strings.Repeat("b", 64) + `","size":1},
	"images":{},"timings":{"total_ms":1},"controller":{"version":"dev"},
	"nonce":"0123456789abcdef","score":1}`

	_, err := schema.Validate([]byte(doc))
	var ve *schema.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			fmt.Println(p)
		}
	}
	fmt.Println(errors.Is(err, schema.ErrDuplicateKey))
	// Output:
	// /outcome: value must be one of "PASS", "FAIL", "ERROR", "QUARANTINED"
	// /reason: key "reason" appears more than once in its object
	// /score: unknown property "score"
	// true
}

func ExampleTestsHash() {
	fmt.Println(schema.TestsHash([]string{"tests/test_b.py::test_y", "tests/test_a.py::test_x"}))
	// Output: 002975ebd7aec35387fb03aa0883277f2667d680ad9ca5a43bb9288902b951a2
}

func ExampleExcerpt() {
	candidate := []byte("4\r\n\x1b[31mFAIL\x1b[0m and a very long tail that nobody needs to read")
	fmt.Println("line 1: got " + schema.Excerpt(candidate, 24))
	// Output: line 1: got "4\r\n\x1b[31mFAIL\x1b"…
}

func ExampleNew() {
	v := schema.New(schema.Task{
		ID:     "fn/add",
		Digest: strings.Repeat("1", 64),
		Kind:   schema.KindFunction,
	}, schema.TierStrict)
	v.RunID = "run-1"
	v.Outcome = schema.OutcomePass
	v.SetCases([]schema.Case{{ID: "case-1", Outcome: schema.OutcomePass, DecidedBy: schema.DecidedByJSON}})
	v.Submission = schema.Submission{Kind: schema.SubmissionArchive, SHA256: strings.Repeat("2", 64), Size: 2048}
	v.Images = schema.Images{Candidate: "sha256:" + strings.Repeat("3", 64), Judge: "sha256:" + strings.Repeat("4", 64)}
	v.Timings = schema.Timings{TotalMS: 1200}
	v.Controller = schema.Controller{Version: "0.1.0"}
	v.Nonce = "host-nonce-0123456789"

	data, err := schema.Marshal(v)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(data) > 0, v.TestsHash == schema.TestsHash([]string{"case-1"}))
	// Output: true true
}
