// Command sum grades this example's solutions with the strict tier and
// prints the signed verdicts. Run it with: go run ./examples/sum
package main

import "github.com/strictgrade/strictgrade/examples/internal/demo"

func main() { demo.Main() }
