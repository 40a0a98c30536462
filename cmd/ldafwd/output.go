package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ldafwd/ldafwd/report"
	"github.com/spf13/pflag"
)

// outputFlags are the flags every command shares: --format and --report.
type outputFlags struct {
	format string
	report string
}

func (o *outputFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.format, "format", "table", "output format: table (readable) or json (JSON lines, DESIGN §6)")
	fs.StringVar(&o.report, "report", "", "also append JSON lines to this file")
}

func (o *outputFlags) validate() error {
	switch o.format {
	case "table", "json":
		return nil
	}
	return fmt.Errorf("--format %q: want table or json", o.format)
}

// open returns the JSON writer (stdout in json mode, plus --report) and a
// closer. In table mode the writer only feeds --report (or nothing).
func (o *outputFlags) open(stdout io.Writer) (*report.Writer, func() error, error) {
	var sinks []io.Writer
	if o.format == "json" {
		sinks = append(sinks, stdout)
	}
	closeFn := func() error { return nil }
	if o.report != "" {
		f, err := os.OpenFile(o.report, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("--report: %w", err)
		}
		sinks = append(sinks, f)
		closeFn = f.Close
	}
	return report.NewWriter(sinks...), closeFn, nil
}

// newFlagSet makes a command's flag set: errors are returned, not exit(2).
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("ldafwd "+name, pflag.ContinueOnError)
	fs.SortFlags = false
	return fs
}
