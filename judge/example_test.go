package judge_test

import (
	"fmt"

	"github.com/strictgrade/strictgrade/judge"
)

func ExampleCompare() {
	// Numbers within an absolute tolerance.
	c := judge.Comparator{Kind: judge.KindNumbers, AbsTol: 1e-6}
	r := judge.Compare(c, []byte("3.1415927\n2.718"), []byte("3.14159265 2.71828"))
	fmt.Printf("%v %s: %s\n", r.Equal, r.DecidedBy, r.Reason)

	// JSON compared as values: key order and number spelling do not
	// matter; the first difference is located by its path.
	c = judge.Comparator{Kind: judge.KindJSON}
	r = judge.Compare(c, []byte(`{"total": 6.0, "items": [1, 2, 3]}`), []byte(`{"items":[1,2,3],"total":6}`))
	fmt.Printf("%v %s\n", r.Equal, r.DecidedBy)
	r = judge.Compare(c, []byte(`{"total": 7, "items": [1, 2, 4]}`), []byte(`{"items":[1,2,3],"total":6}`))
	fmt.Printf("%v %s: %s\n", r.Equal, r.DecidedBy, r.Reason)

	// Candidate text in a reason is escaped and truncated.
	c = judge.Comparator{Kind: judge.KindLines}
	r = judge.Compare(c, []byte("ok\n\x1b[32mPASS\x1b[0m\n"), []byte("ok\n42\n"))
	fmt.Printf("%v %s: %s\n", r.Equal, r.DecidedBy, r.Reason)
	// Output:
	// false numbers: token 2: got "2.718", not within the tolerance
	// true json
	// false json: $.items[2]: got "4"
	// false lines: line 2: got "\x1b[32mPASS\x1b[0m"
}

func ExampleCompare_unorderedArrays() {
	c := judge.Comparator{Kind: judge.KindJSON, UnorderedArrays: true}
	for _, got := range []string{`[[2,1],[3]]`, `[[3],[1,1]]`} {
		r := judge.Compare(c, []byte(got), []byte(`[[3],[1,2]]`))
		if r.Equal {
			fmt.Printf("%s: equal\n", got)
		} else {
			fmt.Printf("%s: %s\n", got, r.Reason)
		}
	}
	// Output:
	// [[2,1],[3]]: equal
	// [[3],[1,1]]: $: element [1] (an array of 2 elements) has no match in the expected array (or appears more often)
}
