package analyze_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestSampleFlowLines: with the LDS and the sample together, every flow
// line carries its flow's sampled quantiles, and each bound holds the
// flow's true quantile — of its delivered packets of the interval, from
// the generator's own per-packet record, not from analyze's pairing — at
// least as often as the confidence says. The flows' delays differ (each
// its own mean), so a delay given to the wrong flow would show. The
// flow line's true_quantiles are the generator's, and the p99.9 says it
// cannot be bounded from a flow's few samples.
func TestSampleFlowLines(t *testing.T) {
	const conf = 0.98
	snd, rcv, tr := captures(t, analyzetest.Config{
		Packets: 120_000, Rate: 40_000, Start: time.Unix(1_700_000_000, 0),
		Flows: 4, MeanDelay: 40 * time.Microsecond, Shape: 0.7, Loss: 0.02, Seed: 13,
		FlowDelaySpread: 0.6, NanoPcap: true, PcapNG: true,
	})
	cl, _ := classifier.NewClassifier(nil)
	sample := synopsis.SampleConfig{Level: 0, Capacity: 4000} // 10 000 packets an interval: level 2, ~2 500 samples, ~600 a flow
	out, _ := run(t, snd, rcv, analyze.Config{Interval: 250 * time.Millisecond, Truth: true, Conf: conf,
		Extra: []analyze.SynopsisFactory{analyze.SampleFactory{Config: sample}, analyze.LDSFactory{Auto: true, Classifier: cl}}})
	flowIdx := map[string]int32{}
	for i, n := range tr.FlowNames {
		flowIdx[n] = int32(i)
	}
	var lines int
	var qt quantileTally
	for _, l := range out {
		if l.Synopsis != "lds" || l.Flow == "" {
			continue
		}
		lines++
		fi, ok := flowIdx[l.Flow]
		if !ok {
			t.Fatalf("interval %d: flow %q is not the generator's", l.Interval, l.Flow)
		}
		lo, hi := l.StartNs, l.EndNs
		if v, ok := l.Extra["measured_from_ns"].(int64); ok {
			lo = v
		}
		if v, ok := l.Extra["measured_to_ns"].(int64); ok {
			hi = v
		}
		var delays []int64
		for i, s := range tr.SendNs {
			if tr.Flow[i] == fi && s >= lo && s < hi && tr.RecvNs[i] >= 0 {
				delays = append(delays, tr.RecvNs[i]-s)
			}
		}
		slices.Sort(delays)
		qs, _ := l.Extra["quantiles"].(map[string]report.Quantile)
		tq, _ := l.Extra["true_quantiles"].(map[string]int64)
		n, _ := l.Extra["sampled_delays"].(int)
		if len(qs) != 4 || len(delays) == 0 || n == 0 || n > len(delays) {
			t.Fatalf("interval %d flow %s: quantiles %v from %d sampled delays, %d delivered", l.Interval, l.Flow, qs, n, len(delays))
		}
		qt.check(t, fmt.Sprintf("interval %d flow %s", l.Interval, l.Flow), qs, tq, n, delays, conf)
	}
	allowed := qt.allowed(conf)
	t.Logf("%d flow lines, %d quantiles bounded, %d missed the truth (%.1f allowed), %d unbounded", lines, qt.checks, qt.misses, allowed, qt.unbounded)
	if lines < 40 || qt.checks < 3*lines || qt.unbounded < lines || float64(qt.misses) > allowed {
		t.Errorf("%d flow lines, %d bounded, %d unbounded, %d misses (%.1f allowed)", lines, qt.checks, qt.unbounded, qt.misses, allowed)
	}
}

// flowLine is an LDS line of flow fh, as FlowQuantiles finds them.
func flowLine(fh uint64) *report.Interval {
	return &report.Interval{Synopsis: "lds", Flow: "6 10.0.0.1:1>10.0.0.2:2", Extra: map[string]any{"flow_hash": fh}}
}

// TestFlowQuantilesClasses: a flow's samples come from every class's
// sample line, cut to the deepest level among them (a packet of the
// shallower class that the deeper level drops is left out), widened by
// the largest stamp uncertainty; a class whose sample is not valid for a
// cause other than its size leaves every flow unbounded, saying why; a
// class whose sample is only small does not; without a sample line the
// flow lines get nothing.
func TestFlowQuantilesClasses(t *testing.T) {
	sel := func(level uint8, keep bool) uint32 { // selection bits level keeps, or only the level above does
		if level == 0 || keep {
			return 0
		}
		return 1 << (32 - level)
	}
	var a, b []report.FlowDelay
	for i := range 1000 {
		// Class a at level 1, class b at level 2: half of a's are
		// dropped by the cut to 2 (their delays 1e6 and up give them away).
		d := int64(1000 + i)
		if i%2 == 1 {
			d = 1_000_000 + int64(i)
		}
		a = append(a, report.FlowDelay{FlowHash: 7, Select: sel(2, i%2 == 0), DelayNs: d})
		b = append(b, report.FlowDelay{FlowHash: 7, Select: sel(2, true), DelayNs: 5000 + int64(i)})
		b = append(b, report.FlowDelay{FlowHash: 8, Select: 0, DelayNs: 9})
	}
	slices.SortFunc(a, func(x, y report.FlowDelay) int { return int(x.DelayNs - y.DelayNs) })
	mk := func(mec string, level uint8, ds []report.FlowDelay, errNs float64) *report.Interval {
		return &report.Interval{Synopsis: "sample", MEC: mec, Conf: 0.98, StampErrNs: errNs, Valid: true, LossValid: true, DelayValid: true,
			Extra: map[string]any{"sample_level": level}, SampleFlows: &report.SampleFlows{Threshold: synopsis.SampleLevelThreshold(level), Delays: ds}}
	}
	sa, sb := mk("a", 1, a, 10), mk("b", 2, b, 30)
	f7, f8 := flowLine(7), flowLine(8)
	analyze.FlowQuantiles([]*report.Interval{sa, sb, f7, f8})
	if n := f7.Extra["sampled_delays"]; n != 1500 || f7.Extra["sample_level"] != uint8(2) {
		t.Fatalf("flow 7: %v sampled delays at level %v, want 1500 at 2", n, f7.Extra["sample_level"])
	}
	q := f7.Extra["quantiles"].(map[string]report.Quantile)["p99"]
	if q.EstimateNs == nil || *q.HiNs >= 1_000_000 || *q.HiNs-30 > 5999 || *q.LoNs+30 < 1000 {
		t.Fatalf("flow 7 p99 %+v: a delay the cut drops is in, or the bounds are not widened by 30 ns", q)
	}
	if n := f8.Extra["sampled_delays"]; n != 1000 {
		t.Fatalf("flow 8: %v sampled delays", n)
	}

	// A class that is small is fine; one that did not match is not.
	sa.Invalidate(report.FewSamples, "3 samples cannot bound p50")
	f7 = flowLine(7)
	analyze.FlowQuantiles([]*report.Interval{sa, sb, f7})
	if q := f7.Extra["quantiles"].(map[string]report.Quantile)["p99"]; q.EstimateNs == nil {
		t.Fatalf("a class with few samples left the flow unbounded: %s", q.Reason)
	}
	failed, _ := analyze.SampleFailed(report.Interval{MEC: "b"}, 0.98, report.Cause{Code: report.Budget, Why: "sample left out by the control budget"})
	f7 = flowLine(7)
	analyze.FlowQuantiles([]*report.Interval{sa, &failed, f7})
	for k, q := range f7.Extra["quantiles"].(map[string]report.Quantile) {
		if q.EstimateNs != nil || !strings.Contains(q.Reason, "class b") || !strings.Contains(q.Reason, "control budget") {
			t.Fatalf("%s with class b's sample left out: %+v", k, q)
		}
	}
	if _, ok := f7.Extra["sampled_delays"]; ok {
		t.Fatal("sampled_delays without samples")
	}

	// No sample line: nothing.
	f7 = flowLine(7)
	analyze.FlowQuantiles([]*report.Interval{f7})
	if _, ok := f7.Extra["quantiles"]; ok {
		t.Fatal("quantiles without a sample")
	}
}
