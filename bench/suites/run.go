package suites

import (
	"fmt"
	"io"
	"regexp"

	"github.com/ldafwd/ldafwd/progress"
	"github.com/ldafwd/ldafwd/report"
)

// RunMatching runs, in name order, every suite whose name matches only
// and passes each record to emit. A suite that cannot run here (no DPDK,
// not root) does not hide the others: its error goes to stderr as
// "bench: NAME: …" and its name to failed. Unless quiet, a terminal
// stderr shows the suite running and the last record done; the line is
// cleared before emit runs, so a table on the same terminal stays clean.
func RunMatching(o *Options, only *regexp.Regexp, emit func(report.Bench), stderr io.Writer, quiet bool) (ran int, failed []string) {
	meter, running := progress.New(stderr, quiet), ""
	show := func(b report.Bench) {
		meter.Clear()
		defer meter.Set("%s; last done: %s", running, b.Name)
		emit(b)
	}
	for _, s := range All() {
		if !only.MatchString(s.Name) {
			continue
		}
		ran++
		running = fmt.Sprintf("bench: running suite %s (%.0f s so far)", s.Name, meter.Elapsed().Seconds())
		meter.Set("%s", running)
		err := s.Run(o, show)
		meter.Clear()
		if err != nil {
			fmt.Fprintf(stderr, "bench: %s: %v\n", s.Name, err)
			failed = append(failed, s.Name)
		}
	}
	return ran, failed
}
