// Package porttest is a test double kit for dataplane ports, in the manner
// of net/http/httptest: a frame generator and conformance checks that any
// dataplane.Port implementation (ring, pcap, AF_XDP, DPDK) runs in its own
// tests.
//
//   - Gen writes valid Ethernet frames — IPv4/IPv6 × UDP/TCP, correct IPv4
//     header and L4 checksums, a distinct 64-bit ID per frame at IDOffset
//     (and at the L4 payload start, so packet identities differ) — into a
//     caller's buffer without allocating. FrameID reads the ID back.
//   - CheckPort(t, p) runs the single-port contract (empty bursts, Alloc
//     and Free, TxBurst prefix semantics and Stats, RxBurst bounds,
//     behaviour after Close) and closes p.
//   - CheckLink(t, tx, rx, opts) sends generated frames on tx and checks
//     they all arrive on rx once, in order, intact, counted, with
//     non-decreasing timestamps, and that a steady-state burst allocates
//     nothing. For perfect links only (no loss, no reordering).
//
// Nothing here is for production paths: the checks allocate and use
// testing.T.
package porttest
