// Package nettest builds throw-away network namespaces and veth pairs for
// tests that need real kernel interfaces (AF_XDP, DPDK's net_af_packet and
// net_af_xdp, end-to-end runs), and raw AF_PACKET sockets to send and
// receive frames inside them.
//
// Lifetimes. NewVeth registers a cleanup with the test that deletes the
// namespace (which deletes the veth pair with it). Names carry the test
// process's pid so parallel test binaries never collide, and a leftover
// from a crashed run is removed when the same name comes round again.
//
// Needs root (CAP_NET_ADMIN) and the ip command; Require skips the test with
// a message otherwise.
//
// The namespace switch, raw sockets and test frames are dataplane/netns's
// (which imports no testing code); this package re-exports them under the
// names the tests use. Hazards: see dataplane/netns (InNetns).
package nettest
