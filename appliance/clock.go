package appliance

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/report"
)

// Clock offset from the two directions.
//
// Each appliance measures only the direction it receives: its delays are
// its clock's arrival stamps minus the peer's transmit stamps, d = D + θ
// for a true path delay D and an offset θ = (receiver clock − sender
// clock). Neither end holds both directions, so each ships, with its own
// interval synopses, its latest valid mean of the direction it receives
// (the clock part, below). The peer then holds both one-way means of one
// pair of clocks: with d_fwd = D_fwd + θ and d_rev = D_rev − θ,
//
//	θ̂ = (d_fwd − d_rev)/2 = θ + (D_fwd − D_rev)/2
//
// is the offset of the receiver's clock over the sender's (positive: the
// receiver's clock is ahead), exact when the two paths' mean delays are
// equal — the symmetry every two-way method (NTP, PTP, TWAMP) assumes; an
// asymmetric path biases it by half the difference. Its bound is
// (ci_fwd + ci_rev)/2 from the two means' confidence intervals, and does
// not cover that bias. The two means come from different intervals
// (the peer's is the newest it had when it shipped), so a clock that
// drifts fast moves between them.
//
// The clock part is a part of kind control.KindMeta, MEC 0, announced in
// the Hello like the synopses (a peer that does not know it ignores it:
// the control protocol carries it as opaque bytes). Its payload is the
// synopsis payload header (payload.go; frames = 0) followed by
//
//	1        flags: bit 0 a measurement follows, bit 1 a control-loss
//	         report follows (no other bit is defined)
//	uvarint  the interval the mean was measured in (the reverse direction's numbers)
//	varint   its mean one-way delay, ns (zig-zag; negative when the clocks disagree)
//	uvarint  its mean_ci_ns, rounded up
//	uvarint  (bit 1) the control frames of the reverse direction lost in
//	         the segment lately, parts per million (fec.go)
//
// The part is the one thing each end ships to the other every interval,
// so the control-loss report, which the sender of the reverse direction
// sizes its parity fragments from, rides in it too.
var clockPart = control.PartKey{MEC: 0, Kind: control.KindMeta}

// The clock part's flags: a measurement follows; a control-loss report
// follows.
const (
	clockFlagMean = 1
	clockFlagLoss = 2
)

// maxClockAge is how many intervals apart the forward line and the peer's
// reverse mean may be for an offset estimate: the peer's mean is normally
// two or three intervals older (it waits for its own pairing, then for
// the next shipment); much older, the clocks may have moved since.
const maxClockAge = 16

// clockMean is one direction's valid mean delay in one interval.
type clockMean struct {
	k      uint64
	meanNs float64
	ciNs   float64
	recv   uint64 // received frames of the line it came from (to pick the best class)
	ok     bool
	// The control-loss report that rides with it (fec.go): lossPPM is
	// valid when hasLoss.
	lossPPM uint64
	hasLoss bool
}

// clockState is the controller's side of the offset estimate: its own
// latest valid mean of the direction it receives (shipped to the peer)
// and the peer's latest of the other direction (from the peer's clock
// part).
type clockState struct {
	own, peer clockMean
}

// appendClockPart appends the clock part's body (after its payload
// header) for m.
func appendClockPart(dst []byte, m clockMean) []byte {
	flags := byte(0)
	if m.ok {
		flags |= clockFlagMean
	}
	if m.hasLoss {
		flags |= clockFlagLoss
	}
	dst = append(dst, flags)
	if m.ok {
		dst = binary.AppendUvarint(dst, m.k)
		dst = binary.AppendVarint(dst, int64(math.Round(m.meanNs)))
		dst = binary.AppendUvarint(dst, uint64(math.Ceil(m.ciNs)))
	}
	if m.hasLoss {
		dst = binary.AppendUvarint(dst, min(m.lossPPM, 1e6))
	}
	return dst
}

// parseClockPart decodes a clock part's body; ok is false when it holds
// no measurement. Anything malformed (unknown flags, trailing bytes,
// truncated varints, a loss over a million ppm) is an error.
func parseClockPart(b []byte) (clockMean, error) {
	var m clockMean
	if len(b) < 1 {
		return m, fmt.Errorf("%w: clock part empty", errPayload)
	}
	flags := b[0]
	b = b[1:]
	if flags&^(clockFlagMean|clockFlagLoss) != 0 {
		return m, fmt.Errorf("%w: clock part flags %#x", errPayload, flags)
	}
	uv := func(what string) (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, fmt.Errorf("%w: clock part %s", errPayload, what)
		}
		b = b[n:]
		return v, nil
	}
	if flags&clockFlagMean != 0 {
		k, err := uv("interval")
		if err != nil {
			return m, err
		}
		mean, n := binary.Varint(b)
		if n <= 0 {
			return m, fmt.Errorf("%w: clock part mean", errPayload)
		}
		b = b[n:]
		ci, err := uv("mean_ci")
		if err != nil || ci > math.MaxInt64 {
			return m, fmt.Errorf("%w: clock part mean_ci", errPayload)
		}
		m = clockMean{k: k, meanNs: float64(mean), ciNs: float64(ci), ok: true}
	}
	if flags&clockFlagLoss != 0 {
		ppm, err := uv("control-loss report")
		if err != nil || ppm > 1e6 {
			return clockMean{}, fmt.Errorf("%w: clock part control-loss report", errPayload)
		}
		m.lossPPM, m.hasLoss = ppm, true
	}
	if len(b) != 0 {
		return clockMean{}, fmt.Errorf("%w: %d bytes after the clock part", errPayload, len(b))
	}
	return m, nil
}

// clockPayload is the clock part this sender ships now: a payload header
// and the receiver's latest valid mean.
func (c *controller) clockPayload(hdr []byte) []byte {
	return appendClockPart(hdr, c.clockMean())
}

// clockMean is what the clock part shipped now carries: the receiver's
// latest valid mean and the control loss it measured.
func (c *controller) clockMean() clockMean {
	m := c.clk.own
	m.lossPPM, m.hasLoss = c.fec.own, c.fec.ok
	return m
}

// peerClock takes the peer's latest reverse mean from bundle b's clock
// part, if it has one (a peer of an older build does not).
func (c *controller) peerClock(b *control.IntervalBundle) {
	payload, ok := b.Payloads[clockPart]
	if !ok {
		return
	}
	_, body, err := parsePayload(payload)
	var m clockMean
	if err == nil {
		m, err = parseClockPart(body)
	}
	if err != nil {
		c.a.cfg.Log.Warn().Err(err).Uint64("interval", b.Interval).Msg("the peer's clock part does not decode: no clock offset estimate from it")
		return
	}
	c.peerLoss(m)
	if m.ok && (!c.clk.peer.ok || m.k >= c.clk.peer.k) {
		c.clk.peer = m
	}
}

// clockLine runs on every line as it goes out: a valid LDA line of the
// whole class (not a flow) is this end's newest mean of the direction it
// receives (the busiest class's, when several classes report an
// interval), and, with the peer's mean of the other direction, gives the
// clock offset in its extra.
func (c *controller) clockLine(r *report.Interval) {
	if r.Synopsis != "lda" || r.Flow != "" || !r.Valid || r.Samples == 0 || r.Interval < 0 ||
		math.IsNaN(r.MeanNs) || math.IsInf(r.MeanNs, 0) || math.IsNaN(r.MeanCINs) || math.IsInf(r.MeanCINs, 0) {
		return
	}
	k := uint64(r.Interval)
	if own := &c.clk.own; !own.ok || k > own.k || k == own.k && r.Received > own.recv {
		*own = clockMean{k: k, meanNs: r.MeanNs, ciNs: r.MeanCINs, recv: r.Received, ok: true}
	}
	p := c.clk.peer
	if !p.ok || max(k, p.k)-min(k, p.k) > maxClockAge {
		return
	}
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	r.Extra["clock_offset_ns"] = (r.MeanNs - p.meanNs) / 2
	r.Extra["clock_offset_ci_ns"] = (r.MeanCINs + p.ciNs) / 2
	r.Extra["clock_offset_interval"] = p.k
	r.Extra["clock_reverse_mean_ns"] = p.meanNs
}
