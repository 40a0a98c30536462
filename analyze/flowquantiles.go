package analyze

import (
	"fmt"
	"slices"

	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Per-flow delay quantiles (docs/sample.md, "Per-flow quantiles"): the
// receiver records the flow of every packet its sample keeps, so the
// delays an interval's sample lines paired split by flow. A flow's
// samples are then a uniform sample of its delivered packets — the
// selection is by identity, whatever the flow — and bound its quantiles
// with the same order statistics as the class's (synopsis.EstimateQuantiles).

// sampleSizeCodes are the causes that say only that a sample line's
// sample is small or empty: they leave its samples fit for the flows'.
var sampleSizeCodes = []report.Code{report.FewSamples, report.NoPackets, report.AllLost}

// FlowQuantiles puts on each LDS flow line of one interval and direction
// (synopsis "lds" with a flow_hash) the flow's sampled delay quantiles,
// in extra: "quantiles" as a sample line's (p50 … p99.9, each bounded at
// the sample lines' confidence or null with the reason),
// "sampled_delays" (the flow's received samples they rest on),
// "sample_rate" and "sample_level" (the rate the flow's samples were cut
// to, as a sample line's). lines are all the interval's lines of the direction,
// sample lines included: without one (no sample ran) the flow lines get
// nothing.
//
// A flow's packets may fall in several classes, each sampled at its own
// rate: its samples are taken from every class's line, cut to the
// lowest threshold (the sparsest rate) any of them reached, so that each
// of its packets had the same chance to be kept. That needs every class's sample: where one did
// not match, or is not valid for its delay for a cause other than its
// size (few_samples, no_packets, all_lost), no flow is bounded and each
// quantile's reason names the class and the cause. The bounds widen by
// the largest stamp uncertainty of the classes' samples. The flow line's
// own validity (its LDS estimate) does not enter: the quantiles carry
// their own.
func FlowQuantiles(lines []*report.Interval) {
	var samples, flows []*report.Interval
	for _, l := range lines {
		switch {
		case l.Synopsis == "sample" && l.Flow == "":
			samples = append(samples, l)
		case l.Synopsis == "lds":
			if _, ok := l.Extra["flow_hash"].(uint64); ok {
				flows = append(flows, l)
			}
		}
	}
	if len(samples) == 0 || len(flows) == 0 {
		return
	}
	why := ""
	thresh := uint64(synopsis.SampleAll)
	var errNs float64
	conf := samples[0].Conf
	for _, s := range samples {
		if why = sampleUnfit(s); why != "" {
			break
		}
		thresh = min(thresh, s.SampleFlows.Threshold)
		errNs = max(errNs, s.StampErrNs)
	}
	if why != "" {
		for _, l := range flows {
			qs := make(map[string]report.Quantile, len(synopsis.SampleQuantiles))
			for _, p := range synopsis.SampleQuantiles {
				qs["p"+synopsis.PercentileName(p)] = report.Quantile{Reason: why}
			}
			setExtra(l, "quantiles", qs)
		}
		return
	}
	byFlow := make(map[uint64][]int64, len(flows))
	for _, l := range flows {
		byFlow[l.Extra["flow_hash"].(uint64)] = nil
	}
	for _, s := range samples {
		for _, d := range s.SampleFlows.Delays {
			if ds, ok := byFlow[d.FlowHash]; ok && synopsis.SampleKeepsSelect(d.Select, thresh) {
				byFlow[d.FlowHash] = append(ds, d.DelayNs)
			}
		}
	}
	for _, l := range flows {
		ds := byFlow[l.Extra["flow_hash"].(uint64)]
		slices.Sort(ds) // each class's are sorted; several classes' are not
		qs := synopsis.EstimateQuantiles(ds, synopsis.SampleQuantiles, conf, uint64(max(errNs, 0)))
		setExtra(l, "quantiles", sampleQuantiles(qs))
		setExtra(l, "sampled_delays", len(ds))
		setExtra(l, "sample_rate", float64(thresh)/synopsis.SampleAll)
		setExtra(l, "sample_level", synopsis.SampleThresholdLevel(thresh))
	}
}

// sampleUnfit says why a class's sample line cannot give its samples to
// the flows' quantiles ("" when it can).
func sampleUnfit(s *report.Interval) string {
	for _, c := range s.Verdict().Causes() {
		if c.Code.Scope()&report.ScopeDelay != 0 && !slices.Contains(sampleSizeCodes, c.Code) {
			return fmt.Sprintf("class %s's sample is not valid for its delay: %s", s.MEC, c.Why)
		}
	}
	if s.SampleFlows == nil {
		return fmt.Sprintf("class %s's sample keeps no flows", s.MEC)
	}
	return ""
}
