// Command toposort grades this example's solutions with the strict tier
// and prints the signed verdicts. Run it with: go run ./examples/toposort
package main

import "github.com/strictgrade/strictgrade/examples/internal/demo"

func main() { demo.Main() }
