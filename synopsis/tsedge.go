package synopsis

import (
	"encoding/binary"
	"fmt"
)

// Membership queries on a timestamp cache: "which of these identities did
// you record in this interval?". The receiving appliance lists the
// packets it recorded just after and just before one of its cuts (an End
// marker's arrival; AppendWindow) and asks the sender's cache of the
// interval on the other side of the cut: a packet the sender recorded in
// interval k that the receiver recorded after k's cut arrived late; one
// the sender recorded in k+1 that the receiver recorded before it
// overtook the End marker. Counting both at each of an interval's two
// cuts corrects its End-marker counts to its exact loss without any
// sketch of the lost packets (the appliance's edge check). The answer is
// a bitmap, so the bytes go where the lists are: on the request.
//
// Request: magic 'E', version 1, the identities' count (uvarint, at most
// TSMaxRequest), then each identity (8 bytes, little endian).
//
// Reply: magic 'M', version 1, flags (bit 0: the cache was complete —
// level 0 and built from packets, not from a reply — so an identity it
// does not hold was not recorded; bit 1: the replier no longer keeps the
// interval's cache, and holds nothing; other bits zero), the sender's
// duplicate count for the interval (uvarint: Dups), the count again
// (uvarint), the request's check (8 bytes, as the timestamp reply's),
// then two bitmaps of ⌈count/8⌉ bytes, bit i of byte i/8 for identity i:
// recorded once, and recorded more than once (or once, with a second
// copy the cache could not keep: SeenOnce false). Bits past count are
// zero.
const (
	memberRequestMagic = 'E'
	memberReplyMagic   = 'M'
	memberVersion      = 1
	memberComplete     = 1 // reply flag: the cache held every packet recorded
	memberGone         = 2 // reply flag: the interval's cache is no longer kept
)

// IsMemberRequest says whether b is a membership request (by its magic).
func IsMemberRequest(b []byte) bool { return len(b) > 0 && b[0] == memberRequestMagic }

// AppendMemberRequest appends a membership request for ids.
func AppendMemberRequest(dst []byte, ids []uint64) []byte {
	dst = append(dst, memberRequestMagic, memberVersion)
	dst = binary.AppendUvarint(dst, uint64(len(ids)))
	for _, id := range ids {
		dst = binary.LittleEndian.AppendUint64(dst, id)
	}
	return dst
}

// MemberRequestBytes is the length of a request for n identities.
func MemberRequestBytes(n int) int { return 2 + uvarintLen(uint64(n)) + 8*n }

// ParseMemberRequest returns the identities of a membership request
// (errors wrap ErrBadEncoding).
func ParseMemberRequest(b []byte) ([]uint64, error) {
	if len(b) < 2 || b[0] != memberRequestMagic || b[1] != memberVersion {
		return nil, fmt.Errorf("%w: membership request: bad magic or version", ErrBadEncoding)
	}
	b = b[2:]
	cnt, k := minimalUvarint(b)
	if k <= 0 || cnt > TSMaxRequest {
		return nil, fmt.Errorf("%w: membership request: bad count", ErrBadEncoding)
	}
	b = b[k:]
	if uint64(len(b)) != cnt*8 {
		return nil, fmt.Errorf("%w: membership request: %d bytes for %d ids", ErrBadEncoding, len(b), cnt)
	}
	ids := make([]uint64, cnt)
	for i := range ids {
		ids[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return ids, nil
}

// AppendMemberReply appends c's answer to a membership request for ids.
func (c *TSCache) AppendMemberReply(dst []byte, ids []uint64) []byte {
	flags := byte(0)
	switch {
	case c.gone:
		flags = memberGone
	case c.level == 0 && !c.partial:
		flags = memberComplete
	}
	dst = append(dst, memberReplyMagic, memberVersion, flags)
	dst = binary.AppendUvarint(dst, c.dups)
	dst = binary.AppendUvarint(dst, uint64(len(ids)))
	dst = binary.LittleEndian.AppendUint64(dst, tsCheck(ids))
	n := (len(ids) + 7) / 8
	at := len(dst)
	dst = append(dst, make([]byte, 2*n)...)
	once, more := dst[at:at+n], dst[at+n:]
	for i, id := range ids {
		if _, ok := c.Lookup(id); !ok {
			continue
		}
		if c.SeenOnce(id) {
			once[i/8] |= 1 << (i % 8)
		} else {
			more[i/8] |= 1 << (i % 8)
		}
	}
	return dst
}

// MemberAnswer is a membership reply read against its request.
type MemberAnswer struct {
	// Complete: the sender's cache held every packet it recorded in the
	// interval, so an identity it does not hold was not recorded there.
	// Gone: the sender no longer keeps the interval's cache (nothing is
	// held).
	Complete, Gone bool
	// Dups is the sender's count of packets recorded again in the
	// interval with an identity it already held (TSCache.Dups).
	Dups uint64
	// Once[i]: ids[i] recorded once; More[i]: recorded more than once,
	// or once with a second copy the cache could not keep.
	Once, More []bool
}

// ParseMemberReply reads a reply to a membership request for ids (errors
// wrap ErrBadEncoding).
func ParseMemberReply(b []byte, ids []uint64) (MemberAnswer, error) {
	var a MemberAnswer
	if len(b) < 3 || b[0] != memberReplyMagic || b[1] != memberVersion || b[2]&^(memberComplete|memberGone) != 0 || b[2] == memberComplete|memberGone {
		return a, fmt.Errorf("%w: membership reply: bad magic, version or flags", ErrBadEncoding)
	}
	a.Complete, a.Gone = b[2]&memberComplete != 0, b[2]&memberGone != 0
	b = b[3:]
	dups, k := minimalUvarint(b)
	if k <= 0 {
		return a, fmt.Errorf("%w: membership reply: bad duplicate count", ErrBadEncoding)
	}
	a.Dups, b = dups, b[k:]
	cnt, k := minimalUvarint(b)
	if k <= 0 || cnt != uint64(len(ids)) {
		return a, fmt.Errorf("%w: membership reply: count does not match the request", ErrBadEncoding)
	}
	b = b[k:]
	n := (len(ids) + 7) / 8
	if len(b) != 8+2*n {
		return a, fmt.Errorf("%w: membership reply: %d bytes for %d ids", ErrBadEncoding, len(b), len(ids))
	}
	if binary.LittleEndian.Uint64(b) != tsCheck(ids) {
		return a, fmt.Errorf("%w: membership reply answers another request", ErrBadEncoding)
	}
	once, more := b[8:8+n], b[8+n:]
	if r := len(ids) % 8; r != 0 && (once[n-1]>>r != 0 || more[n-1]>>r != 0) {
		return a, fmt.Errorf("%w: membership reply: bits set past the last id", ErrBadEncoding)
	}
	a.Once, a.More = make([]bool, len(ids)), make([]bool, len(ids))
	for i := range ids {
		a.Once[i] = once[i/8]>>(i%8)&1 != 0
		a.More[i] = more[i/8]>>(i%8)&1 != 0
		if a.Once[i] && a.More[i] || a.More[i] && a.Dups == 0 {
			return a, fmt.Errorf("%w: membership reply: id %d both once and more, or more without duplicates", ErrBadEncoding, i)
		}
	}
	return a, nil
}

// AppendWindow appends the identities c recorded with a timestamp in
// [lo, hi] (the first copy's, or a second copy's it kept aside): the
// packets that reached this end in that time, when c is complete
// (Level 0, not Partial). The order is the table's.
func (c *TSCache) AppendWindow(dst []uint64, lo, hi uint64) []uint64 {
	if c == nil {
		return dst
	}
	in := func(ts uint64) bool { return ts >= lo && ts <= hi }
	if c.hasZero && in(c.zero) {
		dst = append(dst, 0)
	}
	for _, e := range c.slots {
		if e.h != 0 && in(e.ts) {
			dst = append(dst, e.h)
		}
	}
	for _, e := range c.later[:c.nLater] {
		if in(e.ts) {
			if first, ok := c.Lookup(e.h); !ok || !in(first) {
				dst = append(dst, e.h)
			}
		}
	}
	return dst
}

// GoneTSCache is an empty cache whose membership replies say the
// interval's cache is no longer kept: the answer of an end that dropped
// it, so that the asker stops waiting.
func GoneTSCache() *TSCache {
	c := newPartialTSCache(0, 0)
	c.gone = true
	return c
}
