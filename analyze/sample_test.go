package analyze_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestSampleLines: a sample line per interval whose lost is the exact
// truth of its sampled packets, whose true_quantiles are the generator's
// own (every delivered packet of the interval, computed here from the
// generator's per-packet record, not from analyze's pairing), whose
// bounds hold those quantiles at least as often as the confidence says,
// whose smallest and largest delays lie within the interval's, and whose
// p99.9 says it cannot be bounded where the sample is under the 4603 it
// takes at 98 %.
func TestSampleLines(t *testing.T) {
	const conf = 0.98
	snd, rcv, tr := captures(t, analyzetest.Config{
		Packets: 150_000, Rate: 50_000, Start: time.Unix(1_700_000_000, 0),
		Flows: 300, MeanDelay: 40 * time.Microsecond, Shape: 0.7, Loss: 0.02, Seed: 11,
		NanoPcap: true, PcapNG: true,
	})
	sample := synopsis.SampleConfig{Level: 0, Capacity: 6000} // 12 500 packets an interval: ~3 100 samples
	out, _ := run(t, snd, rcv, analyze.Config{Interval: 250 * time.Millisecond, Truth: true, Conf: conf,
		Extra: []analyze.SynopsisFactory{analyze.SampleFactory{Config: sample}}})
	// The generator's packets by send time.
	idx := make([]int, len(tr.SendNs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(tr.SendNs[a] - tr.SendNs[b]) })
	var lines, lossy int
	var qt quantileTally
	for _, l := range out {
		if l.Synopsis != "sample" {
			t.Fatalf("a %s line", l.Synopsis)
		}
		lines++
		if !l.Valid {
			t.Fatalf("interval %d: not valid: %s", l.Interval, l.Reason)
		}
		if l.TrueLost == nil || l.Lost != *l.TrueLost || l.Received+l.Lost != l.Sent || l.Samples != l.Received {
			t.Errorf("interval %d: sent %d received %d lost %d samples %d, true lost %v", l.Interval, l.Sent, l.Received, l.Lost, l.Samples, l.TrueLost)
		}
		if l.Lost > 0 {
			lossy++
		}
		lo, hi := l.StartNs, l.EndNs
		if v, ok := l.Extra["measured_from_ns"].(int64); ok {
			lo = v
		}
		if v, ok := l.Extra["measured_to_ns"].(int64); ok {
			hi = v
		}
		var delays []int64
		for _, i := range idx {
			if s := tr.SendNs[i]; s >= lo && s < hi && tr.RecvNs[i] >= 0 {
				delays = append(delays, tr.RecvNs[i]-s)
			}
		}
		slices.Sort(delays)
		tq, _ := l.Extra["true_quantiles"].(map[string]int64)
		qs, _ := l.Extra["quantiles"].(map[string]report.Quantile)
		if len(qs) != 4 {
			t.Fatalf("interval %d: quantiles %v", l.Interval, l.Extra["quantiles"])
		}
		qt.check(t, fmt.Sprintf("interval %d", l.Interval), qs, tq, int(l.Samples), delays, conf)
		mn, _ := l.Extra["min_ns"].(int64)
		mx, _ := l.Extra["max_ns"].(int64)
		if mn < delays[0] || mx > delays[len(delays)-1] || mn > mx {
			t.Errorf("interval %d: sampled delays %d..%d, the interval's %d..%d", l.Interval, mn, mx, delays[0], delays[len(delays)-1])
		}
	}
	allowed := qt.allowed(conf)
	t.Logf("%d lines (%d with loss), %d quantiles bounded, %d missed the truth (%.1f allowed), %d unbounded", lines, lossy, qt.checks, qt.misses, allowed, qt.unbounded)
	if lines < 10 || lossy < lines/2 || qt.checks < 3*lines || qt.unbounded == 0 || float64(qt.misses) > allowed {
		t.Errorf("%d lines, %d lossy, %d bounded, %d unbounded, %d misses (%.1f allowed)", lines, lossy, qt.checks, qt.unbounded, qt.misses, allowed)
	}
}

// TestSampleLinesSmall: a sample of 64 at most halves its rate until the
// whole capture fits, names the level it reached and the bytes shipped,
// keeps its loss exact, and says p99 needs 459 samples.
func TestSampleLinesSmall(t *testing.T) {
	snd, rcv, _ := captures(t, analyzetest.Config{
		Packets: 30_000, Rate: 30_000, Start: time.Unix(1_700_000_000, 0),
		Flows: 50, MeanDelay: 40 * time.Microsecond, Shape: 0.7, Loss: 0.01, Seed: 12,
		NanoPcap: true, PcapNG: true,
	})
	out, _ := run(t, snd, rcv, analyze.Config{Interval: 0, Truth: true,
		Extra: []analyze.SynopsisFactory{analyze.SampleFactory{Config: synopsis.SampleConfig{Level: 4, Capacity: 64}}}})
	if len(out) != 1 {
		t.Fatalf("%d lines", len(out))
	}
	l := out[0]
	lvl, _ := l.Extra["sample_level"].(uint8)
	b, _ := l.Extra["sample_bytes"].(int)
	if l.TrueLost == nil || lvl < 4 || l.Sent > 64 || l.Sent < 16 || b < 4*int(l.Sent) || l.Lost != *l.TrueLost || !l.Valid {
		t.Fatalf("level %d, sent %d, %d bytes, lost %d of truth %v, valid %v %s", lvl, l.Sent, b, l.Lost, l.TrueLost, l.Valid, l.Reason)
	}
	qs := l.Extra["quantiles"].(map[string]report.Quantile)
	if q := qs["p99"]; q.EstimateNs != nil || !strings.Contains(q.Reason, "459 needed") {
		t.Fatalf("p99 of %d samples: %+v", l.Samples, q)
	}
}

// quantileTally counts, over lines, the quantile bounds checked against
// the truth, those that missed it, and those left unbounded.
type quantileTally struct{ checks, misses, unbounded int }

// check holds one line's quantiles (qs, with true_quantiles tq from n
// sampled delays) to delays, the sorted true delays of its packets: each
// true_quantiles must be the truth, each estimate within its bounds, and
// each quantile without a bound must say how many samples it needs.
// where names the line in messages.
func (q *quantileTally) check(t *testing.T, where string, qs map[string]report.Quantile, tq map[string]int64, n int, delays []int64, conf float64) {
	t.Helper()
	for _, p := range synopsis.SampleQuantiles {
		k := "p" + synopsis.PercentileName(p)
		truth := delays[synopsis.QuantileRank(len(delays), p)-1]
		if tq[k] != truth {
			t.Errorf("%s %s: true_quantiles %d, the generator's %d", where, k, tq[k], truth)
		}
		b := qs[k]
		if b.EstimateNs == nil {
			q.unbounded++
			if want := synopsis.MinSamplesFor(p, conf); n >= want || !strings.Contains(b.Reason, "needed") {
				t.Errorf("%s %s: no bound from %d samples (%s)", where, k, n, b.Reason)
			}
			continue
		}
		q.checks++
		if *b.LoNs > *b.EstimateNs || *b.EstimateNs > *b.HiNs {
			t.Errorf("%s %s: estimate %d outside its bounds [%d, %d]", where, k, *b.EstimateNs, *b.LoNs, *b.HiNs)
		}
		if truth < *b.LoNs || truth > *b.HiNs {
			q.misses++
			t.Logf("%s %s: truth %d outside [%d, %d] (estimate %d, %d samples)", where, k, truth, *b.LoNs, *b.HiNs, *b.EstimateNs, n)
		}
	}
}

// allowed is how many misses a confidence of conf allows over the
// checks: the expected count plus three standard deviations.
func (q *quantileTally) allowed(conf float64) float64 {
	c := float64(q.checks)
	return c*(1-conf) + 3*math.Sqrt(c*conf*(1-conf))
}
