// Command gencaptures writes a pair of captures of the same generated
// traffic as seen at the two ends of a routed segment (package
// analyzetest: Weibull delays, uniform loss, routed rewrites) and prints
// the exact truth. It makes inputs of any size for `ldafwd analyze`, to try
// it or to measure what it costs (docs/analyze.md, "Cost"):
//
//	go run ./analyze/analyzetest/gencaptures --packets 1000000 --sender s.pcap --receiver r.pcap
//	/usr/bin/time -v bin/ldafwd analyze --sender s.pcap --receiver r.pcap >/dev/null
package main
