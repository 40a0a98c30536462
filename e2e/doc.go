// Package e2e holds end-to-end tests that run the ldafwd binary as real
// processes (issue 6 item 6): two `ldafwd run` appliances with AF_XDP
// ports on veth pairs, traffic from a generator in its own network
// namespace, a lossy segment between them, and a sink in another
// namespace; every frame sent is accounted for against the receiver's
// reports.
//
// The tests need root (network namespaces, veth, XDP) and skip with a
// message otherwise; CI runs them as root. They build the binary
// themselves (or use $LDAFWD_BIN), touch only the namespaces and
// interfaces they create, and bound every wait in time.
//
// The package has no non-test code beyond this comment.
package e2e
