// Package analyze computes ldafwd's reports offline from two captures of the
// same traffic taken at the two ends of a segment (`ldafwd analyze`).
//
// Both captures are read in one streaming pass, merged by interval: an
// interval is a multiple of the interval width since the Unix epoch, and at
// each end a packet belongs to the interval its own timestamp falls in
// (DESIGN §6), exactly as the appliance assigns packets on the wire. Per
// interval and measurement class the sender's frames go into the sender
// synopses and the receiver's into the receiver's; the estimators then see
// what a live receiver would see. Memory is bounded by one interval's
// synopses (plus, with truth, two intervals of identities).
//
// Ground truth (Config.Truth) pairs packets by their identity hash: the
// exact delay of every sent packet received in the same or the next
// interval, and the exact number never received. It is kept beside the
// synopses and never feeds them.
//
// Damaged frames are measured as far as they parse and counted; a damaged
// record ends that capture's stream with a warning; a file that is not a
// capture is an error from OpenCapture. Nothing here panics on input.
package analyze
