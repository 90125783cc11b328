// Command testjudge is a deliberately broken judge for strictgrade's
// fault-injection tests. It never ships in the judge image.
//
//	testjudge crash      exit 2 without a verdict
//	testjudge garbage    print text that is not JSON
//	testjudge schema     print JSON that fails the verdict schema
//	testjudge mismatch   print a schema-valid PASS for another nonce
//	testjudge lenient    print a well-bound PASS whatever the outputs (a
//	                     judge that does not compare: the proof matrix
//	                     must catch it)
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/strictgrade/strictgrade/judge"
	"github.com/strictgrade/strictgrade/schema"
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	switch os.Args[1] {
	case "crash":
		fmt.Fprintln(os.Stderr, "testjudge: crashing on purpose")
		os.Exit(2)
	case "garbage":
		fmt.Println("PASS: all tests passed")
	case "schema":
		fmt.Println(`{"schema":"https://strictgrade.dev/schema/verdict/v1","outcome":"PASS","cases":[]}`)
	case "mismatch", "lenient":
		data, err := os.ReadFile("/judge/meta.json")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		var meta judge.Meta
		if err := json.Unmarshal(data, &meta); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		casesData, err := os.ReadFile("/judge/hidden/cases.json")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		cases, err := judge.LoadCases(casesData, meta.Kind)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		v := meta.Verdict
		if os.Args[1] == "mismatch" {
			v.Nonce = schema.NewNonce()
		}
		v.Outcome = schema.OutcomePass
		var cs []schema.Case
		for _, c := range cases.Cases {
			cs = append(cs, schema.Case{ID: c.ID, Outcome: schema.OutcomePass, DecidedBy: schema.DecidedByExact})
		}
		v.SetCases(cs)
		out, err := schema.Marshal(&v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Stdout.Write(out)
	default:
		os.Exit(2)
	}
}
