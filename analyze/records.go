package analyze

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/ldafwd/ldafwd/classifier"
)

// rec is what analyze keeps of one measured frame: 24 bytes instead of the
// frame, so that the whole-capture analysis fits both captures of ~10 M
// packets in memory together, and the streaming analysis its window.
type rec struct {
	ts    uint64 // ns since the Unix epoch, this end's clock
	hash  uint64 // identity (classifier.Meta.Hash)
	mec   uint16
	ext   uint16 // identity extent in L3 bytes (extentUnknown: could not tell)
	flags uint8
}

const (
	recAmbiguous uint8 = 1 << iota // identity seen more than once at this end
	recCrossed                     // received after packets of a later interval
	recExtra                       // received, but matches no sent packet
	recNonIP                       // neither IPv4 nor IPv6: its identity is weaker
)

// extentUnknown: the identity's bytes could not be located in the frame.
const extentUnknown = 0xffff

// endData is one capture, loaded.
type endData struct {
	name      string
	recs      []rec
	flows     []uint64 // flow hash per rec (only when a per-flow synopsis runs)
	frames    uint64
	control   uint64
	malformed uint64
	snapped   uint64
	linkLocal uint64 // link-local frames left out (classifier.Measure)
	minSnap   int    // smallest captured length of a snapped frame (0: none snapped)
	// disorder: records whose timestamp is below an earlier record's.
	disordered uint64
	maxBackNs  uint64
	damage     []*DamageError
	endedEarly error
}

// MaxBackStep is the largest step back in time between a capture's records
// that analyze sorts away (capture tools stamp on several CPUs; a few ms
// of disorder is common). A larger step means the file is not one
// capture in time order (concatenated files, a clock stepped during the
// capture) and the pair is refused.
const MaxBackStep = 10_000_000 // ns

// load reads a capture into compact records. Impossible or far-off
// timestamps are damage (kept in the result); disorder beyond MaxBackStep
// is an error.
func load(c *Capture, cl *classifier.Classifier, keepFlows bool, keys map[uint64]classifier.FlowKey, tick func(*Capture)) (*endData, error) {
	l := newLoader(c, cl, tick)
	for {
		r, fh, key, ok, err := l.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		l.e.recs = append(l.e.recs, r)
		if keepFlows {
			l.e.flows = append(l.e.flows, fh)
			if fh != 0 {
				if _, ok := keys[fh]; !ok {
					keys[fh] = *key
				}
			}
		}
	}
	l.finish()
	if l.e.disordered > 0 {
		sortByTime(l.e)
	}
	return l.e, nil
}

// loader reads one capture's measured frames in file order, counting
// what it leaves out and checking timestamps as it goes. Both analyses
// read through it, so they count and refuse alike.
type loader struct {
	c       *Capture
	e       *endData // counts, damage; recs and flows are the caller's
	cl      *classifier.Classifier
	tick    func(*Capture)
	m       classifier.Meta
	maxTS   uint64 // largest timestamp so far
	haveMax bool   // whether maxTS is set
	lastRec uint64 // record number of the frame that set maxTS

	// own, when set, is the part of the file whose records this loader
	// counts (a view's, segment.go): its counts are taken as each end of
	// it is passed.
	own *ownBytes
}

// ownBytes is the part [from, to) of a capture's file a view counts the
// records of; the view reads more (before and after) to pair them.
// Passing each end, the loader notes its counts, whether a record starts
// exactly there and the largest timestamp before it: a neighbouring view
// must have seen the same.
type ownBytes struct {
	from, to uint64
	passed   [2]bool
	hit      [2]bool
	counts   [2]endData
	maxTS    [2]uint64
}

// pass notes what the loader has counted before a record at byte offset
// off (math.MaxUint64: the end of the view).
func (o *ownBytes) pass(l *loader, off uint64) {
	for i, b := range [2]uint64{o.from, o.to} {
		if !o.passed[i] && off >= b {
			o.passed[i], o.hit[i], o.counts[i], o.maxTS[i] = true, off == b, *l.e, l.maxTS
		}
	}
}

// owned is what the loader counted of the records in [from, to).
func (o *ownBytes) owned() endData {
	a, b := &o.counts[0], &o.counts[1]
	return endData{name: b.name, frames: b.frames - a.frames, control: b.control - a.control,
		malformed: b.malformed - a.malformed, snapped: b.snapped - a.snapped, linkLocal: b.linkLocal - a.linkLocal,
		disordered: b.disordered - a.disordered}
}

func newLoader(c *Capture, cl *classifier.Classifier, tick func(*Capture)) *loader {
	return &loader{c: c, e: &endData{name: c.Name()}, cl: cl, tick: tick}
}

// next returns the next measured frame's record, flow hash and flow key
// (the key is valid until the following call); ok is false at the end
// of the capture. Impossible or far-off timestamps are damage (kept in
// l.e); disorder beyond MaxBackStep is an error.
func (l *loader) next() (r rec, flowHash uint64, key *classifier.FlowKey, ok bool, err error) {
	e, c, m := l.e, l.c, &l.m
	for {
		frame, ts, orig, recno, ok := c.next()
		if l.own != nil {
			off := c.lastOff
			if !ok {
				off = math.MaxUint64
			}
			l.own.pass(l, off)
		}
		if !ok {
			return rec{}, 0, nil, false, nil
		}
		if l.tick != nil && c.Frames%ProgressEvery == 0 {
			l.tick(c)
		}
		// Timestamp sanity: a record far behind or far ahead of its
		// neighbours, while the next record agrees with the ones before,
		// has a damaged timestamp; disorder that persists is refused.
		if l.haveMax {
			next, nok := c.Peek()
			switch {
			case ts+MaxBackStep < l.maxTS:
				if nok && next+MaxBackStep >= l.maxTS {
					e.damage = append(e.damage, &DamageError{File: e.name, Record: recno, Local: true, AfterNs: l.maxTS,
						What: fmt.Sprintf("timestamp %d ns is %.3f s before the records around it", ts, float64(l.maxTS-ts)/1e9)})
					continue
				}
				return rec{}, 0, nil, false, fmt.Errorf("%s: timestamps go back by %.3f s at packet record %d (after record %d): not one capture in time order (at most %d ms of disorder is sorted)",
					e.name, float64(l.maxTS-ts)/1e9, recno, l.lastRec, MaxBackStep/1_000_000)
			case ts > l.maxTS+MaxBackStep && nok && next+MaxBackStep < ts && next+MaxBackStep >= l.maxTS:
				e.damage = append(e.damage, &DamageError{File: e.name, Record: recno, Local: true, AfterNs: l.maxTS,
					What: fmt.Sprintf("timestamp %d ns is %.3f s after the records around it", ts, float64(ts-l.maxTS)/1e9)})
				continue
			}
		}
		if len(frame) < orig {
			// A frame cut before its identity while the capture keeps more
			// than this (or states no limit) is a damaged record (its
			// captured length), not a snap length: left out at this end
			// only, its copy at the other end would read as lost.
			if snap := int(c.SnapLen()); (snap == 0 || len(frame) < snap) && identityExtent(frame) == extentUnknown {
				e.damage = append(e.damage, &DamageError{File: e.name, Record: recno, Local: true, AfterNs: l.maxTS,
					What: fmt.Sprintf("frame cut to %d of its %d bytes, before its identity, in a capture whose snap length is %d (0: none)", len(frame), orig, snap)})
				continue
			}
			e.snapped++
			if e.minSnap == 0 || len(frame) < e.minSnap {
				e.minSnap = len(frame)
			}
		}
		if !l.haveMax || ts >= l.maxTS {
			l.maxTS, l.haveMax, l.lastRec = ts, true, recno
		} else {
			e.disordered++
			e.maxBackNs = max(e.maxBackNs, l.maxTS-ts)
		}

		classifier.Parse(frame, m)
		e.frames++
		if m.Flags&classifier.FlagControl != 0 {
			e.control++
			continue
		}
		snapped := len(frame) < orig
		if m.Flags&classifier.FlagMalformed != 0 || (m.Flags&classifier.FlagTruncated != 0 && !snapped) {
			e.malformed++
		}
		mec, measured := l.cl.Measure(m)
		if !measured { // a link-local frame no MEC claims: the segment's own traffic
			e.linkLocal++
			continue
		}
		r := rec{ts: ts, hash: m.Hash, mec: mec, ext: uint16(min(identityExtent(frame), extentUnknown))}
		if m.Flags&(classifier.FlagIPv4|classifier.FlagIPv6) == 0 {
			r.flags = recNonIP
		}
		return r, m.FlowHash, &m.Flow, true, nil
	}
}

// finish files the reader's damage with the loader's, in record order.
func (l *loader) finish() {
	if l.tick != nil {
		l.tick(l.c)
	}
	l.e.damage = append(l.c.Damage, l.e.damage...)
	slices.SortStableFunc(l.e.damage, func(a, b *DamageError) int { return int(a.Record) - int(b.Record) })
	l.e.endedEarly = l.c.EndedEarly
}

// sortByTime sorts a capture's records by timestamp, stably: frames with
// equal stamps keep their file order.
func sortByTime(e *endData) {
	idx := make([]int32, len(e.recs))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int {
		x, y := e.recs[a].ts, e.recs[b].ts
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	recs := make([]rec, len(e.recs))
	for i, j := range idx {
		recs[i] = e.recs[j]
	}
	e.recs = recs
	if e.flows != nil {
		flows := make([]uint64, len(e.flows))
		for i, j := range idx {
			flows[i] = e.flows[j]
		}
		e.flows = flows
	}
}

// identityExtent is how many bytes from the start of L3 the classifier's
// identity reads (the IPv4/IPv6 header, IPv6 extension headers and the
// 32-byte L4 window, bounded by the packet's own length; 56 bytes for
// frames that are not IP). It is a property of the packet, not of the
// frame: both ends compute the same value whatever VLAN tags were pushed
// on the way, as long as the bytes that tell are in the frame; when they
// are not (a capture's snap length cut them) the extent is unknown.
//
// A packet the classifier reads through to an inner packet (a tunnel,
// classifier.InnerAt) reaches as far as the inner packet's identity does;
// when the frame ends inside the tunnel headers, before it can tell where
// the inner packet starts, the extent is unknown.
func identityExtent(f []byte) int {
	if len(f) < 14 {
		return extentUnknown
	}
	off := 12
	et := binary.BigEndian.Uint16(f[12:])
	for tags := 0; et == 0x8100 || et == 0x88a8 || et == 0x9100; tags++ {
		if tags == 8 || off+6 > len(f) {
			return extentUnknown
		}
		et = binary.BigEndian.Uint16(f[off+4:])
		off += 4
	}
	e := extentL3(f[off+2:], et)
	at, iet, cut := classifier.InnerAt(f)
	switch {
	case cut:
		return extentUnknown
	case at == 0 || e == extentUnknown:
		return e
	}
	ie := extentL3(f[at:], iet)
	if ie == extentUnknown {
		return extentUnknown
	}
	return max(e, at-(off+2)+ie)
}

// extentL3 is identityExtent of the packet at l3 of EtherType et, not
// reading through tunnels.
func extentL3(l3 []byte, et uint16) int {
	switch et {
	case 0x0800:
		if len(l3) < 4 {
			return extentUnknown
		}
		ihl, total := int(l3[0]&0x0f)*4, int(binary.BigEndian.Uint16(l3[2:]))
		return max(20, min(total, ihl+32))
	case 0x86dd:
		if len(l3) < 40 {
			return extentUnknown
		}
		declared := 40 + int(binary.BigEndian.Uint16(l3[4:]))
		nh, at := l3[6], 40
		for walked := 0; walked <= 8; walked++ {
			var hl int
			switch nh {
			case 0, 43, 60, 135, 139, 140:
				if at+2 > declared {
					return declared
				}
				if at+2 > len(l3) {
					return extentUnknown
				}
				hl = (int(l3[at+1]) + 1) * 8
			case 51:
				if at+2 > declared {
					return declared
				}
				if at+2 > len(l3) {
					return extentUnknown
				}
				hl = (int(l3[at+1]) + 2) * 4
			case 44:
				if at+8 > declared {
					return declared
				}
				if at+8 > len(l3) {
					return extentUnknown
				}
				hl = 8
				if binary.BigEndian.Uint16(l3[at+2:])&0xfff8 != 0 { // not the first fragment
					return max(40, min(declared, at+hl+32))
				}
			default:
				return max(40, min(declared, at+32))
			}
			if at+hl > declared {
				return declared
			}
			nh = l3[at]
			at += hl
		}
		return max(40, min(declared, at+32))
	}
	return 56
}
