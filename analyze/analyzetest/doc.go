// Package analyzetest writes pairs of captures of the same traffic as seen at
// the two ends of a routed segment — MACs, TTL, IPv4 checksum and DSCP
// rewritten, a VLAN tag pushed, Weibull delays per flow, uniform loss,
// optionally Pareto flow sizes — together with the exact truth, for tests of
// `ldafwd analyze` and of the synopses behind it. It is a test double in the
// style of httptest: nothing in the appliance imports it.
package analyzetest
