package analyze

import (
	"fmt"
	"slices"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// SampleFactory makes the trajectory sample of each MEC and reports its
// delay quantiles (docs/sample.md). The sender's sample goes through its
// wire encoding before it is matched, as an appliance would receive it, so
// a line shows what the shipped sample supports, and says its size.
type SampleFactory struct{ Config synopsis.SampleConfig }

type sampleSide struct{ p *synopsis.Sample }

func (s *sampleSide) Add(m *classifier.Meta, _ uint16, ts uint64) { s.p.Add(m.Hash, ts) }
func (s *sampleSide) Reset()                                      { s.p.Reset() }

func (f SampleFactory) Name() string { return "sample" }
func (f SampleFactory) PerMEC() bool { return true }
func (f SampleFactory) New() (SideSynopsis, error) {
	p, err := synopsis.NewSample(f.Config)
	if err != nil {
		return nil, err
	}
	return &sampleSide{p}, nil
}

func (f SampleFactory) Estimate(sender, receiver SideSynopsis, conf float64) []report.Interval {
	lines, _ := f.EstimateWith(sender, receiver, conf)
	return lines
}

// sampleQuantiles renders a sample's quantiles keyed p50, p90, p99,
// p99.9.
func sampleQuantiles(qs []synopsis.Quantile) map[string]report.Quantile {
	out := make(map[string]report.Quantile, len(qs))
	for _, q := range qs {
		k := "p" + synopsis.PercentileName(q.P)
		if !q.Valid {
			out[k] = report.Quantile{Reason: q.Reason}
			continue
		}
		est, lo, hi := q.EstimateNs, q.LoNs, q.HiNs
		out[k] = report.Quantile{EstimateNs: &est, LoNs: &lo, HiNs: &hi, LoRank: q.LoRank, HiRank: q.HiRank}
	}
	return out
}

// EstimateWith is Estimate with the estimate behind the line (its counts
// and extras, for the check across classes).
func (f SampleFactory) EstimateWith(sender, receiver SideSynopsis, conf float64) ([]report.Interval, []synopsis.Estimate) {
	snd, rcv := sender.(*sampleSide).p, receiver.(*sampleSide).p
	r := report.Interval{Synopsis: "sample", Conf: conf}
	e := synopsis.Estimate{Synopsis: "sample", Conf: conf}
	fail := func(err error) ([]report.Interval, []synopsis.Estimate) {
		r.Invalidate(report.Decode, err.Error())
		r.Extra = map[string]any{"quantiles": map[string]report.Quantile{}, "min_ns": nil, "max_ns": nil}
		withdrawSample(&r)
		e.Reason, e.Code = r.Reason, report.Decode
		return []report.Interval{r}, []synopsis.Estimate{e}
	}
	wire, err := snd.AppendBinary(nil)
	if err != nil {
		return fail(err)
	}
	shipped, err := synopsis.DecodeSample(wire)
	if err != nil {
		return fail(err)
	}
	m, err := synopsis.MatchSamples(shipped, rcv)
	if err != nil {
		return fail(err)
	}
	r.Sent, r.Received, r.Lost = m.Sent, m.Received, m.Lost
	r.Samples = uint64(len(m.DelaysNs))
	r.StampErrNs = float64(m.StampErrNs)
	e.Sent, e.Received, e.Lost, e.Extra, e.Samples = m.Sent, m.Received, m.Lost, m.Extra, r.Samples
	qs := synopsis.EstimateQuantiles(m.DelaysNs, synopsis.SampleQuantiles, conf, m.StampErrNs)
	r.Extra = map[string]any{
		"quantiles":        sampleQuantiles(qs),
		"sample_level":     m.Level,
		"sample_bytes":     len(wire),
		"sample_extra":     m.Extra,
		"offered_sent":     m.OfferedSent,
		"offered_received": m.OfferedReceived,
		"min_ns":           nil,
		"max_ns":           nil,
	}
	if m.AmbiguousSent+m.AmbiguousReceived > 0 {
		r.Extra["sample_ambiguous_sent"] = m.AmbiguousSent
		r.Extra["sample_ambiguous_received"] = m.AmbiguousReceived
	}
	if m.Sent > 0 {
		r.Extra["loss_rate"] = m.LossRate()
	}
	if n := len(m.DelaysNs); n > 0 {
		r.Extra["min_ns"], r.Extra["max_ns"] = m.DelaysNs[0], m.DelaysNs[n-1]
	}
	var v report.Verdict
	bounded := slices.ContainsFunc(qs, func(q synopsis.Quantile) bool { return q.Valid })
	switch {
	case m.Sent == 0 && m.AmbiguousSent == 0:
		v.Add(report.NoPackets, fmt.Sprintf("no packet sampled at level %d (1 in %d) of the %d the sender offered", m.Level, uint64(1)<<m.Level, m.OfferedSent))
	case m.Received == 0 && m.Sent > 0:
		v.Add(report.AllLost, fmt.Sprintf("all %d sampled packets were lost: no delay to measure", m.Sent))
	case !bounded:
		why := "no sampled packet pairs unambiguously"
		if len(qs) > 0 && qs[0].Reason != "" && m.Received > 0 {
			why = qs[0].Reason
		}
		v.Add(report.FewSamples, why)
	}
	r.SetVerdict(v)
	e.Valid, e.Reason, e.Code = r.Valid, r.Reason, v.Lead().Code
	return []report.Interval{r}, []synopsis.Estimate{e}
}

// withdrawSample nulls a sample line's quantiles and its smallest and
// largest delay when the line ends up not valid (a cause Run added after the
// estimate: capture damage, class change): like mean_ns, no delay is
// written where the line cannot be trusted. Each quantile's reason points
// to the line's.
func withdrawSample(l *report.Interval) {
	if l.Synopsis != "sample" || l.Valid {
		return
	}
	if qs, ok := l.Extra["quantiles"].(map[string]report.Quantile); ok {
		for _, p := range synopsis.SampleQuantiles {
			qs["p"+synopsis.PercentileName(p)] = report.Quantile{Reason: "the line is not valid: " + l.Reason}
		}
	}
	l.Extra["min_ns"], l.Extra["max_ns"] = nil, nil
}

// sampleTrueLost is the exact truth of a sample line's lost: of the
// sender's packets of the line's class and interval (sent, in time order)
// that the line's level selects, those the pairing found no receiver copy
// for — counting, as the line does, only packets whose digest no other
// selected packet shares at the sender and at most one selected receiver
// packet of the class and interval (rcv) holds. nil when the line has no
// level (it did not estimate).
func sampleTrueLost(l *report.Interval, mec uint16, sent, rcv []sampleRec) *uint64 {
	level, ok := l.Extra["sample_level"].(uint8)
	if !ok {
		return nil
	}
	sc, rc := map[uint32]int{}, map[uint32]int{}
	for _, x := range sent {
		if x.mec == mec && synopsis.SampleSelected(x.hash, level) {
			sc[synopsis.SampleDigest(x.hash)]++
		}
	}
	for _, x := range rcv {
		if x.mec == mec && synopsis.SampleSelected(x.hash, level) {
			rc[synopsis.SampleDigest(x.hash)]++
		}
	}
	var lost uint64
	for _, x := range sent {
		if x.mec != mec || !synopsis.SampleSelected(x.hash, level) {
			continue
		}
		if d := synopsis.SampleDigest(x.hash); sc[d] == 1 && rc[d] <= 1 && !x.matched {
			lost++
		}
	}
	return &lost
}

// trueQuantiles are the exact p50 … p99.9 of delays (every delivered
// packet of a line's class and interval): the ⌈NP⌉-th smallest, as the
// sample's estimate is of its own. It sorts delays; nil when empty.
func trueQuantiles(delays []int64) map[string]int64 {
	if len(delays) == 0 {
		return nil
	}
	slices.Sort(delays)
	out := map[string]int64{}
	for _, p := range synopsis.SampleQuantiles {
		out["p"+synopsis.PercentileName(p)] = delays[synopsis.QuantileRank(len(delays), p)-1]
	}
	return out
}
