package control

import (
	"encoding/binary"
	"math"

	"github.com/klauspost/reedsolomon"
)

// Parity fragments: an erasure code over each part's fragments.
//
// A part of k fragments is lost when the segment loses any one of them:
// at a frame loss rate p it arrives with probability (1−p)^k, which at
// p = 0.35 and k = 3 is 27 %. Whole copies (--control-copies c) make each
// fragment arrive with 1−p^c, for c times the bytes. A Reed-Solomon code
// over the fragments does better for the same bytes: the sender adds m
// parity fragments, and any k of the k+m that arrive rebuild the part
// (the code is MDS: every k of them determine the rest).
//
// Layout. A part of n bytes that carries parity is cut into
// k = ⌈n / (F − ParityHeaderLen)⌉ data fragments (F = Sender.FragmentSize:
// FragmentPayload(MTU), less VLANTagLen with a priority tag),
// so that a parity fragment — one shard plus its header — fits the same
// MTU, of S = ⌈n / k⌉ bytes each (the last shorter, at least 1 byte). The
// data fragments are ordinary Fragment frames (type 3): a receiver that
// gets all k needs no parity. The shard size S is the first data
// fragment's length, the last data fragment is zero-padded to S for the
// code, and parity shard j (0 ≤ j < m) travels in a Parity frame
// (type 6) whose header is a fragment's with FragCount = k and
// FragIndex = j, and whose payload is
//
//	0  2  m, the part's parity fragments (1 ≤ m, k + m ≤ MaxShards)
//	2  4  n, the part's length in bytes (≥ 1; k = ⌈n / S⌉)
//	6  S  parity shard j
//
// Each Parity frame is authenticated like every other frame (the tag
// covers header and payload). A malformed authentic one (counts that do
// not agree with the header or with each other) is dropped and counted
// (BadPayload, Inconsistent); it never fails the interval by itself.
//
// How many: the Sender sizes m from a frame loss rate it is told
// (SetLoss: the appliance takes the loss its peer's receiver measured on
// the control frames and reports back) so that a part fails with at most
// ParityTarget probability under independent loss at that rate:
// ParityFor. The loss must be independent frame to frame for that
// promise: a burst that takes more than m frames of one part in a row
// takes the part (copies spaced in time, --control-copies, are the
// answer to bursts).

// ParityHeaderLen is what a Parity frame's payload carries before its
// shard: the parity count (2) and the part's length (4).
const ParityHeaderLen = 6

// MaxShards bounds a part's data and parity fragments together: the
// Reed-Solomon code over GF(2^8) has at most 256 shards. A part of more
// than MaxShards−1 data fragments (about 368 KB at MTU 1500) is sent
// without parity.
const MaxShards = 256

// MaxParity bounds the parity fragments of one part: at 52 % frame loss
// a one-fragment part needs 6 to fail less than once in a hundred, a
// 40-fragment part about 50.
const MaxParity = 64

// ParityTarget is the probability of losing a part that ParityFor aims
// below: one interval in a hundred at the loss rate it is given. A
// thousand would cost a third more parity at 35 % loss (8 fragments
// instead of 5 for a 2-fragment LDA); the rate it is given is already
// the highest of the peer's recent reports.
const ParityTarget = 1e-2

// PartFailure is the probability that a part of k data and m parity
// fragments cannot be rebuilt when each frame is lost independently with
// probability p: that fewer than k of the k+m arrive.
func PartFailure(k, m int, p float64) float64 {
	if k <= 0 || p <= 0 {
		return 0
	}
	if p >= 1 {
		return 1
	}
	n := k + m
	q := 1 - p
	// Σ_{i<k} C(n,i) q^i p^(n−i), term by term in logs (n ≤ 320).
	lq, lp := math.Log(q), math.Log(p)
	sum := 0.0
	lc := 0.0 // log C(n, i)
	for i := 0; i < k; i++ {
		if i > 0 {
			lc += math.Log(float64(n-i+1)) - math.Log(float64(i))
		}
		sum += math.Exp(lc + float64(i)*lq + float64(n-i)*lp)
	}
	return min(sum, 1)
}

// CopyFailure is the probability that a part of k fragments sent in c
// whole copies loses every copy of at least one fragment, each frame lost
// independently with probability p: what --control-copies buys.
func CopyFailure(k, c int, p float64) float64 {
	if k <= 0 || p <= 0 {
		return 0
	}
	return 1 - math.Pow(1-math.Pow(p, float64(c)), float64(k))
}

// ParityFor is the fewest parity fragments that keep a part of k data
// fragments below ParityTarget at frame loss p (0 when p is 0 or k is
// out of range), at most MaxParity and MaxShards − k.
func ParityFor(k int, p float64) int {
	if p <= 0 || k < 1 || k >= MaxShards {
		return 0
	}
	limit := min(MaxParity, MaxShards-k)
	for m := 0; m < limit; m++ {
		if meetsTarget(PartFailure(k, m, p)) {
			return m
		}
	}
	return limit
}

// meetsTarget says whether a failure probability is within ParityTarget,
// allowing for rounding (1 − (1 − p) and p·p are not p and p² exactly).
func meetsTarget(f float64) bool { return f <= ParityTarget*(1+1e-9) }

// SetLoss sets the frame loss rate the Sender sizes parity for (0 … 0.9;
// 0, the start, sends none). It applies to the frames built from then on
// and to PartBytes and IntervalBytes.
func (s *Sender) SetLoss(p float64) {
	if math.IsNaN(p) || p < 0 {
		p = 0
	}
	s.loss = min(p, 0.9)
}

// Loss returns the rate set by SetLoss.
func (s *Sender) Loss() float64 { return s.loss }

// layout is how a part of n bytes is cut at the Sender's loss rate: k
// data fragments of chunk bytes (the last shorter) and m parity
// fragments of shard = chunk bytes. With parity the k fragments are cut
// even (⌈n/k⌉ bytes, the last at least 1 byte: (k−1)·⌈n/k⌉ < n since
// ⌈n/k⌉ ≤ F − ParityHeaderLen), so that a part just over one fragment
// does not pay full-size parity shards for a short last fragment.
func (s *Sender) layout(n int) (k, m, chunk, shard int) {
	fs := s.partFragment(n)
	if n == 0 {
		return 1, 0, fs, 0
	}
	chunk = fs - ParityHeaderLen
	k = (n + chunk - 1) / chunk
	if m = ParityFor(k, s.loss); m == 0 {
		chunk = fs
		return (n + chunk - 1) / chunk, 0, chunk, 0
	}
	chunk = (n + k - 1) / k
	return k, m, chunk, chunk
}

// partFragment is the payload bytes per fragment of a part of n bytes:
// FragmentSize, or more for a part a frame limit would cut into more than
// MaxLimitedFragments fragments.
func (s *Sender) partFragment(n int) int {
	fs := s.FragmentSize()
	if fs == s.fragSize {
		return fs
	}
	return min(s.fragSize, max(fs, (n+MaxLimitedFragments-1)/MaxLimitedFragments+ParityHeaderLen))
}

// PartFrames returns the data and parity fragments a part of n bytes
// takes at the Sender's loss rate.
func (s *Sender) PartFrames(n int) (data, parity int) {
	k, m, _, _ := s.layout(n)
	return k, m
}

// PartBytes is what a part of n payload bytes costs on the wire
// (Ethernet frames without FCS, parity fragments included) at the
// Sender's loss rate.
func (s *Sender) PartBytes(n int) int {
	k, m, _, shard := s.layout(n)
	o := s.FragmentOverhead()
	return k*o + n + m*(o+ParityHeaderLen+shard)
}

// rsCodec returns the Reed-Solomon code of k data and m parity shards
// from cache (building one inverts matrices: a few µs to ms).
func rsCodec(cache map[[2]int]reedsolomon.Encoder, k, m int) (reedsolomon.Encoder, error) {
	if e := cache[[2]int{k, m}]; e != nil {
		return e, nil
	}
	e, err := reedsolomon.New(k, m)
	if err != nil {
		return nil, err
	}
	if len(cache) >= 64 {
		clear(cache)
	}
	cache[[2]int{k, m}] = e
	return e, nil
}

// parityShards computes the m parity shards of payload cut into k
// chunks of chunk bytes (shard bytes each, the last zero-padded) into
// s.parBuf, which they alias.
func (s *Sender) parityShards(payload []byte, k, m, chunk, shard int) ([][]byte, error) {
	if s.codecs == nil {
		s.codecs = map[[2]int]reedsolomon.Encoder{}
	}
	enc, err := rsCodec(s.codecs, k, m)
	if err != nil {
		return nil, err
	}
	need := (k + m) * shard
	if cap(s.parBuf) < need {
		s.parBuf = make([]byte, need)
	}
	buf := s.parBuf[:need]
	shards := make([][]byte, k+m)
	for i := 0; i < k; i++ {
		lo := i * chunk
		hi := min(lo+chunk, len(payload))
		if hi-lo == shard {
			shards[i] = payload[lo:hi]
			continue
		}
		d := buf[i*shard : (i+1)*shard]
		clear(d[copy(d, payload[lo:hi]):])
		shards[i] = d
	}
	for j := 0; j < m; j++ {
		shards[k+j] = buf[(k+j)*shard : (k+j+1)*shard]
	}
	if err := enc.Encode(shards); err != nil {
		return nil, err
	}
	return shards[k:], nil
}

// appendParityPayload writes a Parity frame's payload.
func appendParityPayload(dst []byte, m, n int, shard []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(m))
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	return append(dst, shard...)
}

// parityPayload is a decoded Parity payload.
type parityPayload struct {
	m, n  int
	shard []byte // aliases the frame
}

// parseParity decodes and checks a Parity frame's payload against its
// header (k = FragCount, j = FragIndex): ok false when they disagree.
func parseParity(f *Frame) (parityPayload, bool) {
	var p parityPayload
	if len(f.Payload) <= ParityHeaderLen {
		return p, false
	}
	p.m = int(binary.BigEndian.Uint16(f.Payload))
	p.n = int(binary.BigEndian.Uint32(f.Payload[2:]))
	p.shard = f.Payload[ParityHeaderLen:]
	k, s := int(f.FragCount), len(p.shard)
	if p.m < 1 || int(f.FragIndex) >= p.m || k+p.m > MaxShards || p.n < 1 {
		return p, false
	}
	// k fragments of s bytes, the last 1 … s: (k−1)·s < n ≤ k·s.
	if p.n > k*s || p.n <= (k-1)*s {
		return p, false
	}
	return p, true
}

// rebuild fills the data fragments ps lacks from its parity once any k
// of its k+m fragments are held; it reports whether it did. A held data
// fragment whose length does not fit the parity's shard size (a broken
// sender) makes the part unrebuildable (counted Inconsistent once).
func (a *reassembler) rebuild(st *intervalState, ps *partState) bool {
	k := int(ps.count)
	if ps.m == 0 || ps.broken || ps.got >= k || ps.got+ps.pgot < k {
		return false
	}
	s := ps.shard
	shards := make([][]byte, k+ps.m)
	for i, f := range ps.frags {
		if !ps.have[i] {
			continue
		}
		want := s
		if i == k-1 {
			want = ps.n - (k-1)*s
		}
		if len(f) != want {
			ps.broken = true
			a.c.inc(cInconsistent)
			return false
		}
		if len(f) < s {
			f = append(f[:len(f):len(f)], make([]byte, s-len(f))...)
		}
		shards[i] = f
	}
	copy(shards[k:], ps.par)
	if a.codecs == nil {
		a.codecs = map[[2]int]reedsolomon.Encoder{}
	}
	enc, err := rsCodec(a.codecs, k, ps.m)
	if err == nil {
		err = enc.ReconstructData(shards)
	}
	if err != nil {
		ps.broken = true
		a.c.inc(cBadPayload)
		return false
	}
	rebuilt := 0
	for i := range ps.frags {
		if ps.have[i] {
			continue
		}
		f := shards[i]
		if i == k-1 {
			f = f[:ps.n-(k-1)*s]
		}
		if !a.charge(st, len(f)) {
			return false
		}
		ps.frags[i], ps.have[i] = f, true
		ps.got++
		rebuilt++
	}
	a.c.inc(cRebuilt)
	for range rebuilt {
		a.c.inc(cRebuiltFragments)
	}
	return true
}

// addParity takes one authentic Parity frame.
func (a *reassembler) addParity(f *Frame, nowNs int64, frameLen int) {
	pp, ok := parseParity(f)
	if !ok {
		a.c.inc(cBadPayload)
		return
	}
	st, ps := a.part(f, nowNs, frameLen)
	if ps == nil {
		return
	}
	switch {
	case ps.m == 0:
		if !a.charge(st, pp.m*sliceCost) {
			return
		}
		ps.m, ps.n, ps.shard = pp.m, pp.n, len(pp.shard)
		ps.par = make([][]byte, pp.m)
	case ps.m != pp.m || ps.n != pp.n || ps.shard != len(pp.shard):
		a.c.inc(cInconsistent)
		return
	}
	if ps.par[f.FragIndex] != nil {
		a.c.inc(cDuplicate)
		return
	}
	if ps.got >= int(ps.count) {
		return // the part is whole: this one is spare
	}
	if !a.charge(st, len(pp.shard)) {
		return
	}
	ps.par[f.FragIndex] = append([]byte(nil), pp.shard...)
	ps.pgot++
	if a.rebuild(st, ps) {
		a.check(st)
	}
}
