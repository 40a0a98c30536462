package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/ldafwd/ldafwd/metrics/rules"
)

func init() {
	register("rules", "write the Prometheus recording and alerting rules of a fleet from its paths file (--paths FILE)", runRules)
}

func runRules(args []string) error { return rulesMain(args, os.Stdout) }

// rulesMain writes the Prometheus rules that a paths file (segments, paths
// of segments, window, alert thresholds: docs/fleet.md) generates, to
// stdout or --out: the binary carries the generator, so a deployment needs
// neither Go nor the source tree.
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
	var b bytes.Buffer
	if err := rules.GenerateFile(&b, *paths); err != nil {
		// A paths file that does not parse is the user's to fix: 2, as a
		// bad --config is.
		if _, statErr := os.Stat(*paths); statErr == nil {
			return usageErrorf("rules: %w", err)
		}
		return fmt.Errorf("rules: %w", err)
	}
	if *out == "-" {
		_, err := stdout.Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	return nil
}
