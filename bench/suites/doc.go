// Package suites holds the benchmark suites of `ldafwd bench`, each a
// function that measures and emits "type":"bench" records against a
// baseline measured in the same run: perpacket (the per-packet stages of
// package bench), forward-ring (one lane between ring ports, measurement
// off, LDA, all synopses), forward-dpdk-null and forward-afxdp (our lanes
// on real DPDK and AF_XDP ports against dpdk-testpmd on the same devices
// and core), forward-dpdk-pcap (`ldafwd run` itself on generated IMIX
// captures replayed by net_pcap, against dpdk-testpmd on the same vdevs
// and core), forward-afxdp-run (`ldafwd run` itself on AF_XDP ports
// against dpdk-testpmd on net_af_xdp over the same veth pairs),
// scale-dpdk-null (1 queue on 1 core against 2 on 2) and scale-dpdk-pcap
// (the same with `ldafwd run` on net_pcap captures, one per rx queue).
//
// The real-port suites need root, two CPUs and, for DPDK, a build with
// -tags dpdk; one that cannot run returns an error saying why. DPDK's EAL
// starts once per process, so scale-dpdk-null re-runs the ldafwd binary
// (os.Executable) as a child with LDAFWD_BENCH_SCALE_CHILD set, and
// forward-dpdk-pcap, forward-afxdp-run and scale-dpdk-pcap run `ldafwd
// run` as children. A suite with a single forwarding core keeps its own
// threads off it (dataplane.ReserveCore) and starts its children with the
// whole CPU set (dataplane.Unreserved).
package suites
