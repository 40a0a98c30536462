// Package analyze computes ldafwd's reports offline from two captures of the
// same traffic taken at the two ends of a segment (`ldafwd analyze`).
//
// # How a pair of captures is compared
//
// Each frame is reduced to a compact record (timestamp, identity,
// measurement class). Receiver packets are paired with sender packets by
// identity, first in first out per identity: a receiver copy takes the
// earliest unpaired sender copy stamped no later than its receive time plus
// the clock offset unambiguous pairs show. A duplicate made inside the
// segment pairs with nothing; it is counted as extra, never as a second
// reception.
//
// Captures that can be read twice (files, compressed or not) are analyzed
// as streams (stream.go): both are read in time order, merged, and the
// copies of an identity within Config.MaxDelay of its first copy (the
// largest one-way delay, clock offset included) are paired as one group;
// copies further apart are different packets. A first pass learns what
// must be known before any line is reported (counts, damage, refusals,
// the delays and so the common time range, the share of packets found);
// the second pass reports each interval as soon as no packet still to be
// read can belong to it. Memory is the packets of the window and of the
// intervals not yet reported, not the captures. On several cores each
// pass cuts uncompressed files in time into segments analyzed apart,
// sharing nothing while they run, checked against each other where they
// meet (segment.go); captures that cannot be cut pair on shards, one
// goroutine merging the ends (shard.go). Every way gives the same lines,
// byte for byte. Captures that cannot be
// read twice, and Config.WholeCapture, are read whole into records first
// (about 60 bytes per packet of both captures) and paired by sorting their
// identities. On captures whose copies of an identity lie within the
// window of each other the two give the same lines, byte for byte; the
// package's tests hold every pair they analyze to that.
//
// Intervals are multiples of the interval width since the Unix epoch in the
// sender's clock. A sender packet belongs to the interval it was sent in; a
// receiver packet to its sender copy's interval, so packets in flight at a
// boundary stay in their interval at both ends, as the appliance's in-band
// markers keep them. A packet received after packets of a later interval
// stays in its own and is counted as crossed. A receiver packet that pairs
// with nothing goes where an End marker would have put it: into the latest
// interval whose packets had arrived before it.
//
// Only the common time range is measured: sender packets sent before the
// receiver's capture could have seen them, or so late that they could have
// arrived after it ended (given the smallest and largest delays seen), are
// left out at both ends and counted. Pairs of captures that cannot be
// compared are refused with an error naming both files: fewer than
// MinMatchedShare of the sender's packets found at the receiver, no common
// time range, or timestamps that go back by more than MaxBackStep (smaller
// disorder is sorted away).
//
// # Damage and snap length
//
// The captures are read by the strict pcap/pcapng reader of package
// dataplane/pcapfile (the one the pcap port replays with; pcapng with any
// number of interfaces, each with its own timestamp resolution and
// offset), through gzip or zstd when the file starts with their magic: a
// block whose lengths disagree, a file that ends inside a record, an unknown
// block type, an impossible timestamp (a microsecond field ≥ 10⁶, a
// nanosecond field ≥ 10⁹, a record far outside its neighbours) is a
// *DamageError naming the file and the packet record. Run refuses a damaged
// pair unless Config.InvalidateDamaged, which analyzes around the damage and
// reports the intervals it touches valid:false naming it. Damage never reads
// as loss.
//
// Frames cut by a snap length are counted apart from malformed ones. A
// packet whose identity reaches past what both captures keep (the smaller
// snap length less an Ethernet header and two VLAN tags) would hash
// different bytes at the two ends; it is left out at both ends and counted.
//
// # Truth
//
// Config.Truth adds the exact truth from the pairing: for each line, the
// packets sent in its interval and class, how many were never received, and
// the mean and standard deviation of the paired delays. It is kept beside
// the synopses and never feeds them. Bit-identical packets pair first in
// first out; their number is reported at both ends, and an interval whose
// identical copies straddle a boundary with some copy unpaired is invalid.
//
// # The LDS
//
// The per-flow sketch is built when its interval is estimated, from each
// end's packets of the interval kept until then: without --lds-* flags
// sized for the flows the sender saw (synopsis.SizeLDSConfig). Its cells
// are then repaired from the set difference an RDA over the same packets
// decodes — never from the pairing, which stays the truth's alone — so a
// line shows what an appliance with the same synopses could report.
//
// # The trajectory sample
//
// --synopsis sample keeps, per class and end, the packets whose identity
// both ends select alike (synopsis.Sample), ships the sender's through its
// wire encoding as an appliance would, and pairs the two by digest: exact
// delays of a uniform sample, from which the line gives p50 … p99.9 with
// distribution-free bounds, and the exact loss of the sampled packets.
// With Truth its true_lost is the pairing's loss of the same sampled
// packets and extra.true_quantiles the quantiles of every delivered packet
// of the class and interval (docs/sample.md).
//
// Nothing here panics on input.
package analyze
