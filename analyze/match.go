package analyze

import (
	"math"
	"slices"
)

// matching pairs receiver packets with sender packets by identity.
type matching struct {
	sOf []int32 // per receiver packet: index of its sender copy, -1 if none
	rOf []int32 // per sender packet: index of its receiver copy, -1 if none
	// Receive minus send time (with the clock offset between the ends),
	// smallest and largest, over unambiguous pairs (all pairs if none).
	dmin, dmax int64
	matched    int
	// Identity groups, sender and receiver indices sorted by (hash, time).
	bySender, byReceiver []int32
	// uncertain: sender copies of identities seen more than once at the
	// sender where some copies paired and some copy, at either end, did
	// not.
	uncertain [][]int32
}

// match pairs the packets of s and r and marks ambiguous identities at both
// ends. Each identity's copies are paired first in first out: a receiver
// copy takes the earliest unpaired sender copy stamped no later than the
// receive time plus the clock offset the unambiguous pairs show (plus
// matchSlack). A duplicate made inside the segment thus pairs with nothing
// (it is extra, not a second reception), and of two bit-identical packets
// of which one was lost, the survivor pairs with the first.
//
// The streaming analysis pairs each window's group of copies with the
// same two walks (streamer.pair, delayStats.final); the package's tests
// hold the two analyses to the same lines.
func match(s, r *endData) *matching {
	m := &matching{sOf: make([]int32, len(r.recs)), rOf: make([]int32, len(s.recs))}
	for i := range m.sOf {
		m.sOf[i] = -1
	}
	for i := range m.rOf {
		m.rOf[i] = -1
	}
	byHash := func(e *endData) []int32 {
		// Sort (hash, index) pairs held side by side rather than indices
		// that point into the records: the comparisons then read memory in
		// order, about three times faster on a million packets.
		type hi struct {
			h uint64
			i int32
		}
		pairs := make([]hi, len(e.recs))
		for i := range e.recs {
			pairs[i] = hi{e.recs[i].hash, int32(i)}
		}
		slices.SortFunc(pairs, func(a, b hi) int {
			switch {
			case a.h < b.h:
				return -1
			case a.h > b.h:
				return 1
			}
			return int(a.i) - int(b.i)
		})
		idx := make([]int32, len(pairs))
		for i, p := range pairs {
			idx[i] = p.i
		}
		return idx
	}
	m.bySender, m.byReceiver = byHash(s), byHash(r)

	// First walk: ambiguity, and the delays (with the clock offset) of
	// unambiguous IP pairs. Frames that are not IP are left out of the
	// delays: a switch's STP or LLDP frames repeat the same bytes, so one
	// seen at the sender only and one seen at the receiver only can look
	// like a pair far apart in time.
	const none = math.MaxInt64
	dmin, dmax := int64(none), int64(math.MinInt64)
	umin, umax := int64(none), int64(math.MinInt64) // unambiguous, any kind
	fmin := int64(none)                             // first copy against first copy
	m.groups(s, r, func(gs, gr []int32) {
		if len(gs) > 1 {
			for _, i := range gs {
				s.recs[i].flags |= recAmbiguous
			}
		}
		if len(gr) > 1 {
			for _, i := range gr {
				r.recs[i].flags |= recAmbiguous
			}
		}
		if len(gs) == 0 || len(gr) == 0 {
			return
		}
		d := int64(r.recs[gr[0]].ts) - int64(s.recs[gs[0]].ts)
		fmin = min(fmin, d)
		if len(gs) == 1 && len(gr) == 1 {
			umin, umax = min(umin, d), max(umax, d)
			if s.recs[gs[0]].flags&recNonIP == 0 {
				dmin, dmax = min(dmin, d), max(dmax, d)
			}
		}
	})
	known := true // dmin, dmax come from unambiguous pairs
	switch {
	case dmin <= dmax:
	case umin <= umax:
		dmin, dmax = umin, umax
	default:
		dmin, dmax, known = fmin, math.MaxInt64/4, false
	}
	tol := max(0, -dmin) + matchSlack

	// Second walk: first in, first out per identity. A frame that is not
	// IP pairs only within the delays IP packets showed.
	m.groups(s, r, func(gs, gr []int32) {
		nonIP := s.recs[gs0(gs)].flags&recNonIP != 0
		p := 0
		for _, j := range gr {
			for nonIP && known && p < len(gs) && int64(r.recs[j].ts)-int64(s.recs[gs[p]].ts) > dmax+matchSlack {
				p++ // too old to be this copy, or any later one
			}
			if p == len(gs) {
				break
			}
			i := gs[p]
			if int64(s.recs[i].ts) > int64(r.recs[j].ts)+tol {
				continue // sent after it was received: not this copy
			}
			m.sOf[j], m.rOf[i] = i, j
			m.matched++
			p++
		}
		// Some copies paired and some not: which of the sender's copies
		// was lost (or which the duplicate took) cannot be told. Copies all
		// unpaired (a switch's repeated frame seen at one end) are simply
		// lost, each in its own interval.
		if len(gs) > 1 && p > 0 && (m.unpaired(gs) || m.unpairedR(gr)) {
			m.uncertain = append(m.uncertain, gs)
		}
	})
	if !known {
		dmin, dmax = math.MaxInt64, math.MinInt64
		for j, i := range m.sOf {
			if i >= 0 {
				d := int64(r.recs[j].ts) - int64(s.recs[i].ts)
				dmin, dmax = min(dmin, d), max(dmax, d)
			}
		}
	}
	m.dmin, m.dmax = dmin, dmax
	return m
}

// gs0 is the index of a group's first sender copy (0 when it has none: the
// caller then looks at a group with nothing to pair).
func gs0(gs []int32) int32 {
	if len(gs) == 0 {
		return 0
	}
	return gs[0]
}

func (m *matching) unpaired(gs []int32) bool {
	for _, i := range gs {
		if m.rOf[i] < 0 {
			return true
		}
	}
	return false
}

func (m *matching) unpairedR(gr []int32) bool {
	for _, j := range gr {
		if m.sOf[j] < 0 {
			return true
		}
	}
	return false
}

// groups calls f with the sender and receiver indices of each identity,
// each in time order.
func (m *matching) groups(s, r *endData, f func(gs, gr []int32)) {
	a, b := m.bySender, m.byReceiver
	for len(a) > 0 || len(b) > 0 {
		var h uint64
		switch {
		case len(a) == 0:
			h = r.recs[b[0]].hash
		case len(b) == 0:
			h = s.recs[a[0]].hash
		default:
			h = min(s.recs[a[0]].hash, r.recs[b[0]].hash)
		}
		na, nb := 0, 0
		for na < len(a) && s.recs[a[na]].hash == h {
			na++
		}
		for nb < len(b) && r.recs[b[nb]].hash == h {
			nb++
		}
		f(a[:na], b[:nb])
		a, b = a[na:], b[nb:]
	}
}

// splitAmbiguous returns the intervals (by kOf) of the uncertain
// identities whose sender copies in [iLo, iHi) fall in more than one
// interval (split), or that also have sender copies outside [iLo, iHi)
// (edge: before or after the captures' common range): first-in-first-out
// pairing may have put the loss (or the extra) in the wrong interval, or
// inside the range when it was outside (or the reverse).
func (m *matching) splitAmbiguous(s *endData, iLo, iHi int, kOf func(uint64) int32) (split, edge []int32) {
	for _, g := range m.uncertain {
		first, across, outside := int32(-1), false, false
		var ks []int32
		for _, i := range g {
			if int(i) < iLo || int(i) >= iHi {
				outside = true
				continue
			}
			k := kOf(s.recs[i].ts)
			if first < 0 {
				first = k
			} else if k != first {
				across = true
			}
			ks = append(ks, k)
		}
		switch {
		case across:
			split = append(split, ks...)
		case outside:
			edge = append(edge, ks...)
		}
	}
	return split, edge
}
