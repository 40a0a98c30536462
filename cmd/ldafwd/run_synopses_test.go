package main

import (
	"context"
	"fmt"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"github.com/ldafwd/ldafwd/synopsis"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
)

// runPair runs two `ldafwd run` mains joined by a ring link that loses
// lossRate of the a→b frames, sends flows flows at 10 kpps for dur from
// the test, and returns the receiver's (#2's) interval lines, its log, and
// the link's exact per-interval truth (data frames only).
//
//	test ─ring:G─ [a run#1 b] ═ring:S═ [a run#2 b] ─ring:K─ test
func runPair(t *testing.T, tag string, args1, args2 []string, flows int, lossRate float64, dur time.Duration) ([]report.Interval, string, map[int64]dataplane.TruthInterval) {
	t.Helper()
	id := tag + fmt.Sprint(os.Getpid())
	g, s, k := "G"+id, "S"+id, "K"+id
	truth, err := dataplane.NewIntervalTruth(appliance.DirAtoB)
	if err != nil {
		t.Fatal(err)
	}
	loss, err := model.NewUniformLoss(lossRate)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, c dataplane.LinkConfig) *dataplane.RingLink {
		l, err := dataplane.NewRingLink(name, c)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	lg := mk(g, dataplane.LinkConfig{Size: 4096, Pool: 16384})
	mk(s, dataplane.LinkConfig{Size: 4096, Pool: 16384, AtoB: &dataplane.ImpairConfig{Loss: loss, Seed: 11, Truth: dataTruth(truth)}})
	lk := mk(k, dataplane.LinkConfig{Size: 16384, Pool: 4096})
	defer func() {
		lg.A().Close()
		lk.B().Close()
	}()
	common := []string{"--interval", "200ms", "--insecure", "--format", "json", "--stats-interval", "1h", "--drain", "1s",
		"--max-delay", "500ms", "--min-delay", "-50ms", "--idle-sleep", "20us"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out1, out2, err1, err2 syncBuf
	errs := make(chan error, 2)
	go func() {
		errs <- runMain(ctx, append(append([]string{"--port-a", "ring:" + g + ".b", "--port-b", "ring:" + s + ".a", "--segment-port", "b"}, common...), args1...), &out1, &err1)
	}()
	go func() {
		errs <- runMain(ctx, append(append([]string{"--port-a", "ring:" + s + ".b", "--port-b", "ring:" + k + ".a", "--segment-port", "a"}, common...), args2...), &out2, &err2)
	}()
	time.Sleep(100 * time.Millisecond)
	gen := traffic.MustGen(traffic.GenConfig{Flows: flows, Size: 128})
	sinkStop := make(chan struct{})
	sinkDone := sinkPort(lk.B(), sinkStop, nil)
	sendPaced(lg.A(), gen, 10_000, dur, 1)
	time.Sleep(500 * time.Millisecond)
	stopRunMains(t, cancel, errs)
	close(sinkStop)
	<-sinkDone
	ivs, _ := runLines(t, out2.String())
	return ivs, err2.String(), truthByInterval(truth)
}

// TestRunAllSynopses: `run --synopsis all` at both ends reports an RDA
// line per LDA line and the LDS's flows; every valid RDA line has the
// exact loss of its interval, and the valid LDS flow lines of an interval
// add up to its exact loss and to the LDA's sent count (40 flows, all
// reported, in a sketch sized for 10 000: no collisions, exact counts).
func TestRunAllSynopses(t *testing.T) {
	if raceEnabled {
		t.Skip("RDA and LDS estimation under -race overrun the 200 ms intervals")
	}
	args := []string{"--synopsis", "all", "--top", "40", "--control-copies", "2", "--control-budget", "off"}
	ivs, log, truths := runPair(t, "AS", args, args, 40, 0.005, 1500*time.Millisecond)
	lda := map[int64]report.Interval{}
	var rdaValid, ldsChecked, smpValid int
	type sums struct {
		sent, lost  uint64
		lines, cols int
		invalid     bool
	}
	lds := map[int64]*sums{}
	for _, r := range ivs {
		if r.Direction != "a>b" {
			continue
		}
		if !strings.Contains(r.Config, "rda=3x2048") || !strings.Contains(r.Config, "lds=") {
			t.Errorf("interval %d %s: config %q does not state the RDA and LDS", r.Interval, r.Synopsis, r.Config)
		}
		ti, ok := truths[r.Interval]
		if !r.Valid && r.Flow == "" {
			t.Logf("%s interval %d invalid: %s", r.Synopsis, r.Interval, r.Reason)
		}
		switch r.Synopsis {
		case "lda":
			lda[r.Interval] = r
		case "rda":
			if !r.Valid {
				continue
			}
			rdaValid++
			if !ok || r.Lost != ti.Lost {
				t.Errorf("rda interval %d: lost %d, exact %d (truth known %v)", r.Interval, r.Lost, ti.Lost, ok)
			}
		case "sample":
			if !r.Valid {
				continue
			}
			smpValid++
			if r.Samples == 0 || r.Extra["quantiles"] == nil || ok && r.Lost > ti.Lost {
				t.Errorf("sample interval %d: %d samples, %d lost (class lost %d), quantiles %v", r.Interval, r.Samples, r.Lost, ti.Lost, r.Extra["quantiles"])
			}
		case "lds":
			s := lds[r.Interval]
			if s == nil {
				s = &sums{}
				lds[r.Interval] = s
			}
			s.lines++
			s.sent += r.Sent
			s.lost += r.Lost
			// A flow that lost packets has no delay sample in its cell
			// (one cell per flow by default) and is invalid, but its
			// counts are still exact: only a line invalid for another
			// reason leaves the interval out of the check.
			s.invalid = s.invalid || !r.Valid && !strings.Contains(r.Reason, "lost or reordered")
			if r.Flow == "" {
				// The part's one line when it has no flows to name: its
				// fragments lost on the segment, or left out by the
				// budget. Never valid.
				if r.Valid {
					t.Errorf("lds interval %d: a valid line without a flow", r.Interval)
				}
				continue
			}
			// Sized from the traffic: recorded for 65 536 flows, shipped
			// folded for the flows it saw.
			if m := ldsShape.FindStringSubmatch(r.Config); m == nil || m[1] != "4" || m[2] != "4" {
				t.Errorf("lds interval %d: config %q: want 4 rows recorded and shipped", r.Interval, r.Config)
			} else {
				s.cols, _ = strconv.Atoi(m[3])
			}
		}
	}
	for k, s := range lds {
		l, ok := lda[k]
		if s.invalid || !ok || !l.Valid {
			continue
		}
		ldsChecked++
		// Folded to the flows seen, 4 cells per flow and row: the fold
		// halves while at least 4 per flow remain.
		if s.cols < 4*s.lines || s.cols >= 8*s.lines && s.cols > 16*17 || s.cols >= 8192 {
			t.Errorf("lds interval %d: %d flows shipped in %d columns", k, s.lines, s.cols)
		}
		if s.lines > 40 || s.sent != l.Sent || s.lost != truths[k].Lost {
			t.Errorf("lds interval %d: %d flows, Σ sent %d, Σ lost %d; LDA sent %d, exact loss %d", k, s.lines, s.sent, s.lost, l.Sent, truths[k].Lost)
		}
	}
	t.Logf("%d valid rda intervals, %d lds intervals checked against the truth, %d valid sample lines", rdaValid, ldsChecked, smpValid)
	if rdaValid < 3 || ldsChecked < 3 || smpValid < 3 {
		t.Errorf("%d valid rda, %d checked lds intervals and %d valid sample lines in 1.5 s of 200 ms intervals:\n%s", rdaValid, ldsChecked, smpValid, log)
	}
}

var ldsShape = regexp.MustCompile(`lds=(\d+)x\d+ .*lds-shipped=(\d+)x(\d+)`)

// TestRunConfigMismatch: two ends sized differently report every interval
// invalid, and the reason and the log name the setting that differs.
func TestRunConfigMismatch(t *testing.T) {
	ivs, log, _ := runPair(t, "CM", []string{"--synopsis", "lda,lds", "--lds-flows", "500"}, []string{"--synopsis", "lda,lds"}, 10, 0, 800*time.Millisecond)
	n := 0
	for _, r := range ivs {
		if r.Direction != "a>b" {
			continue
		}
		if !r.Valid && r.Reason == appliance.ReasonWarmup {
			continue // the interval the receiver started in: invalid for that first
		}
		n++
		if r.Valid || !strings.Contains(r.Reason, "lds: sender ") {
			t.Errorf("interval %d %s: valid %v, reason %q: want invalid naming the LDS size", r.Interval, r.Synopsis, r.Valid, r.Reason)
		}
	}
	if n == 0 {
		t.Error("no a>b interval lines")
	}
	if !strings.Contains(log, `"differs":"lds: sender `) {
		t.Errorf("the log does not name the setting:\n%s", log)
	}
}

// The sizing flags reach the appliance's configuration; a sizing flag of
// a synopsis that --synopsis leaves off is refused, not ignored.
func TestRunSynopsisFlags(t *testing.T) {
	base := []string{"--port-a", "ring:v.a", "--port-b", "ring:w.b", "--segment-port", "b", "--insecure"}
	o, err := parseAndValidate(append(base, "--synopsis", "all", "--rda-cells", "4096", "--lds-flows", "100", "--lds-cells-per-flow", "2"))
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.Syn.RDA == nil || o.cfg.Syn.RDA.Cells != 4096 || o.cfg.Syn.LDS == nil || o.cfg.Syn.LDS.CellsPerFlow != 2 || o.cfg.Top != 10 {
		t.Errorf("syn %+v / %+v, top %d", o.cfg.Syn.RDA, o.cfg.Syn.LDS, o.cfg.Top)
	}
	if o, err = parseAndValidate(base); err != nil || o.cfg.Syn.RDA == nil || o.cfg.Syn.LDS == nil || o.cfg.Syn.Sample == nil || !o.cfg.AdaptSample {
		t.Errorf("default: rda %v lds %v sample %v adapt %v (%v), want every synopsis, the sample sized by the budget", o.cfg.Syn.RDA, o.cfg.Syn.LDS, o.cfg.Syn.Sample, o.cfg.AdaptSample, err)
	}
	// A sample flag fixes the rate shipped.
	if o, err = parseAndValidate(append(append([]string{}, base...), "--synopsis", "lda,sample", "--sample-level", "3")); err != nil ||
		o.cfg.Syn.Sample == nil || o.cfg.Syn.Sample.Level != 3 || o.cfg.AdaptSample || o.cfg.Syn.RDA != nil {
		t.Errorf("lda,sample --sample-level 3: %+v adapt %v (%v)", o.cfg.Syn.Sample, o.cfg.AdaptSample, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--synopsis", "lda", "--lds-flows", "10"}, "--lds-flows"},
		{[]string{"--synopsis", "lda,lds", "--rda-cells", "10"}, "--rda-cells"},
		{[]string{"--synopsis", "nope"}, "--synopsis"},
		{[]string{"--synopsis", "all", "--top", "0"}, "--top"},
		{[]string{"--synopsis", "lds", "--lds-flows", "0"}, "--lds-flows"},
		{[]string{"--synopsis", "lda,rda,lds", "--sample-capacity", "100"}, "--sample-capacity"},
		{[]string{"--synopsis", "sample", "--sample-level", "33"}, "--sample-level"},
		{[]string{"--synopsis", "sample", "--sample-capacity", "0"}, "--sample-capacity"},
	} {
		if _, err := parseAndValidate(append(append([]string{}, base...), c.args...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}

// TestRunLDASizing: without LDA sizing flags the appliance records
// RecordLDAConfig and sizes what it ships per interval; any sizing flag
// fixes the shape (and stops the adaptation); --lda-digest alone does not.
func TestRunLDASizing(t *testing.T) {
	base := []string{"--port-a", "ring:v.a", "--port-b", "ring:w.b", "--segment-port", "b", "--insecure"}
	o, err := parseAndValidate(base)
	if err != nil {
		t.Fatal(err)
	}
	if !o.cfg.AdaptLDA || !o.cfg.Syn.LDA.Equal(synopsis.RecordLDAConfig()) {
		t.Errorf("default: adapt %v, LDA %v, want %v sized per interval", o.cfg.AdaptLDA, o.cfg.Syn.LDA, synopsis.RecordLDAConfig())
	}
	if o, err = parseAndValidate(append(append([]string{}, base...), "--lda-digest=false")); err != nil || !o.cfg.AdaptLDA || o.cfg.Syn.LDA.Digest || o.cfg.Syn.LDA.TotalRows() != 8*1024 {
		t.Errorf("--lda-digest=false: adapt %v, LDA %v (%v)", o.cfg.AdaptLDA, o.cfg.Syn.LDA, err)
	}
	for _, args := range [][]string{
		{"--lda-banks", "512:3,512:7"},
		{"--lda-counters", "2048"},
		{"--lda-expected-packets", "1000000"},
		{"--lda-loss-rates", "0.01"},
	} {
		o, err := parseAndValidate(append(append([]string{}, base...), args...))
		if err != nil {
			t.Fatal(err)
		}
		if o.cfg.AdaptLDA || o.cfg.Syn.LDA.Equal(synopsis.RecordLDAConfig()) {
			t.Errorf("%v: adapt %v, LDA %v, want the fixed shape", args, o.cfg.AdaptLDA, o.cfg.Syn.LDA)
		}
	}
}
