package appliance

import (
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
)

// Pacing the control frames into the data.
//
// A congested segment's queue is full most of the time: a tail-drop
// queue kept full by the data has room for about one frame whenever one
// has left, and the data's next frame takes it. A burst of control frames
// (a shipment's fragments, a reply) arriving at such a queue loses all
// but its first frame, whatever the data's own loss (on a tbf kept full
// by 10 kpps of 128-byte frames that loses 22 % of them, control frames
// sent in bursts lose 80–90 %, and parity sized for that loss would make
// the control traffic several times its budget). The sender lane therefore
// injects one control frame at a time, at least injectGap apart
// (dataplane.LaneConfig.InjectGap): two of the data's mean frame gaps, so
// that each control frame meets the queue as a data frame does, and
// never more than maxInjectGap, so that a quiet segment's control frames
// are not held back for long. At line rate the gap is a fraction of a
// microsecond and changes nothing. A worker that polls less often than
// the gap (long bursts on a busy or shared core) sends one frame for
// each gap since the last, a few at most, at the head of the poll's
// burst: one a poll would hold the control traffic to the poll rate,
// which on a 2-core host at 50 kpps is below what the shipments alone
// take.

// Pacing alone does not get a full-size control frame through such a
// queue: it has room for a frame of the data's size, rarely for 1 500
// bytes (paced, 1 514-byte fragments lose 87 % on that tbf, 144-byte
// ones 40–60 %, 128-byte ones about what the data loses). While the peer
// reports a control loss of lossyFrameLoss or more, the synopsis, parity
// and reply fragments are therefore cut to the data's mean frame size
// (control.Sender SetFrameLimit, at least control.MinFrameLimit). Small
// frames cost more headers: the parts take up to about twice the bytes at
// 128-byte data frames, which the control budget counts, so the RDA and
// the LDS shrink first. The limit is lifted when the reported loss falls
// back below lossyFrameLoss, which the peer's reports (fec.go) take the
// longest of their windows to say.

// lossyFrameLoss is the reported control loss from which the fragments
// are cut to the data's frame size. Below it the parity is cheaper than
// the small frames' headers (at 128-byte data frames they double what a
// part costs) and a loss that falls on every frame alike (bit errors on
// short frames, a lossy emulator) gains nothing from them; at 20 % and
// more a queue is likely full, and full-size fragments cost the parity
// for the 50–90 % loss such a queue gives them.
const lossyFrameLoss = 0.2

// frameLimit is the frame size the fragments are cut to for the control
// loss the peer reports and a shipped copy's data (0: none): its mean
// frame size when the loss is lossyFrameLoss or more.
func frameLimit(loss float64, set *dataplane.SynSet) int {
	if loss < lossyFrameLoss {
		return 0
	}
	return meanFrame(set)
}

// meanFrame is the mean frame size of a copy's data (Ethernet bytes, at
// most 64 KiB; 0 when it recorded none): what a control frame should not
// exceed to pass a queue that data keeps full.
func meanFrame(set *dataplane.SynSet) int {
	if set.Frames == 0 {
		return 0
	}
	return int(min(set.Bytes/set.Frames, 1<<16))
}

// The gap never holds the control frames back for long: when more wait
// (the shipper's, the paced replies', the inject ring's) than leave in a
// quarter of the interval at the gap, it narrows so that they do
// (paceGap, every control step), down to none. A segment's control
// traffic is then never slower than what the budget ships.

// maxInjectGap is the widest gap between two control frames: 4 000
// frames a second, or 400 an interval when intervals are shorter than
// 100 ms.
const maxInjectGap = 250 * time.Microsecond

// injectGap is the gap between injected control frames for the data
// rate of a shipped copy: twice its mean frame gap over the copy's span
// (its intervals' length when the copy does not say), at most maxInjectGap
// and interval/400.
func injectGap(set *dataplane.SynSet, interval time.Duration) uint64 {
	limit := min(uint64(maxInjectGap), uint64(interval.Nanoseconds())/400)
	span := uint64(interval.Nanoseconds())
	switch {
	case set.EndNs > set.StartNs && set.FirstK == set.LastK:
		span = set.EndNs - set.StartNs
	case set.LastK > set.FirstK:
		span *= set.LastK - set.FirstK + 1
	}
	if set.Frames == 0 {
		return limit
	}
	return min(limit, 2*span/set.Frames)
}

// paceGap is the injection gap while backlog control frames wait: base,
// or less so that they leave within a quarter of the interval.
func paceGap(base uint64, backlog int, interval time.Duration) uint64 {
	if backlog == 0 {
		return base
	}
	return min(base, uint64(interval.Nanoseconds())/4/uint64(backlog))
}
