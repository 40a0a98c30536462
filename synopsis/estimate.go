package synopsis

// Estimate is what every synopsis's estimator returns for one interval: the
// number and, beside it, how far to trust it. Reports (DESIGN §6) are built
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
