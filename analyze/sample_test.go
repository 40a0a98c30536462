package analyze_test

import (
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
	var lines, checks, misses, unbounded, lossy int
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
		for _, p := range synopsis.SampleQuantiles {
			k := "p" + synopsis.PercentileName(p)
			truth := delays[synopsis.QuantileRank(len(delays), p)-1]
			if tq[k] != truth {
				t.Errorf("interval %d %s: true_quantiles %d, the generator's %d", l.Interval, k, tq[k], truth)
			}
			q := qs[k]
			if q.EstimateNs == nil {
				unbounded++
				if want := synopsis.MinSamplesFor(p, conf); l.Samples >= uint64(want) || !strings.Contains(q.Reason, "needed") {
					t.Errorf("interval %d %s: no bound from %d samples (%s)", l.Interval, k, l.Samples, q.Reason)
				}
				continue
			}
			checks++
			if *q.LoNs > *q.EstimateNs || *q.EstimateNs > *q.HiNs {
				t.Errorf("interval %d %s: estimate %d outside its bounds [%d, %d]", l.Interval, k, *q.EstimateNs, *q.LoNs, *q.HiNs)
			}
			if truth < *q.LoNs || truth > *q.HiNs {
				misses++
				t.Logf("interval %d %s: truth %d outside [%d, %d] (estimate %d)", l.Interval, k, truth, *q.LoNs, *q.HiNs, *q.EstimateNs)
			}
		}
		mn, _ := l.Extra["min_ns"].(int64)
		mx, _ := l.Extra["max_ns"].(int64)
		if mn < delays[0] || mx > delays[len(delays)-1] || mn > mx {
			t.Errorf("interval %d: sampled delays %d..%d, the interval's %d..%d", l.Interval, mn, mx, delays[0], delays[len(delays)-1])
		}
	}
	allowed := float64(checks)*(1-conf) + 3*math.Sqrt(float64(checks)*conf*(1-conf))
	t.Logf("%d lines (%d with loss), %d quantiles bounded, %d missed the truth (%.1f allowed), %d unbounded", lines, lossy, checks, misses, allowed, unbounded)
	if lines < 10 || lossy < lines/2 || checks < 3*lines || unbounded == 0 || float64(misses) > allowed {
		t.Errorf("%d lines, %d lossy, %d bounded, %d unbounded, %d misses (%.1f allowed)", lines, lossy, checks, unbounded, misses, allowed)
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
