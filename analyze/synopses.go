package analyze

import (
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// SideSynopsis is one end's copy of a synopsis other than the LDA (RDA,
// LDS) for one interval and MEC. Offline analysis calls it through an
// interface; the appliance's hot path uses the concrete types instead.
type SideSynopsis interface {
	Add(m *classifier.Meta, mec uint16, ts uint64)
	Reset()
}

// SynopsisFactory makes matching sender/receiver copies of one synopsis
// kind and turns a pair into report lines (one per interval, or one per
// flow for LDS). The caller sets interval, times, direction and MEC.
type SynopsisFactory interface {
	Name() string
	// PerMEC: one instance per measurement class (RDA), or one for all
	// traffic with the class passed to Add (LDS: flow weights by class).
	PerMEC() bool
	New() (SideSynopsis, error)
	Estimate(sender, receiver SideSynopsis, conf float64) []report.Interval
}

// estimator is a factory whose lines come with the estimates behind them
// (one per line), so that Run can check estimates across classes.
type estimator interface {
	EstimateWith(sender, receiver SideSynopsis, conf float64) ([]report.Interval, []synopsis.Estimate)
}

// estimateLines calls f's EstimateWith when it has one; es is nil otherwise.
func estimateLines(f SynopsisFactory, sender, receiver SideSynopsis, conf float64) ([]report.Interval, []synopsis.Estimate) {
	if x, ok := f.(estimator); ok {
		return x.EstimateWith(sender, receiver, conf)
	}
	return f.Estimate(sender, receiver, conf), nil
}
