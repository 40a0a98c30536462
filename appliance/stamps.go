package appliance

import (
	"fmt"
	"math"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// An interval whose timestamps may be off, on average, by more than
// stampErrLimitNs + stampErrLimitFrac × |mean| is reported invalid: its
// mean_ci_ns would still hold the truth, but as a width made mostly of our
// own stamping rather than of the network, around a number that says
// little. The bound is the whole window a stamp may lie in; the errors
// measured were about half of it (a sender's frame leaves early in its
// transmit call, a receiver's frame arrives anywhere in its poll gap), so
// 40 µs + 10 % keeps what a valid line's stamps may add to about 20 µs +
// 5 % of the mean. Kernel (XDP) and NIC stamps stay far below it; a
// poll-stamping worker that sleeps when idle (a 50 µs sleep lasts ~110 µs)
// does not.
// A lab whose receiver can only stamp at the poll (a packet socket, a
// worker that sleeps) may raise the fixed part (Config.MaxStampErr, run's
// --max-stamp-err) and get lines whose wider bound still holds.
const (
	DefaultMaxStampErr = 40 * time.Microsecond
	stampErrLimitFrac  = 0.10
)

// rxStamps is the receiver's share of an interval's timestamp error.
type rxStamps struct {
	errNs  uint64 // Σ over recorded frames of their stamp uncertainty, ns
	polled uint64 // frames stamped at poll time (the port gave none)
}

// stamps adds both ends' timestamp uncertainty to r (tx: the sender's mean
// per-frame uncertainty from its synopsis payload) and invalidates r when
// it exceeds the limit. The average bounds what the stamps move the
// interval's mean, which the LDA and RDA lines estimate.
func (p *pairer) stamps(r *report.Interval, txErr uint64, rc *rcopy) {
	var rxErr uint64
	if rc.frames > 0 {
		rxErr = (rc.stamps.errNs + rc.frames - 1) / rc.frames
	}
	r.TxStampErrNs, r.RxStampErrNs = float64(txErr), float64(rxErr)
	r.StampErrNs = float64(txErr + rxErr)
	r.MeanCINs += r.StampErrNs
	r.StampSource = stampSource(p.rx, rc.stamps.polled, rc.frames)
	p.stampLimit(r)
}

// flowStamps is stamps for an LDS flow line: the interval's average does
// not bound a flow's mean (its frames may have gone out in slower transmit
// calls, or been polled late), so the line reports the flow's own figure,
// what the stamps of the packets in the cells its estimate averaged can
// move it (synopsis.FlowEstimate.StampErrNs; the estimate's MeanCINs
// already includes it).
func (p *pairer) flowStamps(r *report.Interval, f *synopsis.FlowEstimate, rc *rcopy) {
	r.TxStampErrNs, r.RxStampErrNs, r.StampErrNs = f.TxStampErrNs, f.RxStampErrNs, f.StampErrNs
	r.StampSource = stampSource(p.rx, rc.stamps.polled, rc.frames)
	p.stampLimit(r)
}

// stampLimit makes a line's delay invalid (stamps_uncertain) when its
// stamps are uncertain by more than --max-stamp-err allows, by the line's
// figures now: a cause found with earlier figures (before a repair) goes.
func (p *pairer) stampLimit(r *report.Interval) {
	fixed := float64(p.cfg.MaxStampErr.Nanoseconds())
	limit := fixed + stampErrLimitFrac*math.Abs(r.MeanNs)
	r.Clear(report.StampsUncertain)
	if r.StampErrNs > limit {
		r.Invalidate(report.StampsUncertain, fmt.Sprintf("timestamps uncertain by %.1f µs on average, over the %.1f µs allowed (%.0f µs + 10 %% of the mean, --max-stamp-err): sender %.1f µs (clock gap around its transmit calls: a slow or preempted send), receiver %.1f µs (%s stamps; poll stamps: the gap since the worker last found its rx queue empty)",
			r.StampErrNs/1e3, limit/1e3, fixed/1e3, r.TxStampErrNs/1e3, r.RxStampErrNs/1e3, r.StampSource))
	}
}

// stampSource names where the receiver's stamps came from: the rx port's
// own source ("hw", "xdp", "port"), "poll" when the lane stamped every
// frame, both joined with "+" when it stamped some.
func stampSource(rx dataplane.Port, polled, frames uint64) string {
	src := "port"
	if s, ok := rx.(interface{ TimestampSource() string }); ok {
		switch s.TimestampSource() {
		case "hardware":
			src = "hw"
		case "xdp":
			src = "xdp"
		default: // "software", "poll": the port leaves stamping to the lane
			return "poll"
		}
	}
	switch {
	case polled == 0:
		return src
	case polled >= frames:
		return "poll"
	}
	return src + "+poll"
}
