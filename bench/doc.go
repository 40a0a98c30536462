// Package bench holds the measurements behind `go test -bench` and
// `ldafwd bench`, so both report the same thing: per-packet stages
// (hashing the invariant bytes alone, the packet identity, identity +
// classification + each synopsis), one lane forwarding between ring ports
// with measurement off, with the LDA and with every synopsis (ForwardRing),
// and dpdk-testpmd as an external baseline on the same vdevs (RunTestpmd).
//
// Speed is never asserted in a test: numbers are reported as ratios against
// a baseline measured in the same run, with the stages interleaved round by
// round and the median kept, because absolute times on a shared machine say
// little. Tests here check only that the harness measures and that the hot
// paths allocate nothing.
package bench
