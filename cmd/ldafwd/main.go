package main

import (
	"fmt"
	"os"
)

// main runs one command; the exit status says what kind of error ended
// it (exitUsage, exitFailure: cli.go).
func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ldafwd:", err)
		os.Exit(exitCode(err))
	}
}
