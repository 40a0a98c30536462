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
		f, err := openLineFile(o.report)
		if err != nil {
			return nil, nil, fmt.Errorf("--report: %w", err)
		}
		sinks = append(sinks, f)
		closeFn = f.Close
	}
	return report.NewWriter(sinks...), closeFn, nil
}

// lineFile is the --report file. A JSON line that cannot be written whole
// (a full disk, a quota) is cut off again, so the file never holds a
// corrupt line: readers see complete lines, and the error is returned for
// the caller to log and count.
type lineFile struct {
	f       truncFile
	size    int64 // bytes of complete lines
	regular bool  // size is meaningful (not a pipe or a device)
}

// truncFile is what lineFile needs of an *os.File.
type truncFile interface {
	io.WriteCloser
	Truncate(size int64) error
}

func openLineFile(path string) (*lineFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &lineFile{f: f, size: st.Size(), regular: st.Mode().IsRegular()}
	if l.regular {
		n, err := endLine(path, f)
		l.size += int64(n)
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	return l, nil
}

func (l *lineFile) Write(b []byte) (int, error) {
	n, err := l.f.Write(b)
	if err == nil && n == len(b) {
		l.size += int64(n)
		return n, nil
	}
	if err == nil {
		err = io.ErrShortWrite
	}
	if n > 0 && l.regular {
		if terr := l.f.Truncate(l.size); terr != nil {
			return n, fmt.Errorf("%w (and removing the partial line: %v)", err, terr)
		}
	}
	return n, err
}

func (l *lineFile) Close() error { return l.f.Close() }
