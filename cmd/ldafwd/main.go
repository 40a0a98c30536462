// Command ldafwd is a bump-in-the-wire forwarder that measures one-way delay
// and loss with Lossy Difference Aggregators. See README.md.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ldafwd:", err)
		os.Exit(2)
	}
}
