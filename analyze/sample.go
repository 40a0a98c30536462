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
// a line shows what the shipped sample supports, and says its size. Each
// end's sample keeps its packets' flows (where the LDS runs, the flow
// lines' quantiles come from them: FlowQuantiles).
type SampleFactory struct{ Config synopsis.SampleConfig }

type sampleSide struct{ p *synopsis.Sample }

func (s *sampleSide) Add(m *classifier.Meta, _ uint16, ts uint64) {
	s.p.AddFlow(m.Hash, m.FlowHash, ts)
}
func (s *sampleSide) Reset() { s.p.Reset() }

func (f SampleFactory) Name() string { return "sample" }
func (f SampleFactory) PerMEC() bool { return true }
func (f SampleFactory) New() (SideSynopsis, error) {
	p, err := synopsis.NewSample(f.Config)
	if err != nil {
		return nil, err
	}
	p.TrackFlows()
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
	wire, err := snd.AppendBinary(nil)
	var shipped *synopsis.Sample
	if err == nil {
		shipped, err = synopsis.DecodeSample(wire)
	}
	if err != nil {
		r, e := SampleFailed(report.Interval{}, conf, report.Cause{Code: report.Decode, Why: err.Error()})
		return []report.Interval{r}, []synopsis.Estimate{e}
	}
	r, e := SampleLine(report.Interval{}, shipped, rcv, len(wire), conf)
	return []report.Interval{r}, []synopsis.Estimate{e}
}

// SampleFailed is the line of a sample that could not be matched (it
// does not decode, does not match the other end's; live, it was lost or
// left out): invalid for why, its quantiles null. r carries the line's
// interval, class and the like; the synopsis, confidence and verdict are
// set here.
func SampleFailed(r report.Interval, conf float64, why report.Cause) (report.Interval, synopsis.Estimate) {
	r.Synopsis, r.Conf = "sample", conf
	r.Invalidate(why.Code, why.Why)
	r.Extra = map[string]any{"quantiles": map[string]report.Quantile{}, "min_ns": nil, "max_ns": nil}
	WithdrawSample(&r)
	return r, synopsis.Estimate{Synopsis: "sample", Conf: conf, Reason: r.Reason, Code: why.Code}
}

// SampleLine matches the sender's sample as shipped (decoded from its
// wire encoding, wireBytes long) with the receiver's own and builds the
// sample line on r: counts, the quantiles with their bounds at conf,
// the smallest and largest sampled delay, the sample's loss rate and the
// verdict (docs/sample.md). Offline analyze and the live appliance both
// report through it.
func SampleLine(r report.Interval, shipped, own *synopsis.Sample, wireBytes int, conf float64) (report.Interval, synopsis.Estimate) {
	r.Synopsis, r.Conf = "sample", conf
	m, err := synopsis.MatchSamples(shipped, own)
	if err != nil {
		return SampleFailed(r, conf, report.Cause{Code: report.Decode, Why: err.Error()})
	}
	e := synopsis.Estimate{Synopsis: "sample", Conf: conf}
	r.Sent, r.Received, r.Lost = m.Sent, m.Received, m.Lost
	r.Samples = uint64(len(m.DelaysNs))
	r.StampErrNs = float64(m.StampErrNs)
	e.Sent, e.Received, e.Lost, e.Extra, e.Samples = m.Sent, m.Received, m.Lost, m.Extra, r.Samples
	qs := synopsis.EstimateQuantiles(m.DelaysNs, synopsis.SampleQuantiles, conf, m.StampErrNs)
	r.Extra = map[string]any{
		"quantiles":          sampleQuantiles(qs),
		"sample_level":       m.Level,
		"sample_rate":        float64(m.Threshold) / synopsis.SampleAll,
		"sample_digest_bits": m.DigestBits,
		"sample_bytes":       wireBytes,
		"sample_extra":       m.Extra,
		"offered_sent":       m.OfferedSent,
		"offered_received":   m.OfferedReceived,
		"min_ns":             nil,
		"max_ns":             nil,
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
	r.SampleDelaysNs = m.DelaysNs
	if m.FlowDelays != nil {
		r.SampleFlows = &report.SampleFlows{Threshold: m.Threshold, Delays: m.FlowDelays}
	}
	var v report.Verdict
	bounded := slices.ContainsFunc(qs, func(q synopsis.Quantile) bool { return q.Valid })
	switch {
	case m.Sent == 0 && m.AmbiguousSent == 0:
		v.Add(report.NoPackets, fmt.Sprintf("no packet sampled at 1 in %.4g of the %d the sender offered", synopsis.SampleAll/float64(m.Threshold), m.OfferedSent))
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
	return r, e
}

// WithdrawSample nulls a sample line's quantiles and its smallest and
// largest delay when the line ends up with its delay not valid (a cause
// added after the estimate: capture damage, class change; live, the
// interval's session or the next interval's evidence): like mean_ns, no
// delay is written where the line cannot be trusted. Each quantile's
// reason points to the line's.
func WithdrawSample(l *report.Interval) {
	if l.Synopsis != "sample" || l.Valid || l.DelayValid {
		return
	}
	l.SampleDelaysNs = nil
	if qs, ok := l.Extra["quantiles"].(map[string]report.Quantile); ok {
		for _, p := range synopsis.SampleQuantiles {
			qs["p"+synopsis.PercentileName(p)] = report.Quantile{Reason: "the line is not valid: " + l.Reason}
		}
	}
	l.Extra["min_ns"], l.Extra["max_ns"] = nil, nil
}

// sampleTrueLost is the exact truth of a sample line's lost: of the
// sender's packets of the line's class and interval (sent, in time order)
// that the line's threshold (its sample_rate × 2^32) selects, those the pairing found no receiver copy
// for — counting, as the line does, only packets whose digest no other
// selected packet shares at the sender and at most one selected receiver
// packet of the class and interval (rcv) holds, on the digest bits
// the pairing compared (sample_digest_bits). nil when the line has no
// rate (it did not estimate).
func sampleTrueLost(l *report.Interval, mec uint16, sent, rcv []sampleRec) *uint64 {
	rate, ok := l.Extra["sample_rate"].(float64)
	if !ok {
		return nil
	}
	th := uint64(rate * synopsis.SampleAll) // exact: a threshold ≤ 2^32 over 2^32
	db, _ := l.Extra["sample_digest_bits"].(uint8)
	digest := func(h uint64) uint32 { return synopsis.SampleDigest(h) & uint32(uint64(1)<<db-1) }
	sc, rc := map[uint32]int{}, map[uint32]int{}
	for _, x := range sent {
		if x.mec == mec && synopsis.SampleSelectedAt(x.hash, th) {
			sc[digest(x.hash)]++
		}
	}
	for _, x := range rcv {
		if x.mec == mec && synopsis.SampleSelectedAt(x.hash, th) {
			rc[digest(x.hash)]++
		}
	}
	var lost uint64
	for _, x := range sent {
		if x.mec != mec || !synopsis.SampleSelectedAt(x.hash, th) {
			continue
		}
		if d := digest(x.hash); sc[d] == 1 && rc[d] <= 1 && !x.matched {
			lost++
		}
	}
	return &lost
}

// TrueQuantiles are the exact p50 … p99.9 of delays (every delivered
// packet of a line's class and interval): the ⌈NP⌉-th smallest, as the
// sample's estimate is of its own. It sorts delays; nil when empty.
func TrueQuantiles(delays []int64) map[string]int64 {
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
