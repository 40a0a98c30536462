// Package porttest is a test double kit for dataplane ports, in the manner
// of net/http/httptest: conformance checks that any dataplane.Port
// implementation (ring, pcap, AF_XDP, DPDK) runs in its own tests, on
// frames from package traffic.
//
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
