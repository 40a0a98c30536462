// Package e2e holds end-to-end tests that run the ldafwd binary as real
// processes: two `ldafwd run` appliances with AF_XDP
// ports on veth pairs, traffic from a generator in its own network
// namespace, a lossy segment between them, and a sink in another
// namespace; every frame sent is accounted for against the receiver's
// reports.
//
// The lab tests need root (network namespaces, veth, XDP) and skip with a
// message otherwise; CI runs them as root. They build the binary once per
// run (with DPDK when libdpdk is installed; or use $LDAFWD_BIN), touch
// only the namespaces and interfaces they create (nettest.NewVeth), send
// only into them, and bound every wait in time. The appliances' JSON
// lines and logs are read from their stdout and stderr as they run.
//
// The segment between the appliances is a userspace relay in the test
// (this kernel has no netem): it drops every 97th IPv4 frame a→b, so the
// loss is exact and known, and passes control frames untouched, so every
// interval with traffic must be valid. The relay also keeps the control
// frames it passes; tshark with the Wireshark dissector
// (scripts/wireshark/ldafwd.lua) must decode every one of them.
//
// TestLabBridge and TestCongestionLab put a Linux bridge with a tbf qdisc
// in the segment (bridgeLab), replay with tcpreplay and take the truth
// from dumpcap on the bridge's two ports, frames matched by content and
// cut into intervals at ldafwd#1's End markers (segTruth).
// TestCongestionLab congests the tbf (40 Mbit/s offered to 20 Mbit/s) and
// logs how the appliances measured it; it requires every interval's loss
// measured and exact, the lost counter equal to the captures' loss and
// congested delays within their bounds in 80 % of the intervals; /healthz
// while loss goes unmeasured is enforced only with
// LDAFWD_CONGESTION_STRICT=1 (it depends on when the test polls).
//
// TestControlPriorityLab puts an htb on the bridge's port toward ldafwd#2
// instead: a class shaped by that tbf by default and an unshaped one for
// frames of 802.1p PCP ≥ 5 (a classic-BPF tc filter), and runs the same
// congesting replay with and without --control-priority 6: synopsis
// frames lost and delayed in the queue without it, none with it, End
// markers untagged and in order with the data both times.
//
// TestPrometheusDelayCounters needs no root: it runs two `ldafwd demo`
// processes with --metrics-addr on 127.0.0.1 and Debian's prometheus
// (scripts/deps.sh installs it; without it the test skips, except under
// CI) scraping them every second into a temporary directory, and checks
// through Prometheus's HTTP API that the delay counters it stored, and
// the means and standard deviations PromQL computes from them over a
// window and across both appliances, are those of the demos' JSON lines.
//
// TestPrometheusFleet runs three demos (segments east, mid and west) under
// the same Prometheus with the rules `ldafwd rules` writes for
// the path east → mid → west, and checks that the recorded path mean delay
// is the sum of the segments' means, both as recorded and as the demos'
// JSON lines of the same window give them; that an exited appliance is
// reported down; and that every query of the Grafana dashboard
// (scripts/grafana) returns data from that server.
//
// The package has no non-test code beyond this comment.
package e2e
