package synopsis

import (
	"fmt"

	"github.com/ldafwd/ldafwd/report"
)

// Estimate is what every synopsis's estimator returns for one interval: the
// number and, beside it, how far to trust it. Reports (docs/reports.md) are built
// from it field by field.
type Estimate struct {
	Synopsis string // "lda", "rda" or "lds"

	Sent     uint64 // packets recorded at the sender
	Received uint64 // packets recorded at the receiver
	Lost     uint64 // Sent - Received when Sent >= Received, else 0 (RDA: decoded lost packets)
	// Extra counts packets the receiver recorded that the sender did not
	// (duplicated, injected or remarked inside the segment, reordered in
	// across an interval boundary): for the LDA and LDS a lower bound
	// proven by ExtraBuckets buckets; for the RDA the decoded receiver-only
	// packets. When it is not 0 the estimate is invalid: each extra packet
	// hides a loss from Sent − Received.
	Extra        uint64
	ExtraBuckets int
	// ExtraMissProb (LDA): the probability that one extra packet would
	// have gone unseen, hidden in a bucket that lost more than it gained
	// (LDADiagnostics.ExtraMissProb). A valid line's Lost rests on there
	// being none; each that exists escaped with this probability.
	ExtraMissProb float64

	MeanNs   float64 // estimated mean one-way delay, ns
	StddevNs float64 // estimated standard deviation of the delay, ns
	MeanCINs float64 // half-width of the confidence interval of MeanNs, ns
	Conf     float64 // confidence level of MeanCINs, e.g. 0.98

	Samples       uint64 // effective sample size behind MeanNs
	StddevSamples uint64 // effective sample size behind StddevNs
	UsableBuckets int    // buckets whose sender and receiver sides matched
	TotalBuckets  int

	Valid  bool   // false: do not use MeanNs/StddevNs; Reason says why
	Reason string // empty when Valid
	// Code is Reason's typed cause (0 when Valid): what a report line's
	// verdict takes, and what decides between causes — never Reason.
	Code report.Code
	// OnlyExtras (LDA with digests): invalid only because the receiver
	// recorded packets the sender did not; every other check passed. The
	// mean rests on buckets whose counts and digests agree, which no extra
	// packet enters; only the loss count is unknown. An identity-level
	// decode (the RDA) that accounts for every extra packet may vouch for
	// the line (appliance, crossing.go).
	OnlyExtras bool
}

// IntegrityFields are e's evidence of extra packets for a report's added
// fields ("extra": the lower bound or decoded count, "extra_buckets": the
// buckets or cells that prove them, "extra_miss_prob": ExtraMissProb);
// nil when all are 0.
func (e Estimate) IntegrityFields() map[string]any {
	if e.Extra == 0 && e.ExtraBuckets == 0 && e.ExtraMissProb == 0 {
		return nil
	}
	return map[string]any{"extra": e.Extra, "extra_buckets": e.ExtraBuckets, "extra_miss_prob": e.ExtraMissProb}
}

// RequireLossVerified makes a valid estimate invalid when an extra packet
// (duplicated, injected or remarked inside the segment, crossed in from
// the previous interval) would have gone unseen with probability above
// maxMiss (ExtraMissProb): for a caller that cannot rule such packets out
// and wants the loss count exact at a stated confidence, e.g. maxMiss =
// 1 − conf. Under loss this invalidates most LDA lines (the default LDA
// passes 0.02 only below about 40 losses per interval); the RDA's loss,
// decoded identity by identity, never needs it.
func (e *Estimate) RequireLossVerified(maxMiss float64) {
	if e.Valid && e.ExtraMissProb > maxMiss {
		e.Valid, e.Code = false, report.LossUnverified
		e.Reason = fmt.Sprintf("loss not verifiable: a packet the receiver saw and the sender did not (duplicated, injected, remarked or crossed in) would go unseen with probability %.2g in buckets that lost more than they gained", e.ExtraMissProb)
	}
}
