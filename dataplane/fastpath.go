package dataplane

import "github.com/ldafwd/ldafwd/synopsis"

// MeasureFastPath is an rx port that can run a measuring lane's whole
// poll in one call when the lane's tx buffer is empty: receive a burst,
// measure each frame (its identity hash exactly as classifier.ParseLevel
// computes it) and transmit it on the tx port, adding the frames to the
// lane's LDA as the Go lane would: a sender's frames the tx port took
// with their transmit timestamp (as its flush does with a TxStamper tx
// port), a receiver's frames with their receive timestamp. Package dpdk's
// ports implement it in C, so the frames never become Go Packets.
//
// A lane uses it only where it does exactly what the Go lane does (see
// NewLane): the sender or receiver role, one MEC, an LDA with or without
// an RDA, an LDS and a trajectory sample, no Tap; a sender's tx port is a TxStamper, a receiver reads one
// queue of its port. It measures a burst's longest prefix of frames the
// lane records as they are, and hands back unmeasured, in order,
// everything from the first frame the lane decides about (truncated,
// malformed, control, link-local: classifier.ParseLevel's flags), whose
// hash it does not reproduce (IPv6 extension headers) or, for a
// receiver, that neither the port nor the fast path (RxStamp) stamped:
// the Go lane receives those as from RxBurst, behind the prefix. A burst shorter than asked for (the
// lane would wait DrainNs for more before transmitting), or one whose
// first frame is such a frame, it hands back whole.
//
// Checked once per lane, like Forwarder, never per packet.
type MeasureFastPath interface {
	// SendMeasured receives up to burst frames and, when it measures a
	// prefix of them (r.Done), transmits that on to in up to retries
	// transmit calls, as the lane's flush does, adding to syn's synopses
	// (as SynSet.Record) the frames taken with their transmit stamp or,
	// with rx.On, every frame of the prefix with its receive stamp. Frames of the prefix never taken are
	// pkts[:r.Kept] and the frames after the prefix
	// pkts[r.Kept:r.Kept+r.Rest], in order; a burst handed back is
	// pkts[:r.Rx]. ok is false, with nothing received, when to is not a
	// port it can transmit on directly or when frames received earlier
	// wait to be taken with RxBurst. After a full burst measured and
	// transmitted whole, when the lane's state is again what it was, it
	// may poll again in the same call: r.Before sums those polls, and
	// the rest of r is the last poll's.
	SendMeasured(to Port, syn FastSynopses, burst, retries int, rx RxStamp, pkts []*Packet) (r FastResult, ok bool)
}

// FastSynopses are the synopses a MeasureFastPath records a frame in: the
// active copy's LDA, its RDA, LDS and trajectory sample when it has them
// (nil otherwise), and the LDS weight of the one class. A port that
// cannot record them all returns ok false.
type FastSynopses struct {
	LDA    *synopsis.LDA
	RDA    *synopsis.RDA
	LDS    *synopsis.LDS
	Sample *synopsis.Sample
	Weight uint32
}

// RxStamp is how a MeasureFastPath stamps a receiver's frames.
type RxStamp struct {
	On bool // a receiver: frames are recorded with their receive stamp
	// PollStart, when not 0, lets the port give a frame it did not stamp
	// the lane's poll stamp (pollStamp) itself, from CLOCK_REALTIME (the
	// lane's clock is RealtimeClock): the midpoint of PollLow (PollStart
	// when PollLow is 0 or later than the clock) and the clock read right
	// after the receive. Otherwise such a frame ends the prefix.
	PollLow, PollStart uint64
}

// FastResult is what one MeasureFastPath call did: its last poll, and
// in Before the full polls it made before that one.
type FastResult struct {
	Rx        int    // frames received
	RxBytes   uint64 // the bytes of the prefix measured (Done), Rx - Rest frames
	Done      bool   // a prefix measured and transmitted; false: handed back whole (pkts[:Rx])
	Sent      int    // frames the tx port took (a sender's recorded frames)
	SentBytes uint64 // their bytes
	Kept      int    // frames of the prefix never taken: pkts[:Kept]
	Rest      int    // frames after the prefix, unmeasured: pkts[Kept:Kept+Rest]
	Polled    int    // receiver: frames of the prefix given the poll stamp PollTS
	PollTS    uint64 // that stamp, the midpoint of the interval ending at PollNow
	PollNow   uint64
	// A sender's transmit stamps are the midpoint of clock reads around
	// each transmit call: TxErrSum is Σ over the frames sent of how far
	// their stamp may be off (half the gap), TxErrMax the widest.
	TxErrSum, TxErrMax uint64
	// TxNow is a sender's CLOCK_REALTIME read (RealtimeClock's clock)
	// right after its last transmit call that took frames: 0 when none
	// did or the port stamps with another clock. The lane takes it as
	// the time of the poll instead of reading the clock again.
	TxNow uint64
	// Before is what the call's polls before the last one did: a port
	// may poll again after a full burst it measured and transmitted
	// whole, so that one call serves several bursts. The fields above
	// are the last poll's.
	Before FastPolls
}

// FastPolls sums a MeasureFastPath call's full polls before its last
// one, each measured whole and transmitted whole (Frames received, sent
// and recorded).
type FastPolls struct {
	Polls              int
	Frames             int
	Bytes              uint64
	TxErrSum, TxErrMax uint64 // a sender's, as FastResult's
	// A receiver's frames given a poll stamp, Σ over them of the stamp's
	// error and the widest; the last such poll's stamp and the clock
	// reading after its receive (0: none), a low bound for the arrival
	// of whatever a later poll receives.
	Polled                 int
	PollErrSum, PollErrMax uint64
	PollTS, PollNow        uint64
}
