package swebench_test

import (
	"errors"
	"fmt"

	"github.com/strictgrade/strictgrade/compat/swebench"
)

// ParseInstance reads an instance as the SWE-bench dataset stores it, test
// ids as JSON inside strings, and refuses one whose tests pytest cannot
// name.
func ExampleParseInstance() {
	in, err := swebench.ParseInstance([]byte(`{
	  "repo": "textkit/textkit", "instance_id": "textkit__textkit-1",
	  "base_commit": "ec5117f71c6c3bfd7c6ca62a9d21c310f417498d",
	  "patch": "diff --git a/textkit/core.py b/textkit/core.py\n…",
	  "test_patch": "diff --git a/tests/test_core.py b/tests/test_core.py\n…",
	  "problem_statement": "slugify leaves runs of hyphens",
	  "FAIL_TO_PASS": "[\"tests/test_core.py::test_collapses_runs_of_separators\"]",
	  "PASS_TO_PASS": "[\"tests/test_core.py::test_word_count\"]",
	  "version": "0.3", "image_name": "textkit:0.3"
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(in.InstanceID, in.FailToPass, in.PassToPass, "ignored:", in.Ignored)

	_, err = swebench.ParseInstance([]byte(`{
	  "repo": "django/django", "instance_id": "django__django-1",
	  "base_commit": "ec5117f71c6c3bfd7c6ca62a9d21c310f417498d",
	  "patch": "x", "test_patch": "y", "problem_statement": "z",
	  "FAIL_TO_PASS": ["test_lookup (lookup.tests.LookupTests)"], "PASS_TO_PASS": []
	}`))
	fmt.Println(errors.Is(err, swebench.ErrRefused))
	fmt.Println(err)
	// Output:
	// textkit__textkit-1 [tests/test_core.py::test_collapses_runs_of_separators] [tests/test_core.py::test_word_count] ignored: [image_name]
	// true
	// swebench: instance refused: FAIL_TO_PASS: entry 1: node id "test_lookup (lookup.tests.LookupTests)" is not of the form file.py::test (only instances whose tests are pytest node ids, path/to/test_x.py::test_name, can be imported)
}
