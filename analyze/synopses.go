package analyze

import (
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
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
