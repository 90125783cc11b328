package judge_test

import (
	"fmt"

	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
)

func ExampleCompare() {
	// Numbers within an absolute tolerance.
	c := judge.Comparator{Kind: judge.KindNumbers, AbsTol: 1e-6}
	r := judge.Compare(c, []byte("3.1415927\n2.718"), []byte("3.14159265 2.71828"))
	fmt.Printf("%v %s: %s\n", r.Equal, r.DecidedBy, r.Reason)

	// JSON compared as values: key order and number spelling do not
	// matter; the first difference is located by its path, whose members
	// are named by the rank of their key (.#0 is "items").
	c = judge.Comparator{Kind: judge.KindJSON}
	r = judge.Compare(c, []byte(`{"total": 6.0, "items": [1, 2, 3]}`), []byte(`{"items":[1,2,3],"total":6}`))
	fmt.Printf("%v %s\n", r.Equal, r.DecidedBy)
	r = judge.Compare(c, []byte(`{"total": 7, "items": [1, 2, 4]}`), []byte(`{"items":[1,2,3],"total":6}`))
	fmt.Printf("%v %s: %s\n", r.Equal, r.DecidedBy, r.Reason)
	// Output:
	// false numbers: first difference at token 2; output 15 bytes, sha256 7cc075b107fa
	// true json
	// false json: first difference at $.#0[2]; output 32 bytes, sha256 e0319921a5bd
}

func ExampleCompareFor() {
	// The same comparisons explained for a human debugging the task: the
	// candidate's text is quoted (escaped and truncated), expected values
	// never are.
	c := judge.Comparator{Kind: judge.KindJSON}
	r := judge.CompareFor(schema.DisclosureDetailed, c, []byte(`{"total": 7, "items": [1, 2, 4]}`), []byte(`{"items":[1,2,3],"total":6}`))
	fmt.Printf("%s: %s\n", r.DecidedBy, r.Reason)
	r = judge.CompareFor(schema.DisclosureDetailed, c, []byte(`{"items": [1, 2, 3]}`), []byte(`{"items":[1,2,3],"total":6}`))
	fmt.Printf("%s: %s\n", r.DecidedBy, r.Reason)

	c = judge.Comparator{Kind: judge.KindLines}
	r = judge.CompareFor(schema.DisclosureDetailed, c, []byte("ok\n\x1b[32mPASS\x1b[0m\n"), []byte("ok\n42\n"))
	fmt.Printf("%s: %s\n", r.DecidedBy, r.Reason)
	// Output:
	// json: $.items[2]: got "4"
	// json: $: lacks a key the expected object has
	// lines: line 2: got "\x1b[32mPASS\x1b[0m"
}

func ExampleCompare_unorderedArrays() {
	c := judge.Comparator{Kind: judge.KindJSON, UnorderedArrays: true}
	for _, got := range []string{`[[2,1],[3]]`, `[[3],[1,1]]`} {
		r := judge.CompareFor(schema.DisclosureDetailed, c, []byte(got), []byte(`[[3],[1,2]]`))
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
