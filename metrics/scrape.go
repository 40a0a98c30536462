package metrics

import (
	"sort"
	"sync/atomic"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/prometheus/client_golang/prometheus"
)

// scrape reads the port, lane and control counters when Prometheus asks:
// they are atomics the dataplane keeps anyway, so exporting them costs the
// packet path nothing.
type scrape struct{ m *Metrics }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
}

var (
	portDescs = []struct {
		d *prometheus.Desc
		v func(*dataplane.Stats) uint64
	}{
		{desc("port_rx_packets_total", "Frames received on the port.", "port", "name"), func(s *dataplane.Stats) uint64 { return s.RxPackets }},
		{desc("port_tx_packets_total", "Frames transmitted on the port.", "port", "name"), func(s *dataplane.Stats) uint64 { return s.TxPackets }},
		{desc("port_rx_bytes_total", "Bytes received on the port.", "port", "name"), func(s *dataplane.Stats) uint64 { return s.RxBytes }},
		{desc("port_tx_bytes_total", "Bytes transmitted on the port.", "port", "name"), func(s *dataplane.Stats) uint64 { return s.TxBytes }},
		{desc("port_rx_dropped_total", "Frames the port or NIC dropped on receive.", "port", "name"), func(s *dataplane.Stats) uint64 { return s.RxDropped }},
		{desc("port_tx_dropped_total", "Frames the port refused or dropped on transmit.", "port", "name"), func(s *dataplane.Stats) uint64 { return s.TxDropped }},
		{desc("port_rx_errors_total", "Receive errors reported by the port.", "port", "name"), func(s *dataplane.Stats) uint64 { return s.RxErrors }},
	}
	laneDescs = []struct {
		d *prometheus.Desc
		v func(*dataplane.LaneStats) *atomic.Uint64
	}{
		{desc("lane_rx_frames_total", "Frames the lane received.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.RxFrames }},
		{desc("lane_tx_frames_total", "Frames the lane transmitted.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.TxFrames }},
		{desc("lane_rx_bytes_total", "Bytes the lane received.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.RxBytes }},
		{desc("lane_tx_dropped_total", "Users' frames the tx port refused past the stall limit (freed).", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.TxDropped }},
		{desc("lane_recorded_total", "Frames recorded in the synopses.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.Recorded }},
		{desc("lane_malformed_total", "Frames with truncated or malformed headers (forwarded).", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.Malformed }},
		{desc("lane_control_stripped_total", "Receiver: control frames taken off the wire.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.ControlStripped }},
		{desc("lane_control_queue_full_total", "Receiver: stripped control frames the control side had no room for.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.ControlQueueFull }},
		{desc("lane_excluded_total", "Link-local frames (STP, LLDP, ARP, NDP…) forwarded but measured in no class.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.Excluded }},
		{desc("lane_control_passed_total", "Users' frames of the control EtherType (not authentic control frames) forwarded unrecorded.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.ControlPassed }},
		{desc("lane_control_blocked_total", "Sender: authentic control frames arriving from upstream (replays), dropped.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.ControlBlocked }},
		{desc("lane_control_dropped_total", "Sender: own control frames the segment port refused too long, dropped (their interval is reported invalid).", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.ControlDropped }},
		{desc("lane_ends_sent_total", "End-of-interval markers sent.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.EndsSent }},
		{desc("lane_ends_failed_total", "End-of-interval markers the tx port refused.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.EndsFailed }},
		{desc("lane_ends_seen_total", "Receiver: authentic End markers that flipped the synopses.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.EndsSeen }},
		{desc("lane_ends_ignored_total", "Receiver: End markers rejected (bad tag, old interval, other direction).", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.EndsIgnored }},
		{desc("lane_control_injected_total", "Sender: control frames sent for the control side.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.Injected }},
		{desc("lane_control_inject_failed_total", "Sender: control frames that could not be sent.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.InjectFailed }},
		{desc("lane_flips_total", "Synopsis double-buffer flips.", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.Flips }},
		{desc("lane_fast_bursts_total", "Bursts the DPDK rx port received, measured and transmitted in one call (the C fast path, docs/dpdk.md).", "lane"), func(s *dataplane.LaneStats) *atomic.Uint64 { return &s.FastBursts }},
	}
	laneStampGap = desc("lane_max_tx_stamp_gap_seconds", "Sender: widest clock gap around a TxBurst so far (timestamp uncertainty), seconds.", "lane")
	upDesc       = desc("up", "1 while the appliance is running.")
	captureDesc  = desc("capture_frames_total", "Frames a capture tap (run --capture-a/--capture-b) saw, by result: captured (written to the file), ring_full (the writer fell behind: not captured, forwarded as ever), size_limit (the file reached --capture-max-bytes).", "port", "result")
)

// controlDesc names each control.Counters field ldafwd_control_<name>_total.
var controlDescs = func() map[string]*prometheus.Desc {
	ds := map[string]*prometheus.Desc{}
	control.Counters{}.Each(func(name string, _ uint64) {
		ds[name] = desc("control_"+name+"_total", "Control receiver counter "+name+" (see control.Counters).")
	})
	return ds
}()

func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range portDescs {
		ch <- d.d
	}
	for _, d := range laneDescs {
		ch <- d.d
	}
	ch <- laneStampGap
	ch <- upDesc
	ch <- captureDesc
	for _, d := range controlDescs {
		ch <- d
	}
}

func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	m := s.m
	m.mu.Lock()
	src := m.src
	m.mu.Unlock()
	up := 0.0
	if m.state.Load().(State) == StateRunning {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up)
	for _, name := range sortedKeys(src.Ports) {
		p := src.Ports[name]
		st := p.Stats()
		for _, d := range portDescs {
			ch <- prometheus.MustNewConstMetric(d.d, prometheus.CounterValue, float64(d.v(&st)), name, p.Name())
		}
	}
	for _, name := range sortedKeys(src.Captures) {
		st := src.Captures[name].Stats()
		ch <- prometheus.MustNewConstMetric(captureDesc, prometheus.CounterValue, float64(st.Captured), name, "captured")
		ch <- prometheus.MustNewConstMetric(captureDesc, prometheus.CounterValue, float64(st.Skipped), name, "ring_full")
		ch <- prometheus.MustNewConstMetric(captureDesc, prometheus.CounterValue, float64(st.Limited), name, "size_limit")
	}
	for _, name := range sortedKeys(src.Lanes) {
		ls := src.Lanes[name]
		for _, d := range laneDescs {
			ch <- prometheus.MustNewConstMetric(d.d, prometheus.CounterValue, float64(d.v(ls).Load()), name)
		}
		ch <- prometheus.MustNewConstMetric(laneStampGap, prometheus.GaugeValue, float64(ls.MaxTxStampGapNs.Load())/1e9, name)
	}
	if src.Control != nil {
		src.Control().Each(func(name string, v uint64) {
			if d, ok := controlDescs[name]; ok {
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
			}
		})
	}
}

// exchangeScrape exports Sources.Exchange as ldafwd_exchange_<name>_total.
// Its names come from the source (the appliance's counters), so it
// describes nothing up front: an unchecked collector.
type exchangeScrape struct{ m *Metrics }

func (exchangeScrape) Describe(chan<- *prometheus.Desc) {}

func (s exchangeScrape) Collect(ch chan<- prometheus.Metric) {
	s.m.mu.Lock()
	src := s.m.src
	s.m.mu.Unlock()
	if src.Exchange == nil {
		return
	}
	src.Exchange(func(name string, v uint64) {
		d := desc("exchange_"+name+"_total", "Request/reply exchange counter "+name+" (timestamps, cells, rows, parts and edge checks asked of the peer or answered for it).")
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	})
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
