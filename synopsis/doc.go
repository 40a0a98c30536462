// Package synopsis holds the per-interval measurement sketches of ldafwd —
// the Lossy Difference Aggregator (LDA), the Reconcilable Difference
// Aggregator (RDA), the per-flow Lossy Difference Sketch (LDS) and the
// trajectory Sample — and their estimators of one-way delay (mean,
// standard deviation, confidence bound; the Sample's quantiles with
// distribution-free bounds) and loss.
//
// # Role
//
// The sender end of a measured segment records every packet it sends into
// its synopses, the receiver end every packet it receives; at the end of
// an interval the sender's synopses are encoded (AppendBinary or the
// smaller AppendCompact), carried in-band to the receiver, decoded and
// combined with the receiver's own by an Estimate function. Estimates
// always say how far to trust them (usable buckets, effective sample size,
// Valid, Reason and Code, the reason's typed cause with the scope it
// leaves unknown: report.Code): a synopsis never returns a silent number.
// Decisions between causes use Code, never the text. The RDA's
// decode lists the lost and extra packets; with their timestamps they
// repair the RDA's own cells (EstimateRDA) and the LDS's
// (EstimateLDSFlowsRepaired), which loss would otherwise leave unusable.
//
// Both ends derive everything from one 64-bit packet identity hash (see
// hash.go for which bits each synopsis uses) and the absolute timestamp in
// ns. Counters are wrap-around uint64 sums: sums overflow, differences of
// sums stay exact while the true delay sum fits in 63 bits.
//
// # Lifetimes
//
// A synopsis is built once with its validated configuration (NewLDA, …),
// filled during one interval, read (encoded or estimated), then Reset and
// reused: the dataplane keeps two copies per worker and flips between them
// (double buffering), so nothing is allocated per interval on
// the hot path. Sender and receiver must use equal configurations;
// mismatches are errors wrapping ErrConfigMismatch.
//
// # Concurrency
//
// No synopsis is safe for concurrent use. Each worker owns its copy; the
// control side reads a copy only after the worker has published that it
// finished with it, and sums shards with Merge. Add takes no lock,
// allocates nothing, uses no floating point and touches one bucket per
// packet (its digest included).
//
// # Hazards
//
//   - The estimators assume that both ends cut intervals at the same
//     packet (the End control frame). A packet counted in different
//     intervals at the two ends looks like a loss in one and an extra
//     packet in the next: MatchLDACrossing and ApplyRDACrossing find such
//     packets across two consecutive intervals.
//   - An IP datagram's later fragments have no ports: they count in the
//     LDS flow of their hosts with ports 0, not in their datagram's flow.
//     ApplyFragments makes the flow lines of hosts whose later fragments
//     were lost invalid for loss (docs/lds.md, "IP fragments").
//   - Packets the receiver recorded and the sender did not (duplicated,
//     injected or remarked inside the segment) hide losses from
//     Sent − Received. The per-bucket digests (LDAConfig.Digest, on by
//     default; LDS and RDA always) prove them wherever a bucket does not
//     also lose as many, and the estimate is then invalid
//     (Estimate.Extra, ExtraBuckets).
//   - Clocks must be synchronised; an offset e adds e to every delay.
//   - The compact encoding (AppendCompact) is exact only while every delay
//     lies within the CompactBounds it was made with; buckets outside them
//     are detected with high probability, counted, and make the estimate
//     invalid rather than wrong.
//   - Decoders accept arbitrary bytes without panicking; a decoded synopsis
//     may still hold nonsense counters, which the estimators report as
//     invalid or implausible, never as a crash.
package synopsis
