// Package control is ldafwd's in-band control protocol: the frames a
// sending appliance puts on the measured segment so that the receiving
// appliance knows where each interval ends and what the sender's synopses
// held (docs/protocol.md has the byte layout).
//
// # Role
//
// The LDA papers (ToN 2012 Sec. II-B and V) have the sender send a Start and
// an End control message per interval, in the data path, sequence numbered,
// with the sender's synopsis in the End message; a lost control message
// makes that interval unusable and nothing else. Here:
//
//   - Each sender lane (worker and its transmit queue) emits an End marker
//     for interval k right after the last data frame it recorded in k
//     (EndWriter.AppendEnd). With double-buffered synopses the End of k is
//     also the Start of k+1, so there is no separate Start message (the
//     paper's alternative of a Start sent T' later is not needed: no sample
//     falls between intervals).
//   - The control goroutine then encodes the idle synopses and sends, per
//     interval, one Hello (the session's configuration, so a receiver that
//     restarts learns it within one interval) and each synopsis cut into
//     fragments that fit the port MTU (Sender.AppendInterval), each part
//     followed by Reed-Solomon parity fragments sized for the frame loss
//     the caller sets (Sender.SetLoss, parity.go): any k of a part's k+m
//     fragments rebuild it at the receiver. With a Priority
//     (SenderConfig.Priority, priority.go) the fragments, parity
//     fragments, requests and replies carry an 802.1p priority tag, so a
//     segment that queues by PCP lets them pass congestion; End markers
//     and Hellos never do: they stay in the data's queue, in order with it.
//   - The Receiver validates every frame (magic, version, lengths,
//     HMAC-SHA256 tag, direction, session, replay window), reassembles each
//     interval and emits either an IntervalBundle with the sender's End
//     counts and encoded synopses, or an IntervalFailure with a Reason.
//     A failed interval never produces a number; the next one starts clean.
//
// The synopsis encodings are opaque bytes here: this package imports no
// other ldafwd package (its one dependency is the Reed-Solomon code,
// github.com/klauspost/reedsolomon), so the parser can be fuzzed on its
// own. The Receiver also counts the sender's numbered frames and those
// that arrived (ControlFrames): the control loss the caller reports back
// to the sender, which sizes its parity from it.
//
// # Lifetimes
//
// A Sender is one session: created at start with a fresh random session id,
// alive until the process stops. A restart is a new session; the receiver
// adopts it only through a fresh, newer signed time (sessionGuard, shared
// by the Receiver and the worker's EndReader), fails the old session's
// intervals in flight with ReasonSessionRestart, and refuses to return to
// the last 8 session ids or to any session that signed nothing later.
// A Receiver lives as long as the direction it receives. Frames passed to
// Consume are not retained; IntervalBundle payloads are copies owned by the
// bundle. A Frame from ParseFrame aliases the parsed buffer.
//
// # Concurrency
//
// Workers (hot path) each own one EndWriter and one preallocated frame
// buffer; AppendEnd takes no lock and allocates nothing. The frame sequence
// number is shared by the whole session, so it is one atomic add per
// control frame (never per data packet). Everything else on a Sender, and
// all of a Receiver except Counters, belongs to the control goroutine.
// Authenticator keeps hash state: one per goroutine. On the receiving side a
// worker that flips its synopses at an End marker may use ParseFrame and its
// own Authenticator.Verify (both allocation-free) to check the marker before
// flipping — EndReader packages that with a per-session guard so a replayed
// or second-lane End(k) never flips twice; the replay window and all
// counters live in the Receiver, which still gets every control frame.
//
// # Hazards
//
//   - Without a key (insecure mode) anyone on the segment can forge
//     intervals; the caller must have been told (--insecure) and warn.
//   - The tag covers the control header and payload, not the Ethernet
//     header: MACs and VLAN tags may be rewritten in the segment.
//   - A session becomes live only through an authentic Hello or End whose
//     signed time is within ReceiverConfig.MaxClockSkew (default 1 s) of
//     the receive time and later than anything the live session signed
//     (docs/protocol.md, threat model). A receiver that has just started
//     may adopt a session retired less than the skew ago until the live
//     sender's next End or Hello takes it back.
//   - Only authentic frames are control. A frame of the control EtherType
//     that does not authenticate is a user's (EndForeign): the appliance
//     forwards it; ControlCheck keeps authentic ones arriving from upstream
//     off the segment.
//   - Interval numbers come from the sender. An authentic frame with a
//     far-future interval number makes frames more than 64 intervals
//     behind it late; only key holders (or anyone, in insecure mode) can
//     do that.
//   - Reassembly memory is bounded by ReceiverConfig (intervals, bytes,
//     fragments per part, parts per interval); each bound, when hit, fails
//     an interval and moves a counter. An interval pushed out by newer ones
//     is reported with what it still lacked (a lost fragment or End); one
//     older than everything in flight, with ReasonEvicted; one over the
//     byte or count limits, with ReasonOversize.
package control
