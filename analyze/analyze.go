package analyze

import (
	"runtime"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Config says what to compute from a pair of captures.
type Config struct {
	Interval time.Duration // 0: the whole capture is one interval
	LDA      synopsis.LDAConfig
	// LDARecord, when it has banks, is a larger shape of LDA's banks
	// (each bank as many rows or more) to record each class's LDA at:
	// lines are estimated at LDA (the recorded LDA folded to it is
	// exactly LDA's), and where that sample is thin under heavy loss
	// (synopsis.LDAThin) at LDARecord, which keeps more of the same
	// packets. The line's extra then says lda_rows (the shape estimated)
	// and lda_rows_configured_samples.
	LDARecord  synopsis.LDAConfig
	UseLDA     bool
	Extra      []SynopsisFactory // RDA, LDS… (see synopses.go)
	Classifier *classifier.Classifier
	Truth      bool    // add exact ground truth from matching identities
	Conf       float64 // confidence of mean_ci_ns, e.g. 0.98
	Direction  string  // report's "direction", e.g. "a>b"
	// Microbursts: losses recovered from single-loss LDA buckets (Varghese
	// slides) closer than MicroburstGapNs are grouped; groups of at least
	// MicroburstMin are reported in the LDA line's extra. Gap 0: off.
	MicroburstGapNs uint64
	MicroburstMin   int
	// InvalidateDamaged: a damaged capture is analyzed up to (or around)
	// the damage and the intervals it touches are reported valid:false
	// naming it. Otherwise (the default) damage is an error.
	InvalidateDamaged bool
	// MaxDelay bounds the one-way delay, clock offset between the two
	// captures included, that the streaming analysis pairs across: copies
	// of an identity further apart are different packets. 0:
	// DefaultMaxDelay.
	MaxDelay time.Duration
	// WholeCapture reads both captures whole into memory before pairing
	// instead of streaming them (as Run does anyway with captures that
	// cannot be read twice).
	WholeCapture bool
	// Shards is how many goroutines the streaming analysis pairs on, each
	// the identities whose hash falls in it: 0 is GOMAXPROCS (at most
	// MaxShards), 1 pairs on Run's own goroutine. Every count gives the
	// same report.
	Shards int
	// Split is how many time segments each streaming pass reads the
	// captures in, each on a goroutine of its own: 0 leaves it to
	// GOMAXPROCS and the captures' length (at most MaxShards; segments
	// shorter than a few windows are not worth their overlap), 1 never
	// splits, more forces that many cuts whatever the length (tests).
	// Every count gives the same report.
	Split int
	// Progress, if set, is called every ProgressEvery frames read and
	// once per interval reported, from one goroutine at a time (Run's, or
	// a time segment's), so that a command can show how far a long
	// analysis is (see Progress).
	Progress func(Progress)
}

// MaxShards bounds the shards Config.Shards 0 asks for.
const MaxShards = 8

// shards is the number of shards the streaming analysis pairs on.
func (c *Config) shards() int {
	if c.Shards > 0 {
		return c.Shards
	}
	return min(runtime.GOMAXPROCS(0), MaxShards)
}

// ProgressEvery is how many frames Run reads between two Progress calls.
const ProgressEvery = 1 << 14

// Progress is how far Run is.
//
// The streaming analysis reads both captures in passes (Pass counts
// from 1; Passes is how many it expects, 2 unless a survey has to be
// repeated): Frames and Bytes (of TotalBytes, both files' sizes, 0 when a
// size is unknown; compressed bytes for a compressed capture) are how far
// the current pass is, Read the frames of every pass so far, and
// Intervals the intervals reported, which the last pass does as it
// reads. Phase is "survey" or "report". A pass read in time segments
// reads a window's worth of records on each side of a cut twice: its
// Frames and Bytes count them twice.
//
// The whole-capture analysis (Pass 0) reads the sender's capture (Phase
// "sender"), then the receiver's ("receiver"), then estimates
// ("intervals").
type Progress struct {
	Phase             string
	Pass, Passes      int
	Frames, Read      uint64 // frames read from both captures: this pass, all passes
	Bytes, TotalBytes int64
	Intervals         uint64
}

// MinMatchedShare is the share of the sender's packets in the common time
// range that must be found at the receiver for a pair of captures to be
// compared at all. Below it the two captures do not see the same traffic
// (wrong interface, wrong direction, different days) and every number
// would be noise; a real path losing 90 % of its packets is better told
// by `lost` of a capture pair that passes.
const MinMatchedShare = 0.10

// Stats counts what happened to the frames of both captures.
type Stats struct {
	SenderFrames, ReceiverFrames       uint64
	SenderMalformed, ReceiverMalformed uint64 // malformed headers, or shorter than their headers say without a snap length cutting them (still measured)
	SenderControl, ReceiverControl     uint64 // ldafwd control frames, not measured
	// Link-local frames (STP, LLDP, ARP, … that the segment's own devices
	// send and consume) no MEC claims: not measured.
	SenderLinkLocal, ReceiverLinkLocal uint64
	SenderSnapped, ReceiverSnapped     uint64 // frames cut by the capture's snap length
	// Snap-excluded: frames whose identity reaches past what the smaller
	// snap length of the two captures keeps (after up to two VLAN tags), so
	// the two ends could hash different bytes; left out at both ends.
	SenderSnapExcluded, ReceiverSnapExcluded uint64
	Intervals                                int
	// Ambiguous: packets whose identity occurs more than once at that end
	// (bit-identical frames): their pairing is first-in first-out.
	SenderAmbiguous, ReceiverAmbiguous uint64
	TruthAmbiguous                     uint64 // = SenderAmbiguous (older name)
	// Matched: sender packets found at the receiver; MatchedShare is their
	// share of the sender's packets in the common range.
	Matched      uint64
	MatchedShare float64
	// Crossed: packets received after packets of a later interval (kept
	// in their own interval). ExtraReceived: receiver packets that match
	// no sent packet (duplicated or originated inside the segment).
	Crossed, ExtraReceived uint64
	// Common range, in the sender's clock, and what lay outside it.
	RangeStartNs, RangeEndNs                    uint64
	TrimmedSenderBefore, TrimmedSenderAfter     uint64
	TrimmedReceiverBefore, TrimmedReceiverAfter uint64
	// Disorder: records stamped earlier than a record before them (sorted
	// away when the step back is at most MaxBackStep).
	SenderDisordered, ReceiverDisordered uint64
	MaxBackStepNs                        uint64
	Damage                               []*DamageError
	Warnings                             []string
	// PeakHeld is the most packet records the streaming analysis held at
	// once, in either pass (0 for the whole-capture analysis, which holds
	// them all).
	PeakHeld int
	// Segments is how many time segments the reporting pass read the
	// captures in, on as many goroutines (0: on one; see Config.Split).
	// Like PeakHeld it says how, not what: the lines do not depend on it.
	Segments int
}

// LDARecordIntervals is the most intervals MaxDelay may span for
// RecordLDALarger to record larger: the larger LDA is 400 KB per class and
// interval in flight.
const LDARecordIntervals = 64

// RecordLDALarger sets LDARecord to the shape a live appliance records
// (synopsis.RecordLDAConfig: 8 × 1024 rows, LDA's digest setting) where
// it folds to LDA and MaxDelay spans at most LDARecordIntervals
// intervals: lines are then estimated at LDA, or at 8 × 1024 where heavy
// loss leaves LDA's sample thin. ldafwd analyze does this without LDA
// sizing flags.
func (c *Config) RecordLDALarger() {
	maxDelay := c.MaxDelay
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay * time.Nanosecond
	}
	if c.Interval > 0 && c.Interval < maxDelay/LDARecordIntervals {
		return
	}
	rec := synopsis.RecordLDAConfig()
	rec.Digest = c.LDA.Digest
	if common, err := synopsis.CommonLDAConfig(c.LDA, rec); err == nil && common.Equal(c.LDA) {
		c.LDARecord = rec
	}
}

// recordLDA is the shape each class's LDA is recorded at.
func (c *Config) recordLDA() synopsis.LDAConfig {
	if len(c.LDARecord.Banks) > 0 {
		return c.LDARecord
	}
	return c.LDA
}

// side is one end's synopses for one interval: one set per MEC.
type side struct {
	lda    []*synopsis.LDA
	extra  [][]SideSynopsis // [mec][factory]; a global factory's instance is shared by every mec
	frames uint64
}

func newSide(cfg *Config, classes int) (*side, error) {
	s := &side{}
	global := make([]SideSynopsis, len(cfg.Extra))
	for i, f := range cfg.Extra {
		if !f.PerMEC() {
			x, err := f.New()
			if err != nil {
				return nil, err
			}
			global[i] = x
		}
	}
	for i := 0; i < classes; i++ {
		if cfg.UseLDA {
			l, err := synopsis.NewLDA(cfg.recordLDA())
			if err != nil {
				return nil, err
			}
			s.lda = append(s.lda, l)
		}
		var ex []SideSynopsis
		for j, f := range cfg.Extra {
			if !f.PerMEC() {
				ex = append(ex, global[j])
				continue
			}
			x, err := f.New()
			if err != nil {
				return nil, err
			}
			ex = append(ex, x)
		}
		s.extra = append(s.extra, ex)
	}
	return s, nil
}

func (s *side) add(m *classifier.Meta, mec uint16, ts uint64) {
	if s.lda != nil {
		s.lda[mec].Add(m.Hash, ts)
	}
	for _, x := range s.extra[mec] {
		x.Add(m, mec, ts)
	}
	s.frames++
}

func (s *side) reset() {
	for _, l := range s.lda {
		l.Reset()
	}
	// Shared instances are reset once per MEC; Reset is idempotent.
	for _, ex := range s.extra {
		for _, x := range ex {
			x.Reset()
		}
	}
	s.frames = 0
}

func mecIndex(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return 0
}

// fill copies an Estimate into a report line.
func fill(r *report.Interval, e synopsis.Estimate) {
	r.Synopsis = e.Synopsis
	r.Sent, r.Received, r.Lost = e.Sent, e.Received, e.Lost
	r.MeanNs, r.StddevNs, r.MeanCINs, r.Conf = e.MeanNs, e.StddevNs, e.MeanCINs, e.Conf
	r.Samples, r.Usable, r.Buckets = e.Samples, e.UsableBuckets, e.TotalBuckets
	var v report.Verdict
	if !e.Valid {
		v.Add(e.Code, e.Reason)
	}
	r.SetVerdict(v)
}

// Fill is fill for other packages (the appliance reports the same fields).
func Fill(r *report.Interval, e synopsis.Estimate) { fill(r, e) }

// Microburst is one burst of losses in a report's extra.
type Microburst struct {
	StartNs uint64 `json:"start_ns"`
	EndNs   uint64 `json:"end_ns"`
	Losses  int    `json:"losses"`
}

func microbursts(in []synopsis.Microburst) []Microburst {
	out := make([]Microburst, len(in))
	for i, m := range in {
		out[i] = Microburst{StartNs: m.StartNs, EndNs: m.EndNs, Losses: m.Losses}
	}
	return out
}
