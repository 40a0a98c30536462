package dataplane

import "github.com/ldafwd/ldafwd/synopsis"

// SenderFastPath is an rx port that can run a sender lane's whole poll in
// one call when the lane's tx buffer is empty: receive a burst, measure
// each frame (its identity hash exactly as classifier.ParseLevel computes
// it) and transmit it on the tx port, adding the frames the tx port took
// to the lane's LDA with their transmit timestamp, as the lane's flush
// would with a TxStamper tx port. Package dpdk's ports implement it in C,
// so the frames never become Go Packets.
//
// A lane uses it only where it does exactly what the Go lane does (see
// NewLane): the sender role, one MEC, an LDA and no RDA or LDS, no Tap,
// a tx port that is a TxStamper. Anything the port does not reproduce
// exactly it hands back whole, unmeasured and untransmitted, so the Go
// lane takes that burst as from RxBurst: a burst shorter than asked for
// (the lane would wait DrainNs for more before transmitting), or one
// holding a frame the fast paths of classifier.ParseLevel do not take or
// one the lane does not simply record (truncated, malformed, control,
// link-local: classifier.ParseFastOnly and the flags).
//
// Checked once per lane, like Forwarder, never per packet.
type SenderFastPath interface {
	// SendMeasured receives up to burst frames and, when it takes the
	// burst (r.Done), transmits them on to in up to retries transmit
	// calls, as the lane's flush does, adding the frames taken to lda.
	// Frames never taken are pkts[:r.Kept], in order; a burst handed
	// back is pkts[:r.Rx]. ok is false, with nothing received, when to is
	// not a port it can transmit on directly or when frames received
	// earlier wait to be taken with RxBurst.
	SendMeasured(to Port, lda *synopsis.LDA, burst, retries int, pkts []*Packet) (r FastResult, ok bool)
}

// FastResult is what one SenderFastPath call did.
type FastResult struct {
	Rx        int    // frames received
	RxBytes   uint64 // their bytes
	Done      bool   // measured and transmitted; false: handed back whole (pkts[:Rx])
	Sent      int    // frames the tx port took (recorded in the LDA)
	SentBytes uint64 // their bytes
	Kept      int    // Rx - Sent frames never taken: pkts[:Kept]
}
