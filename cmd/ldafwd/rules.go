package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ldafwd/ldafwd/metrics/rules"
)

func init() {
	register("rules", "write the Prometheus recording and alerting rules of a fleet from its paths file (--paths FILE)", runRules)
}

func runRules(args []string) error { return rulesMain(args, os.Stdout) }

// rulesMain writes the Prometheus rules of a paths file (docs/fleet.md) to stdout or --out, so
// a deployment needs neither Go nor the source tree. A paths file that does not parse exits 2.
func rulesMain(args []string, stdout io.Writer) error {
	fs := newFlagSet("rules", stdout)
	paths := fs.String("paths", "", "the paths file the rules are generated from (required; docs/fleet.md)")
	out := fs.String("out", "-", "where to write the rules (- is stdout)")
	if help, err := parseFlags(fs, "rules", args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("rules: unexpected arguments %q", fs.Args())
	}
	if *paths == "" {
		return usageErrorf("rules: --paths FILE is required (docs/fleet.md shows the format)")
	}
	if err := rules.WriteFile(*paths, *out, stdout); errors.Is(err, rules.ErrPaths) {
		return usageErrorf("rules: %w", err)
	} else if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	return nil
}
