// Package traffic writes test traffic: valid Ethernet frames — IPv4/IPv6
// × UDP/TCP, correct IPv4 header and L4 checksums, a distinct 64-bit ID
// per frame at IDOffset (and at the L4 payload start, so packet
// identities differ) — into a caller's buffer without allocating (Gen);
// FrameID reads the ID back. The demo's generator and the tests of every
// port use it. It imports nothing from package testing, so the shipped
// binary can use it.
package traffic
