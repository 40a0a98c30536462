package analyze

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/ldafwd/ldafwd/report"
)

// Every test of this package that runs a pair of captures able to stream
// runs both analyses and holds them to each other: the same lines byte
// for byte (as the report writes them and as the table prints them), the
// same statistics, the same error. A difference panics, naming it.
func init() {
	oracle = func(sender, receiver *Capture, cfg Config, keepFlows bool, emit func(*report.Interval)) (Stats, error) {
		var streamed, whole bytes.Buffer
		ws, ww := report.NewWriter(&streamed), report.NewWriter(&whole)
		var lines []*report.Interval
		var prog Progress
		stS, errS := runStream(sender, receiver, cfg, keepFlows, func(l *report.Interval) {
			ws.Write(l)
			fmt.Fprintln(&streamed, report.AnalyzeRow(l, cfg.Truth))
		}, &prog)
		if err := sender.Rewind(); err != nil {
			return Stats{}, err
		}
		if err := receiver.Rewind(); err != nil {
			return Stats{}, err
		}
		oracleRuns++
		stW, errW := runWhole(sender, receiver, cfg, keepFlows, func(l *report.Interval) {
			ww.Write(l)
			fmt.Fprintln(&whole, report.AnalyzeRow(l, cfg.Truth))
			lines = append(lines, l)
		}, &prog)
		if fmt.Sprint(errS) != fmt.Sprint(errW) {
			panic(fmt.Sprintf("streaming analysis: error %v, whole-capture analysis: %v", errS, errW))
		}
		if a, b := streamed.String(), whole.String(); a != b {
			panic(fmt.Sprintf("streaming and whole-capture lines differ:\n--- streaming\n%s\n--- whole\n%s", firstDiff(a, b), firstDiff(b, a)))
		}
		peak := stS.PeakHeld
		stS.PeakHeld = 0
		if !reflect.DeepEqual(stS, stW) {
			panic(fmt.Sprintf("statistics differ:\nstreaming %+v\nwhole     %+v", stS, stW))
		}
		for _, l := range lines {
			emit(l)
		}
		stW.PeakHeld = peak
		return stW, errW
	}
}

// firstDiff is a from its first line that differs from b, a few lines.
func firstDiff(a, b string) string {
	al, bl := bytes.Split([]byte(a), []byte("\n")), bytes.Split([]byte(b), []byte("\n"))
	for i := range al {
		if i >= len(bl) || !bytes.Equal(al[i], bl[i]) {
			end := min(len(al), i+4)
			return fmt.Sprintf("line %d of %d:\n%s", i+1, len(al), bytes.Join(al[i:end], []byte("\n")))
		}
	}
	return fmt.Sprintf("(a prefix of the other, %d lines)", len(al))
}

// oracleRuns counts the pairs held to both analyses.
var oracleRuns int

// OracleRuns is oracleRuns for the package's external tests.
func OracleRuns() int { return oracleRuns }
