package analyze

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
)

// ShardInFlight is the most records the batches sent to the shards and
// not yet answered hold.
const ShardInFlight = shardAhead * shardBatchLen

// Every test of this package that runs a pair of captures able to stream
// runs both analyses and holds them to each other: the same lines byte
// for byte (as the report writes them and as the table prints them), the
// same statistics, the same error. A difference panics, naming it.
func init() {
	oracle = func(sender, receiver *Capture, cfg Config, keepFlows bool, emit func(*report.Interval)) (Stats, error) {
		// The streaming analysis pairs on 1 to 4 shards in turn.
		if cfg.Shards == 0 {
			cfg.Shards = 1 + oracleRuns%4
		}
		var streamed, whole bytes.Buffer
		ws, ww := report.NewWriter(&streamed), report.NewWriter(&whole)
		var lines, linesS []*report.Interval
		var prog Progress
		stS, errS := runStream(sender, receiver, cfg, keepFlows, func(l *report.Interval) {
			ws.Write(l)
			fmt.Fprintln(&streamed, report.AnalyzeRow(l, cfg.Truth))
			linesS = append(linesS, l)
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
		peak := stS.PeakHeld
		stS.PeakHeld, stS.Segments = 0, 0
		// Cut into time segments (forced, however short the captures),
		// the streaming analysis reports the same.
		if err := sender.Rewind(); err != nil {
			return Stats{}, err
		}
		if err := receiver.Rewind(); err != nil {
			return Stats{}, err
		}
		cfgT := cfg
		cfgT.Split = 2 + oracleRuns%3
		var cut bytes.Buffer
		wc := report.NewWriter(&cut)
		before := segmentRuns.Load()
		stT, errT := runStream(sender, receiver, cfgT, keepFlows, func(l *report.Interval) {
			wc.Write(l)
			fmt.Fprintln(&cut, report.AnalyzeRow(l, cfg.Truth))
		}, &prog)
		stT.PeakHeld, stT.Segments = 0, 0
		if segmentRuns.Load() > before {
			segmentedPairs++
		}
		if fmt.Sprint(errS) != fmt.Sprint(errT) {
			panic(fmt.Sprintf("streaming analysis: error %v, in %d segments: %v", errS, cfgT.Split, errT))
		}
		if a, b := streamed.String(), cut.String(); a != b {
			panic(fmt.Sprintf("streaming lines differ in %d segments:\n--- streaming\n%s\n--- segments\n%s", cfgT.Split, firstDiff(a, b), firstDiff(b, a)))
		}
		if !reflect.DeepEqual(stS, stT) {
			panic(fmt.Sprintf("statistics differ in %d segments:\nstreaming %+v\nsegments  %+v", cfgT.Split, stS, stT))
		}
		if err := sender.Rewind(); err != nil {
			return Stats{}, err
		}
		if err := receiver.Rewind(); err != nil {
			return Stats{}, err
		}
		same := fmt.Sprint(errS) == fmt.Sprint(errW) && streamed.String() == whole.String() && reflect.DeepEqual(stS, stW)
		if !same && beyondWindow(sender, receiver, cfg) {
			// The two analyses are held to each other only where the
			// documented contract holds: every identity's copies within
			// the window. Beyond it (a damaged timestamp, an identity
			// that repeats seconds apart) streaming pairs fewer copies,
			// by design; the caller checks what a user gets by default,
			// the streaming report.
			for _, l := range linesS {
				emit(l)
			}
			stS.PeakHeld = peak
			return stS, errS
		}
		if fmt.Sprint(errS) != fmt.Sprint(errW) {
			panic(fmt.Sprintf("streaming analysis: error %v, whole-capture analysis: %v", errS, errW))
		}
		if a, b := streamed.String(), whole.String(); a != b {
			panic(fmt.Sprintf("streaming and whole-capture lines differ:\n--- streaming\n%s\n--- whole\n%s", firstDiff(a, b), firstDiff(b, a)))
		}
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

// StreamReport runs the streaming analysis alone, pairing on shards
// shards, and returns what it reports: every line as JSON and as a table
// row, then the statistics (but PeakHeld) and the error.
func StreamReport(sender, receiver *Capture, cfg Config, shards int) (string, error) {
	keepFlows, err := cfg.defaults()
	if err != nil {
		return "", err
	}
	if err := sender.Rewind(); err != nil {
		return "", err
	}
	if err := receiver.Rewind(); err != nil {
		return "", err
	}
	cfg.Shards = shards
	var out bytes.Buffer
	w := report.NewWriter(&out)
	var prog Progress
	st, err := runStream(sender, receiver, cfg, keepFlows, func(l *report.Interval) {
		w.Write(l)
		// (A sample line withdrawn has no true_lost for the table's truth
		// columns; its JSON line says what it has.)
		fmt.Fprintln(&out, report.AnalyzeRow(l, cfg.Truth && (l.TrueMeanNs == nil || l.TrueLost != nil)))
	}, &prog)
	for _, d := range st.Damage {
		fmt.Fprintln(&out, "damage:", d)
	}
	st.PeakHeld, st.Damage, st.Segments = 0, nil, 0
	fmt.Fprintf(&out, "%+v\nerror: %v\n", st, err)
	return out.String(), nil
}

// FirstDiff is firstDiff for the package's external tests.
func FirstDiff(a, b string) string { return firstDiff(a, b) }

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

// beyondWindow reports whether some identity's copies, at both ends
// together, span more than the streaming window (cfg.MaxDelay plus
// matchSlack): there streaming opens a second group where the
// whole-capture analysis pairs across any distance, and the two may
// differ. Both captures are rewound after.
func beyondWindow(sender, receiver *Capture, cfg Config) bool {
	w := cfg.MaxDelay.Nanoseconds()
	if w <= 0 {
		w = DefaultMaxDelay
	}
	w += matchSlack
	defer sender.Rewind()
	defer receiver.Rewind()
	if sender.Rewind() != nil || receiver.Rewind() != nil {
		return false
	}
	keys := map[uint64]classifier.FlowKey{}
	s, err := load(sender, cfg.Classifier, false, keys, nil)
	if err != nil {
		return false
	}
	r, err := load(receiver, cfg.Classifier, false, keys, nil)
	if err != nil {
		return false
	}
	type span struct{ lo, hi uint64 }
	spans := map[uint64]span{}
	for _, e := range []*endData{s, r} {
		for _, x := range e.recs {
			sp, ok := spans[x.hash]
			if !ok {
				sp = span{x.ts, x.ts}
			}
			spans[x.hash] = span{min(sp.lo, x.ts), max(sp.hi, x.ts)}
		}
	}
	for _, sp := range spans {
		if int64(sp.hi-sp.lo) > w {
			return true
		}
	}
	return false
}

// oracleRuns counts the pairs held to both analyses.
var oracleRuns int

// segmentedPairs counts the pairs whose streaming analysis the oracle
// also ran in time segments, some pass of it cut.
var segmentedPairs int

// SegmentedPairs is segmentedPairs for the package's external tests.
func SegmentedPairs() int { return segmentedPairs }

// OracleRuns is oracleRuns for the package's external tests.
func OracleRuns() int { return oracleRuns }

// SegmentRuns is how many streaming passes ran in time segments so far.
func SegmentRuns() int { return int(segmentRuns.Load()) }
