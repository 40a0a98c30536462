package metrics

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"testing"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/internal/tooltest"
	"github.com/ldafwd/ldafwd/report"
)

func promtoolPath(t testing.TB) string { return tooltest.Require(t, "promtool", "prometheus") }

// TestPromtoolCheckMetrics scrapes /metrics over HTTP, with every family
// present (valid and invalid intervals, a negative mean, ports, lanes,
// control counters), and has promtool check the names, types, units and
// help texts.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := promtoolPath(t)
	m := New("lab-1", map[string]string{"segment_port": "b", "port_a": "ring:x.a", "port_b": "ring:x.b"})
	var sender, receiver dataplane.LaneStats
	m.SetSources(Sources{
		Ports:   map[string]dataplane.Port{"a": &fakePort{}, "b": &fakePort{}},
		Lanes:   map[string]*dataplane.LaneStats{"sender": &sender, "receiver": &receiver},
		Control: func() control.Counters { return control.Counters{Accepted: 3} },
		Exchange: func(fn func(string, uint64)) {
			fn("requests_sent", 4)
			fn("replies_expired", 1)
		},
	})
	m.SetState(StateRunning)
	m.Observe(&report.Interval{Interval: 1, Direction: "a>b", MEC: "all", Synopsis: "lda", Valid: true, Sent: 10, Received: 9, Lost: 1,
		MeanNs: 5e4, StddevNs: 1e3, ControlBytes: 900, ControlFrames: 2,
		Extra: map[string]any{"clock_offset_ns": 3e5, "clock_offset_ci_ns": 2e3, "clock_offset_interval": uint64(0), "clock_reverse_mean_ns": -2.5e5}})
	m.Observe(&report.Interval{Interval: 2, Direction: "a>b", MEC: "all", Synopsis: "lda", Valid: true, Sent: 10, Received: 10, MeanNs: -2e3, StddevNs: 1e3})
	lost := &report.Interval{Interval: 3, Direction: "a>b", MEC: "all", Synopsis: "rda"}
	lost.Invalidate(report.ControlLost, "end marker lost in the segment")
	m.Observe(lost)
	m.Observe(&report.Interval{Interval: 4, Direction: "a>b", MEC: "all", Synopsis: "rda", Valid: true, Sent: 100, Received: 90, Lost: 10,
		Extra: map[string]any{"microbursts": []report.Microburst{{StartNs: 1e9, EndNs: 1e9 + 3e6, Losses: 10}}}})
	m.Observe(&report.Interval{Interval: 4, Direction: "a>b", MEC: "all", Synopsis: "sample", Valid: true, Sent: 3, Received: 3,
		SampleDelaysNs: []int64{20e3, 25e3, 90e3}})
	s, err := m.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Get("http://" + s.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %v %v", resp.Status, err)
	}
	for _, want := range []string{"ldafwd_delay_seconds_total{", "ldafwd_delay_negative_seconds_total{", "ldafwd_delay_seconds_squared_total{",
		"ldafwd_delay_packets_total{", "ldafwd_traffic_intervals_total{", "ldafwd_microbursts_total{", "ldafwd_microburst_duration_seconds_bucket{", "ldafwd_sampled_delay_seconds_bucket{", "ldafwd_port_rx_packets_total{", "ldafwd_clock_offset_seconds{", "ldafwd_clock_offset_bound_seconds{", "ldafwd_control_accepted_total{", "go_goroutines{segment=\"lab-1\"}"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	t.Logf("promtool check metrics: %d bytes scraped, clean", len(body))
}
