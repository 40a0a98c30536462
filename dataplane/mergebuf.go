package dataplane

import "fmt"

// MergedBuffer is the control side's view of the double buffers of N
// lanes of one role (one per queue of a multi-queue port): it hands over
// one SynSet per interval, the sum of the lanes' copies of that interval.
// The synopses are sums (LDA and LDS cells add, RDA cells add and XOR,
// timestamp caches union), so the merged copy is exactly the copy one lane
// would have recorded for all the queues' frames; the wire format and the
// receiver's reports do not depend on N.
//
// Lanes hand over copies independently (each flips at its own End marker
// or interval clock read). MergedBuffer takes every lane's oldest copy
// into its accumulator and releases it at once (the lane gets its copy
// back without waiting for the slowest lane); it hands the accumulator
// over when every lane has contributed copies ending at the same interval.
// When the lanes disagree — a lane's End marker was lost or steered to
// another queue, so its copy spans two intervals, or a lane overran — the
// lanes that are behind keep contributing until all end at the same
// interval, and the merged copy covers every interval any of them
// spanned, marked Merged: it is reported invalid, never as one interval.
//
// Control side only (like SynBuffer.Idle/Release); the workers use
// their own SynBuffer.
type MergedBuffer struct {
	lanes []*SynBuffer
	acc   *SynSet  // accumulated merge
	act   *SynSet  // Active's merge of the copies in progress
	has   []bool   // lane i contributed to acc
	upto  []uint64 // LastK of lane i's last contributed copy
	first []uint64 // FirstK of lane i's first contributed copy
	ncopy []int    // copies lane i contributed
	ready bool     // acc is complete and handed out
	err   error    // a merge failed (shapes differ): a bug, reported once
}

// NewMergedBuffer merges the copies of lanes, which must share cfg.
func NewMergedBuffer(cfg SynConfig, lanes []*SynBuffer) (*MergedBuffer, error) {
	if len(lanes) == 0 {
		return nil, fmt.Errorf("dataplane: merged buffer of no lanes")
	}
	m := &MergedBuffer{lanes: lanes, has: make([]bool, len(lanes)), upto: make([]uint64, len(lanes)),
		first: make([]uint64, len(lanes)), ncopy: make([]int, len(lanes))}
	var err error
	if m.acc, err = NewSynSet(cfg); err != nil {
		return nil, err
	}
	if m.act, err = NewSynSet(cfg); err != nil {
		return nil, err
	}
	for _, r := range append(m.acc.RDA, m.act.RDA...) {
		r.ReserveCache() // start small; the control side grows it with the traffic
	}
	return m, nil
}

// Lanes are the merged double buffers.
func (m *MergedBuffer) Lanes() []*SynBuffer { return m.lanes }

// Err is the first merge failure, if any (the lanes' synopses differ in
// shape: a construction bug, never traffic).
func (m *MergedBuffer) Err() error { return m.err }

// Idle returns the merged copy of the oldest interval every lane has
// handed over, if there is one. The caller reads it, then calls Release.
func (m *MergedBuffer) Idle() (*SynSet, bool) {
	if m.ready {
		return m.acc, true
	}
	for {
		target := m.target()
		progress := false
		for i, d := range m.lanes {
			if m.has[i] && m.upto[i] >= target {
				continue
			}
			set, ok := d.Idle()
			if !ok {
				continue
			}
			m.take(i, set)
			// The lane's caches and flow table follow its own traffic,
			// as the control side sizes a single lane's.
			for _, r := range set.RDA {
				r.ReserveCache()
			}
			if set.LDS != nil {
				set.LDS.ReserveFlows()
			}
			d.Release()
			progress = true
		}
		if !progress {
			break
		}
	}
	target := m.target()
	for i := range m.lanes {
		if !m.has[i] || m.upto[i] != target {
			return nil, false
		}
	}
	m.finish()
	m.ready = true
	return m.acc, true
}

// target is the latest interval a contributed copy ends at.
func (m *MergedBuffer) target() uint64 {
	var t uint64
	for i, h := range m.has {
		if h && m.upto[i] > t {
			t = m.upto[i]
		}
	}
	return t
}

// take merges lane i's handed-over copy into the accumulator.
func (m *MergedBuffer) take(i int, set *SynSet) {
	if !m.has[i] {
		m.first[i] = set.FirstK
	}
	m.has[i] = true
	m.upto[i] = set.LastK
	m.ncopy[i]++
	a := m.acc
	if m.ncopy[i] == 1 && m.noneTaken(i) {
		a.StartNs, a.EndNs = set.StartNs, set.EndNs
	}
	a.StartNs = min(a.StartNs, set.StartNs)
	a.EndNs = max(a.EndNs, set.EndNs)
	if set.Merged {
		a.Merged = true
	}
	if err := mergeSets(a, set); err != nil && m.err == nil {
		m.err = err
	}
}

// noneTaken says no lane but i contributed yet.
func (m *MergedBuffer) noneTaken(i int) bool {
	for j, h := range m.has {
		if j != i && h {
			return false
		}
	}
	return true
}

// finish fills the accumulator's interval bookkeeping: the earliest first
// interval, the common last one, and Merged unless every lane contributed
// exactly one copy of one and the same interval.
func (m *MergedBuffer) finish() {
	a := m.acc
	a.FirstK, a.LastK = m.first[0], m.upto[0]
	for i := range m.lanes {
		a.FirstK = min(a.FirstK, m.first[i])
		if m.ncopy[i] != 1 || m.first[i] != m.first[0] || m.upto[i] != m.upto[0] {
			a.Merged = true
		}
	}
}

// Release zeroes the merged copy for the next interval.
func (m *MergedBuffer) Release() {
	m.acc.Reset()
	clear(m.has)
	clear(m.upto)
	clear(m.first)
	clear(m.ncopy)
	m.ready = false
}

// Active merges the lanes' copies in progress (valid only once the workers
// have stopped: nothing writes them any more). It includes nothing already
// handed over. FirstK is the earliest lane's.
func (m *MergedBuffer) Active() *SynSet {
	a := m.act
	a.Reset()
	for i, d := range m.lanes {
		s := d.Active()
		if i == 0 {
			a.FirstK, a.StartNs = s.FirstK, s.StartNs
		}
		a.FirstK = min(a.FirstK, s.FirstK)
		a.StartNs = min(a.StartNs, s.StartNs)
		a.EndNs = max(a.EndNs, s.EndNs)
		a.Merged = a.Merged || s.Merged
		if err := mergeSets(a, s); err != nil && m.err == nil {
			m.err = err
		}
	}
	return a
}

// Overruns sums the lanes' overruns.
func (m *MergedBuffer) Overruns() uint64 {
	var n uint64
	for _, d := range m.lanes {
		n += d.Overruns()
	}
	return n
}

// mergeSets adds o's synopses and counters into a (same configuration).
func mergeSets(a, o *SynSet) error {
	if len(a.LDA) != len(o.LDA) || len(a.RDA) != len(o.RDA) || len(a.Sample) != len(o.Sample) || (a.LDS == nil) != (o.LDS == nil) {
		return fmt.Errorf("dataplane: merging synopsis sets of different shapes")
	}
	for i, l := range a.LDA {
		if err := l.Merge(o.LDA[i]); err != nil {
			return err
		}
	}
	for i, r := range a.RDA {
		if err := r.Merge(o.RDA[i]); err != nil {
			return err
		}
	}
	for i, p := range a.Sample {
		if err := p.Merge(o.Sample[i]); err != nil {
			return err
		}
	}
	if a.LDS != nil {
		if err := a.LDS.Merge(o.LDS); err != nil {
			return err
		}
	}
	a.Frames += o.Frames
	a.Bytes += o.Bytes
	a.StampErrNs += o.StampErrNs
	a.PollStamped += o.PollStamped
	a.Misrouted += o.Misrouted
	return nil
}
