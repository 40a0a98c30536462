package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// command is one subcommand: it parses its own flags (pflag) and runs.
type command struct {
	summary string
	run     func(args []string) error
}

// commands is filled by each subcommand's file in init.
var commands = map[string]command{}

func register(name, summary string, run func(args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

func usage() string {
	var b strings.Builder
	b.WriteString("usage: ldafwd <command> [flags]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-9s %s\n", n, commands[n].summary)
	}
	b.WriteString("\nRun 'ldafwd <command> --help' for its flags and examples; 'ldafwd --version' for the build.\n")
	b.WriteString("Exit status: 0 done, 1 runtime failure, 2 usage or configuration error.\n")
	return b.String()
}

func run(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stdout, usage())
		return nil
	}
	if args[0] == "--version" || args[0] == "-version" {
		return versionMain(args[1:], os.Stdout)
	}
	c, ok := commands[args[0]]
	if !ok {
		return usageErrorf("unknown command %q\n%s", args[0], usage())
	}
	return c.run(args[1:])
}
