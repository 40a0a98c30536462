package dataplane

import (
	"fmt"
	"sync/atomic"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/synopsis"
)

// SynConfig says which synopses a lane records and how big they are. The
// two appliances of a segment must use equal configurations (the Hello's
// config hash checks it).
type SynConfig struct {
	LDA     synopsis.LDAConfig
	RDA     *synopsis.RDAConfig    // nil: no RDA
	LDS     *synopsis.LDSConfig    // nil: no LDS
	Sample  *synopsis.SampleConfig // each class's trajectory sample (docs/sample.md); nil: none
	Classes int                    // MECs; index 0 is "all"
	Weights []uint32               // LDS flow weight per MEC (nil: all 1)
}

// SynSet is one copy of a lane's synopses for one interval: an LDA (and
// optionally an RDA) per MEC, and one LDS over all flows. Record is the
// per-packet entry point; it allocates nothing and takes no lock.
type SynSet struct {
	LDA     []*synopsis.LDA
	RDA     []*synopsis.RDA
	LDS     *synopsis.LDS
	Sample  []*synopsis.Sample // per MEC; nil without a sample
	weights []uint32
	Frames  uint64 // data frames recorded
	Bytes   uint64
	// StampErrNs is Σ over recorded frames of how far each timestamp may
	// be from the frame's real hand-off to the port, ns (sender: half the
	// clock gap around its TxBurst). StampErrNs/Frames bounds the
	// systematic error the timestamps add to the mean delay; reports add
	// it to the sampling bound.
	StampErrNs uint64
	// PollStamped counts the recorded frames a receiver stamped at poll
	// time because its rx port did not (their share of StampErrNs is the
	// poll gap); 0 on the sender.
	PollStamped uint64
	// Misrouted counts sampled frames a receiver lane of a multi-queue
	// port got although the steering puts them on another queue
	// (LaneConfig.Queues); 0 with one queue.
	Misrouted uint64

	// Interval bookkeeping, written by the worker before it publishes a
	// flip, read by the control side after it.
	FirstK, LastK  uint64 // intervals this copy covers (FirstK < LastK: merged by an overrun or a lost End)
	StartNs, EndNs uint64 // first and last flip time bounding the copy, ns
	Merged         bool   // covers more than one interval
}

// NewSynSet allocates one copy.
func NewSynSet(cfg SynConfig) (*SynSet, error) {
	if cfg.Classes < 1 {
		return nil, fmt.Errorf("dataplane: %d measurement classes", cfg.Classes)
	}
	s := &SynSet{weights: cfg.Weights}
	if s.weights == nil {
		s.weights = make([]uint32, cfg.Classes)
		for i := range s.weights {
			s.weights[i] = 1
		}
	}
	if len(s.weights) != cfg.Classes {
		return nil, fmt.Errorf("dataplane: %d weights for %d classes", len(s.weights), cfg.Classes)
	}
	for i := 0; i < cfg.Classes; i++ {
		l, err := synopsis.NewLDA(cfg.LDA)
		if err != nil {
			return nil, err
		}
		s.LDA = append(s.LDA, l)
		if cfg.RDA != nil {
			r, err := synopsis.NewRDAFollowing(*cfg.RDA)
			if err != nil {
				return nil, err
			}
			if cfg.LDS != nil {
				// A lost packet's flow hash places it in the LDS: the
				// sender's reply carries it (docs/rda.md, "Exchange").
				r.TrackFlows()
			}
			s.RDA = append(s.RDA, r)
		}
		if cfg.Sample != nil {
			p, err := synopsis.NewSample(*cfg.Sample)
			if err != nil {
				return nil, err
			}
			if cfg.LDS != nil {
				// The receiver attributes each sampled delay to its
				// flow: the LDS lines' quantiles (docs/sample.md).
				p.TrackFlows()
			}
			s.Sample = append(s.Sample, p)
		}
	}
	if cfg.LDS != nil {
		l, err := synopsis.NewLDS(*cfg.LDS)
		if err != nil {
			return nil, err
		}
		s.LDS = l
	}
	return s, nil
}

// Record adds one packet: its identity, class, timestamp (ns) and how far
// that timestamp may be off (ns, 0 for a port's own stamp). Only the LDS
// keeps the uncertainty per packet (a flow's stamps may be worse than the
// interval's average, StampErrNs, which the caller keeps) and the sample
// its largest (a quantile is one packet's delay); the LDA and RDA
// estimate interval-wide means, which the average bounds.
func (s *SynSet) Record(m *classifier.Meta, mec uint16, ts, errNs uint64) {
	s.LDA[mec].Add(m.Hash, ts)
	if s.RDA != nil {
		s.RDA[mec].AddFlow(m.Hash, m.FlowHash, ts)
	}
	if s.Sample != nil {
		// The sample keeps the largest uncertainty: it bounds each
		// sampled delay, which the quantiles' bounds widen by.
		p := s.Sample[mec]
		p.AddFlow(m.Hash, m.FlowHash, ts)
		p.SetStampErr(errNs)
	}
	if s.LDS != nil && m.FlowHash != 0 {
		// The flow table names flows for per-flow reports (docs/reports.md).
		// The key is packed only for a flow's first held packet.
		if k := s.LDS.AddFlowKey(m.FlowHash, m.Hash, ts, errNs, s.weights[mec]); k != nil {
			*k = synopsis.PackFlowKey(m.Flow.Src, m.Flow.Dst, m.Flow.SrcPort, m.Flow.DstPort, m.Flow.Proto, m.Flow.IPv6)
		}
	}
	s.Frames++
	s.Bytes += uint64(m.Len)
}

// recordTx records the sender's transmitted frames: ms[i] with class
// mecs[i] where rec[i], all with one transmit timestamp ts (ns), known to
// ±errNs (the clock gap around their transmit call). It
// returns how many frames and bytes it recorded. It is Record over a
// burst: with only LDAs (the common configuration) the loop touches
// nothing but the LDA cells and keeps the counters in registers.
func (s *SynSet) recordTx(ms []classifier.Meta, mecs []uint16, rec []bool, ts, errNs uint64) (n, bytes uint64) {
	mecs, rec = mecs[:len(ms)], rec[:len(ms)]
	if s.RDA != nil || s.LDS != nil || s.Sample != nil {
		for i := range ms {
			if rec[i] {
				s.Record(&ms[i], mecs[i], ts, errNs)
				n++
				bytes += uint64(ms[i].Len)
			}
		}
		return n, bytes
	}
	if len(s.LDA) == 1 {
		n, bytes = addLDA(s.LDA[0], ms, rec, ts)
	} else {
		for i := range ms {
			if rec[i] {
				s.LDA[mecs[i]].Add(ms[i].Hash, ts)
				n++
				bytes += uint64(ms[i].Len)
			}
		}
	}
	s.Frames += n
	s.Bytes += bytes
	return n, bytes
}

// addLDA is recordTx's loop for one LDA: ms[i] where rec[i], all at ts.
// A function of its own so that its few values stay in registers (in
// recordTx the loop reloaded several from the stack on every frame).
//
//go:noinline
func addLDA(lda *synopsis.LDA, ms []classifier.Meta, rec []bool, ts uint64) (n, bytes uint64) {
	rec = rec[:len(ms)]
	for i := range ms {
		if rec[i] {
			lda.Add(ms[i].Hash, ts)
			n++
			bytes += uint64(ms[i].Len)
		}
	}
	return n, bytes
}

// Reset zeroes the copy for reuse.
func (s *SynSet) Reset() {
	for _, l := range s.LDA {
		l.Reset()
	}
	for _, r := range s.RDA {
		r.Reset()
	}
	if s.LDS != nil {
		s.LDS.Reset()
	}
	for _, p := range s.Sample {
		p.Reset()
	}
	s.Frames, s.Bytes, s.StampErrNs, s.PollStamped, s.Misrouted = 0, 0, 0, 0, 0
	s.FirstK, s.LastK, s.StartNs, s.EndNs, s.Merged = 0, 0, 0, 0, false
}

// SynBuffer holds a lane's three copies (bufCopies) of its synopses and the epoch
// protocol between the lane's worker and the control side. It
// is the paper's double buffer (ToN Sec. V) with one spare copy:
//
//   - the worker records into Sets[flips % bufCopies];
//   - to flip (sender: the control side moved the interval clock; receiver:
//     an End marker arrived) the worker checks that a copy is free (fewer
//     than bufCopies−1 copies are still with the control side), fills in the
//     active copy's interval bookkeeping, then publishes flips+1 with one
//     atomic store: from then on the old copy is the control side's;
//   - the control side sees flips > released, reads and encodes
//     Sets[released % bufCopies], zeroes it and publishes released+1.
//
// The spare copy gives the control side a whole interval of slack: with two
// copies a control goroutine that was descheduled, or busy cloning a large
// RDA, when the next End marker arrived made the receiver overrun. If it is
// still late (an overrun) the worker does not flip: it keeps recording into
// the active copy, which then covers several intervals and is reported
// invalid (Merged). Forwarding never waits for the control side.
type SynBuffer struct {
	Sets     [bufCopies]*SynSet
	flips    atomic.Uint64
	_        [56]byte // flips is the worker's, released the control side's: separate cache lines
	released atomic.Uint64
	_        [56]byte
	overruns atomic.Uint64
}

// bufCopies is the number of synopsis copies per lane: the one being
// written, the one being read, and a spare.
const bufCopies = 3

// NewSynBuffer allocates the copies.
func NewSynBuffer(cfg SynConfig) (*SynBuffer, error) {
	d := &SynBuffer{}
	for i := range d.Sets {
		s, err := NewSynSet(cfg)
		if err != nil {
			return nil, err
		}
		d.Sets[i] = s
	}
	return d, nil
}

// Active is the copy the worker records into now (worker only).
func (d *SynBuffer) Active() *SynSet { return d.Sets[d.flips.Load()%bufCopies] }

// Flip closes the active copy as interval k (covering up to nowNs) and
// switches to the next copy, if one is free. It reports whether it
// flipped. Worker only; called once per interval.
func (d *SynBuffer) Flip(k, nowNs uint64) bool {
	f := d.flips.Load()
	a := d.Sets[f%bufCopies]
	a.LastK, a.EndNs = k, nowNs
	if f-d.released.Load() >= bufCopies-1 {
		// Overrun: keep recording here; the copy now spans intervals.
		a.Merged = true
		d.overruns.Add(1)
		return false
	}
	next := d.Sets[(f+1)%bufCopies]
	next.FirstK, next.StartNs = k+1, nowNs
	d.flips.Store(f + 1)
	return true
}

// Begin sets the active copy's first interval and start time (worker, once
// before the first packet).
func (d *SynBuffer) Begin(k, nowNs uint64) {
	a := d.Sets[d.flips.Load()%bufCopies]
	a.FirstK, a.StartNs = k, nowNs
}

// Idle returns the oldest copy the worker has handed over, if any (control
// side). The caller reads it, then calls Release. The LDS's packets its
// flow table held back (the measuring fast path's, LDS.SettleFlows) are
// in its cells by then: the control side does that work, not the worker.
func (d *SynBuffer) Idle() (*SynSet, bool) {
	r := d.released.Load()
	if d.flips.Load() == r {
		return nil, false
	}
	s := d.Sets[r%bufCopies]
	if s.LDS != nil {
		s.LDS.SettleFlows()
	}
	return s, true
}

// Release zeroes the idle copy and gives it back to the worker (control
// side).
func (d *SynBuffer) Release() {
	r := d.released.Load()
	d.Sets[r%bufCopies].Reset()
	d.released.Store(r + 1)
}

// Overruns counts flips that could not happen because the control side was
// late.
func (d *SynBuffer) Overruns() uint64 { return d.overruns.Load() }
