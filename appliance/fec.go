package appliance

// Parity fragments sized from the loss the peer reports back.
//
// The sender adds Reed-Solomon parity fragments to every part it ships
// (control/parity.go): any k of a part's k+m fragments rebuild it. How
// many it adds follows the frame loss of the segment, which only the
// receiving end sees: its control.Receiver counts the sender's numbered
// control frames and those that arrived (ControlFrames). Each appliance
// receives one direction and sends the other, and ships a clock part to
// its peer every interval (clock.go); the control loss it saw over the
// last lossWindow shipments, or over the last lossShort if higher and at
// least lossShortMin frames were lost there, rides in that part. The peer sizes its parity
// for the highest of its last peerLossReports reports (loss comes in
// spells; one lucky interval should not drop the protection), at least
// Config.ControlParity, and sends none while no report has come (the
// start, or a peer of an older build) unless ControlParity says so.
//
// The budget (budget.go) counts parity in what a part costs, so under
// loss the RDA and the LDS shrink, and are left out, before the LDA is
// touched: the LDA and its parity always go. Replies to the peer's
// requests are refused when larger than the interval's budget
// (replyFits).

// lossWindow is how many shipments the control loss reported back is
// measured over: about 200 control frames at one LDA of two fragments,
// so that a loss of 1 % shows (over 8 shipments, 56 frames, it was
// missed two times in three). lossShort is the window that follows a
// loss that sets in: the report is the higher of the two.
const (
	lossWindow = 32
	lossShort  = 4
)

// lossMinFrames is the fewest control frames a loss report is measured
// on: fewer say little (one frame lost in four is not a 25 % loss).
// lossShortMin is the fewest lost frames the short window must hold to
// count: at 1 % loss one frame in the 24 of 4 shipments would read as 4 %.
const (
	lossMinFrames = 16
	lossShortMin  = 3
)

// peerLossReports is how many of the peer's latest reports the parity is
// sized for the highest of.
const peerLossReports = 3

// fecState is the controller's side of it.
type fecState struct {
	win  [][2]uint64 // the receiver's ControlFrames at the last shipments, oldest first
	own  uint64      // the loss measured over win, ppm
	ok   bool        // own is measured
	peer []float64   // the peer's latest reports, oldest first
}

// measureLoss takes the receiver's count of the peer's control frames
// at a shipment and updates the loss reported back.
func (c *controller) measureLoss() {
	f := &c.fec
	sent, got := c.a.receiver.ControlFramesSettled()
	f.win = append(f.win, [2]uint64{sent, got})
	if len(f.win) > lossWindow+1 {
		f.win = append(f.win[:0], f.win[len(f.win)-lossWindow-1:]...)
	}
	f.ok = false
	for i, from := range []int{0, max(0, len(f.win)-1-lossShort)} {
		ds, dg := sent-f.win[from][0], got-f.win[from][1]
		if i == 1 && ds-dg < lossShortMin {
			continue // one or two frames lost in a few dozen: noise, not a spell
		}
		if ds >= lossMinFrames && dg <= ds {
			ppm := (ds - dg) * 1_000_000 / ds
			if !f.ok || ppm > f.own {
				f.own = ppm
			}
			f.ok = true
		}
	}
}

// peerLoss takes the peer's control-loss report from its clock part.
func (c *controller) peerLoss(m clockMean) {
	if !m.hasLoss {
		return
	}
	f := &c.fec
	f.peer = append(f.peer, float64(m.lossPPM)/1e6)
	if len(f.peer) > peerLossReports {
		f.peer = append(f.peer[:0], f.peer[len(f.peer)-peerLossReports:]...)
	}
}

// parityLoss is the frame loss rate this interval's parity is sized for.
func (c *controller) parityLoss() float64 {
	floor := c.a.cfg.ControlParity
	if floor < 0 {
		return 0
	}
	p := floor
	for _, r := range c.fec.peer {
		p = max(p, r)
	}
	return p
}
