package main

import (
	"fmt"
	"io"

	"github.com/ldafwd/ldafwd/report"
	"github.com/spf13/pflag"
)

// outputFlags are the flags every command shares: --format and --report.
type outputFlags struct {
	format string
	report string
}

func (o *outputFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.format, "format", "table", "output format: table (readable) or json (JSON lines, docs/reports.md)")
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
// closer. In table mode the writer only feeds --report (or nothing). The
// report file is opened now, so a path that cannot be written fails the
// command at start; each line goes to it whole or not at all (lineFile),
// and a partial last line an earlier, killed writer left is ended first
// (endLine).
func (o *outputFlags) open(stdout io.Writer) (*report.Writer, func() error, error) {
	var sinks []io.Writer
	if o.format == "json" {
		sinks = append(sinks, stdout)
	}
	closeFn := func() error { return nil }
	if o.report != "" {
		f, err := report.OpenLineFile(o.report)
		if err != nil {
			return nil, nil, fmt.Errorf("--report: %w", err)
		}
		sinks = append(sinks, f)
		closeFn = f.Close
	}
	return report.NewWriter(sinks...), closeFn, nil
}
