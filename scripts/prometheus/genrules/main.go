package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	paths := flag.String("paths", "scripts/prometheus/paths.conf", "the paths file the rules are generated from")
	out := flag.String("out", "-", "where to write the rules (- is stdout)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: genrules [-paths FILE] [-out FILE]\n\nwrites the Prometheus rules of an ldafwd fleet (docs/fleet.md)\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*paths, *out); err != nil {
		fmt.Fprintln(os.Stderr, "genrules:", err)
		os.Exit(1)
	}
}

func run(paths, out string) error {
	f, err := os.Open(paths)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := Parse(f)
	if err != nil {
		return fmt.Errorf("%s: %v", paths, err)
	}
	var b bytes.Buffer
	Generate(&b, c, paths)
	if out == "-" {
		_, err = os.Stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

// Generate writes the rules file of c; source names the paths file in the
// header comment.
func Generate(w io.Writer, c *Config, source string) {
	g := &gen{w: w, c: c}
	g.rules(source)
}
