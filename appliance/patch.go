package appliance

import (
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// linePatch is a change to a line after it was built, found by the
// timestamp exchange (a repair's reply: the estimate again with the
// sender's timestamps; its undoing or completion when packets crossed
// the interval's boundary; what the exchange cost; an LDS flow estimated
// again from repaired sketches) or by the crossing checks (a loss the
// RDA decoded identity by identity). The part that finds the change
// returns a patch and leaves the line alone; apply writes it to the
// report line and to the estimate the line was built from together, so
// that the two never disagree.
type linePatch struct {
	// delay, when set, is the delay estimate anew; its ci is the
	// estimator's own bound: the line's adds the stamps' uncertainty
	// (stamps), the estimate's does not (as pairing builds them).
	delay *delayFields
	// stamps, when set, are the stamps' figures anew (an LDS flow's,
	// which follow the cells its estimate averaged); the line's bound is
	// then the estimate's as given (the flow estimate's includes them).
	stamps *stampFigures
	// received and lost, when set, are the line's counts anew.
	received, lost *uint64
	set            map[string]any // extra fields set
	unset          []string       // extra fields removed (applied after set)
	// lift is a cause removed if the line has it (0: none): the
	// estimator's own, which the repair answered. add are causes added,
	// after lift.
	lift report.Code
	add  []report.Cause
}

// stampFigures are a line's stamp uncertainty fields.
type stampFigures struct{ tx, rx, sum float64 }

// apply writes p to r and to e (nil: the line has no estimate).
func (p *linePatch) apply(r *report.Interval, e *synopsis.Estimate) {
	if s := p.stamps; s != nil {
		r.TxStampErrNs, r.RxStampErrNs, r.StampErrNs = s.tx, s.rx, s.sum
	}
	if d := p.delay; d != nil {
		ci := d.ci
		if p.stamps == nil {
			ci += r.StampErrNs
		}
		r.MeanNs, r.StddevNs, r.MeanCINs = d.mean, d.stddev, ci
		r.Samples, r.Usable, r.Buckets = d.samples, d.usable, d.buckets
		if e != nil {
			e.MeanNs, e.StddevNs, e.MeanCINs = d.mean, d.stddev, d.ci
			e.Samples, e.UsableBuckets = d.samples, d.usable
		}
	}
	if n := p.received; n != nil {
		r.Received = *n
		if e != nil {
			e.Received = *n
		}
	}
	if n := p.lost; n != nil {
		r.Lost = *n
		if e != nil {
			e.Lost = *n
		}
	}
	if len(p.set)+len(p.unset) > 0 && r.Extra == nil {
		r.Extra = map[string]any{}
	}
	for k, v := range p.set {
		r.Extra[k] = v
	}
	for _, k := range p.unset {
		delete(r.Extra, k)
	}
	if p.lift != 0 && r.Verdict().Has(p.lift) {
		r.Clear(p.lift)
		if e != nil && !e.Valid && e.Code == p.lift {
			e.Valid, e.Reason, e.Code = true, "", 0
		}
	}
	for _, why := range p.add {
		invalidate(r, e, why)
	}
}

// invalidate adds cause why to line r and, while it is valid, to its
// estimate e (nil: none).
func invalidate(r *report.Interval, e *synopsis.Estimate, why report.Cause) {
	r.Invalidate(why.Code, why.Why)
	if e != nil && e.Valid {
		e.Valid, e.Reason, e.Code = false, why.Why, why.Code
	}
}

// delayOf is r's delay estimate as a patch's delay (its bound without
// the stamps' uncertainty).
func delayOf(r *report.Interval) delayFields {
	return delayFields{mean: r.MeanNs, stddev: r.StddevNs, ci: r.MeanCINs - r.StampErrNs, samples: r.Samples, usable: r.Usable, buckets: r.Buckets}
}
