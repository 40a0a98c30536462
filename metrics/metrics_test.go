package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dpdk"
	"github.com/ldafwd/ldafwd/report"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestObserve(t *testing.T) {
	m := New("lab", map[string]string{"segment_port": "b"})
	r := &report.Interval{Interval: 7, Direction: "a>b", MEC: "all", Synopsis: "lda", Sent: 1000, Received: 990, Lost: 10,
		MeanNs: 52_000, StddevNs: 3_000, MeanCINs: 400, Samples: 880, Valid: true, ControlBytes: 3000, ControlFrames: 3}
	m.Observe(r)
	l := prometheus.Labels{"direction": "a>b", "mec": "all", "synopsis": "lda"}
	for _, c := range []struct {
		name string
		v    prometheus.Collector
		want float64
	}{
		{"valid", m.valid.With(l), 1}, {"number", m.last.With(l), 7},
		{"lost", m.lostTotal.With(l), 10}, {"sent", m.sentTotal.With(l), 1000}, {"received", m.recvTotal.With(l), 990},
		{"delay packets", m.delayPkts.With(l), 990}, {"delay sum", m.delaySum.With(l), 990 * 52e-6},
		{"delay negative", m.delayNegSum.With(l), 0}, {"delay squared", m.delaySq.With(l), 990 * (3e-6*3e-6 + 52e-6*52e-6)},
	} {
		if got := testutil.ToFloat64(c.v); math.Abs(got-c.want) > 1e-15*math.Max(1, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if got := testutil.ToFloat64(m.ctlBytes.WithLabelValues("a>b")); got != 3000 {
		t.Errorf("control bytes %v, want 3000", got)
	}
	// A second MEC line of the same interval must not count control bytes twice.
	r2 := *r
	r2.MEC = "voice"
	m.Observe(&r2)
	if got := testutil.ToFloat64(m.ctlBytesTotal.WithLabelValues("a>b")); got != 3000 {
		t.Errorf("control bytes total %v, want 3000 (once per interval)", got)
	}
	// An invalid interval: valid 0, counted by reason; the totals over
	// valid intervals, the delay moments included, do not move.
	bad := &report.Interval{Interval: 8, Direction: "a>b", MEC: "all", Synopsis: "lda", Received: 5, MeanNs: 1e9}
	bad.Invalidate(report.Decode, "sender synopsis does not decode: control: bad encoding (x)")
	m.Observe(bad)
	if got := testutil.ToFloat64(m.valid.With(l)); got != 0 {
		t.Errorf("valid %v after an invalid interval", got)
	}
	if got := testutil.ToFloat64(m.lostTotal.With(l)); got != 10 {
		t.Errorf("lost total %v, want 10", got)
	}
	if got := testutil.ToFloat64(m.delayPkts.With(l)); got != 990 {
		t.Errorf("delay packets %v after an invalid interval, want 990", got)
	}
	if got := testutil.ToFloat64(m.delaySum.With(l)); math.Abs(got-990*52e-6) > 1e-15 {
		t.Errorf("delay sum %v after an invalid interval", got)
	}
	if got := testutil.ToFloat64(m.intervals.WithLabelValues("a>b", "all", "lda", "false", "decode")); got != 1 {
		t.Errorf("invalid interval counter %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.intervals.WithLabelValues("a>b", "all", "lda", "true", "ok")); got != 1 {
		t.Errorf("valid interval counter %v, want 1", got)
	}
	// Intervals that carried traffic, by validity: the valid one and
	// the invalid one with 5 received; an idle line is not one of them.
	idle := &report.Interval{Interval: 9, Direction: "a>b", MEC: "all", Synopsis: "lda"}
	idle.Invalidate(report.NoPackets, "no packets in the interval")
	m.Observe(idle)
	for _, c := range []struct {
		valid, reason string
		want          float64
	}{{"true", "ok", 1}, {"false", "decode", 1}, {"false", "no_packets", 0}} {
		if got := testutil.ToFloat64(m.traffic.WithLabelValues("a>b", "all", "lda", c.valid, c.reason)); got != c.want {
			t.Errorf("traffic intervals valid=%s reason=%s: %v, want %v", c.valid, c.reason, got, c.want)
		}
	}
	if got := testutil.ToFloat64(m.intervals.WithLabelValues("a>b", "all", "lda", "false", "no_packets")); got != 1 {
		t.Errorf("idle interval counter %v, want 1", got)
	}
	// Per-flow lines are not exported.
	before := testutil.CollectAndCount(m.delayPkts)
	m.Observe(&report.Interval{Direction: "a>b", MEC: "all", Synopsis: "lds", Flow: "6 1.2.3.4:1>5.6.7.8:2", Valid: true, Received: 3, MeanNs: 5})
	if after := testutil.CollectAndCount(m.delayPkts); after != before {
		t.Errorf("per-flow line added series: %d → %d", before, after)
	}
	// Every series carries the segment.
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			seg := ""
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == "segment" {
					seg = lp.GetValue()
				}
			}
			if seg != "lab" {
				t.Errorf("%s: segment %q, want \"lab\"", mf.GetName(), seg)
			}
		}
	}
}

// TestDelayMoments: the counters of several intervals, some of them
// invalid, one with a negative mean, give the mean and the standard
// deviation of all the valid intervals' packets' delays together, as
// docs/metrics.md computes them in PromQL.
func TestDelayMoments(t *testing.T) {
	m := New("", nil)
	// Each interval's packets: their delays, in ns.
	ivs := []struct {
		delays []float64
		valid  bool
	}{
		{[]float64{10e3, 12e3, 14e3, 9e3}, true},
		{[]float64{50e3, 70e3}, true},
		{[]float64{1e9, 1e9}, false}, // invalid: left out
		{[]float64{-3e3, -1e3, 1e3}, true},
		{[]float64{20e3, 20e3, 20e3, 21e3, 25e3, 30e3}, true},
	}
	var all []float64
	for i, iv := range ivs {
		var s, s2 float64
		for _, d := range iv.delays {
			s += d
		}
		mean := s / float64(len(iv.delays))
		for _, d := range iv.delays {
			s2 += (d - mean) * (d - mean)
		}
		m.Observe(&report.Interval{Interval: int64(i), Direction: "a>b", MEC: "all", Synopsis: "lda", Valid: iv.valid,
			Sent: uint64(len(iv.delays)), Received: uint64(len(iv.delays)), MeanNs: mean, StddevNs: math.Sqrt(s2 / float64(len(iv.delays)))})
		if iv.valid {
			all = append(all, iv.delays...)
		}
	}
	var s, s2 float64
	for _, d := range all {
		s += d / 1e9
	}
	wantMean := s / float64(len(all))
	for _, d := range all {
		s2 += (d/1e9 - wantMean) * (d/1e9 - wantMean)
	}
	wantSD := math.Sqrt(s2 / float64(len(all)))

	l := prometheus.Labels{"direction": "a>b", "mec": "all", "synopsis": "lda"}
	n := testutil.ToFloat64(m.delayPkts.With(l))
	sum := testutil.ToFloat64(m.delaySum.With(l)) - testutil.ToFloat64(m.delayNegSum.With(l))
	sq := testutil.ToFloat64(m.delaySq.With(l))
	if n != float64(len(all)) {
		t.Fatalf("packets %v, want %d", n, len(all))
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	if math.Abs(mean-wantMean) > 1e-12*math.Abs(wantMean) || math.Abs(sd-wantSD) > 1e-9*wantSD {
		t.Fatalf("mean %v sd %v from the counters, want %v %v", mean, sd, wantMean, wantSD)
	}
	if neg := testutil.ToFloat64(m.delayNegSum.With(l)); math.Abs(neg-3*1e-6) > 1e-18 {
		t.Fatalf("negative sum %v, want 3e-6 (3 packets, mean -1 µs)", neg)
	}
	// A valid line without a finite estimate adds nothing to any of them
	// (and does not panic: a counter refuses NaN and negative adds).
	m.Observe(&report.Interval{Direction: "a>b", MEC: "all", Synopsis: "lda", Valid: true, Received: 7, MeanNs: math.NaN()})
	m.Observe(&report.Interval{Direction: "a>b", MEC: "all", Synopsis: "lda", Valid: true, Received: 7, MeanNs: 1, StddevNs: math.Inf(1)})
	if got := testutil.ToFloat64(m.delayPkts.With(l)); got != n {
		t.Fatalf("packets %v after lines without an estimate, want %v", got, n)
	}
}

// TestReason: the reason label is the leading cause's code, whatever
// numbers its sentence holds, and the labels ldafwd_intervals_total takes
// over every cause (alone and under a cause that leads it) are exactly
// the code table and "ok".
func TestReason(t *testing.T) {
	timestamps := func(us float64) *report.Interval {
		r := &report.Interval{Direction: "a>b", MEC: "all", Synopsis: "lda"}
		r.Invalidate(report.StampsUncertain, fmt.Sprintf("timestamps uncertain by %.1f µs on average, over the 20.0 µs allowed", us))
		return r
	}
	if a, b := Reason(timestamps(41.6)), Reason(timestamps(3.2)); a != "stamps_uncertain" || b != a {
		t.Errorf("stamps lines: labels %q and %q, want stamps_uncertain", a, b)
	}
	lead := &report.Interval{}
	lead.Invalidate(report.NextMissing, "next interval missing")
	lead.Invalidate(report.Session, "sender restarted: first interval of its new session is partial")
	if got := Reason(lead); got != "session" {
		t.Errorf("session over next_missing: %q", got)
	}
	if got := Reason(&report.Interval{Valid: true, Reason: "whatever"}); got != "ok" {
		t.Errorf("valid: %q", got)
	}
	if got := Reason(&report.Interval{Reason: "a line built by hand"}); got != "unknown" {
		t.Errorf("invalid line without a cause: %q", got)
	}

	m := New("lab", nil)
	ok := &report.Interval{Direction: "a>b", MEC: "all", Synopsis: "lda"}
	ok.SetVerdict(report.Verdict{})
	m.Observe(ok)
	want := map[string]bool{"ok": true}
	for i, c := range report.Codes() {
		want[c.String()] = true
		for _, under := range []report.Code{0, report.ReceiverDrops, report.CaptureDamage} {
			r := &report.Interval{Interval: int64(i), Direction: "a>b", MEC: "all", Synopsis: "lda"}
			r.Invalidate(c, fmt.Sprintf("cause %d measured %d.%d µs", c, i, i*7))
			if under != 0 {
				r.Invalidate(under, "another cause")
			}
			m.Observe(r)
		}
	}
	got := map[string]bool{}
	ch := make(chan prometheus.Metric, 1024)
	m.intervals.Collect(ch)
	close(ch)
	for mt := range ch {
		var pb dto.Metric
		if err := mt.Write(&pb); err != nil {
			t.Fatal(err)
		}
		for _, lp := range pb.GetLabel() {
			if lp.GetName() == "reason" {
				got[lp.GetValue()] = true
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("reason labels %v, want the code table and ok: %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// fakePort is a dataplane.Port with fixed counters.
type fakePort struct{ st dataplane.Stats }

func (f *fakePort) Name() string                    { return "fake:x" }
func (f *fakePort) RxBurst([]*dataplane.Packet) int { return 0 }
func (f *fakePort) TxBurst([]*dataplane.Packet) int { return 0 }
func (f *fakePort) Alloc([]*dataplane.Packet) int   { return 0 }
func (f *fakePort) Free([]*dataplane.Packet)        {}
func (f *fakePort) Stats() dataplane.Stats          { return f.st }
func (f *fakePort) Close() error                    { return nil }

func TestScrapeSources(t *testing.T) {
	m := New("", nil)
	var sender, receiver dataplane.LaneStats
	sender.EndsSent.Store(5)
	sender.MaxTxStampGapNs.Store(2500)
	receiver.ControlStripped.Store(42)
	cc := control.Counters{Accepted: 11, BadTag: 2, Failures: 1}
	m.SetSources(Sources{
		Ports:   map[string]dataplane.Port{"a": &fakePort{dataplane.Stats{RxPackets: 100, TxDropped: 3}}, "b": &fakePort{dataplane.Stats{TxPackets: 97}}},
		Lanes:   map[string]*dataplane.LaneStats{"sender": &sender, "receiver": &receiver},
		Control: func() control.Counters { return cc },
		Exchange: func(fn func(string, uint64)) {
			fn("replies_expired", 7)
			fn("given_up", 2)
		},
	})
	want := `
# HELP ldafwd_port_rx_packets_total Frames received on the port.
# TYPE ldafwd_port_rx_packets_total counter
ldafwd_port_rx_packets_total{name="fake:x",port="a"} 100
ldafwd_port_rx_packets_total{name="fake:x",port="b"} 0
# HELP ldafwd_port_tx_dropped_total Frames the port refused or dropped on transmit.
# TYPE ldafwd_port_tx_dropped_total counter
ldafwd_port_tx_dropped_total{name="fake:x",port="a"} 3
ldafwd_port_tx_dropped_total{name="fake:x",port="b"} 0
# HELP ldafwd_lane_ends_sent_total End-of-interval markers sent.
# TYPE ldafwd_lane_ends_sent_total counter
ldafwd_lane_ends_sent_total{lane="receiver"} 0
ldafwd_lane_ends_sent_total{lane="sender"} 5
# HELP ldafwd_lane_max_tx_stamp_gap_seconds Sender: widest clock gap around a TxBurst so far (timestamp uncertainty), seconds.
# TYPE ldafwd_lane_max_tx_stamp_gap_seconds gauge
ldafwd_lane_max_tx_stamp_gap_seconds{lane="receiver"} 0
ldafwd_lane_max_tx_stamp_gap_seconds{lane="sender"} 2.5e-06
# HELP ldafwd_control_bad_tag_total Control receiver counter bad_tag (see control.Counters).
# TYPE ldafwd_control_bad_tag_total counter
ldafwd_control_bad_tag_total 2
# HELP ldafwd_exchange_replies_expired_total Request/reply exchange counter replies_expired (timestamps, cells, rows, parts and edge checks asked of the peer or answered for it).
# TYPE ldafwd_exchange_replies_expired_total counter
ldafwd_exchange_replies_expired_total 7
# HELP ldafwd_exchange_given_up_total Request/reply exchange counter given_up (timestamps, cells, rows, parts and edge checks asked of the peer or answered for it).
# TYPE ldafwd_exchange_given_up_total counter
ldafwd_exchange_given_up_total 2
# HELP ldafwd_up 1 while the appliance is running.
# TYPE ldafwd_up gauge
ldafwd_up 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"ldafwd_port_rx_packets_total", "ldafwd_port_tx_dropped_total", "ldafwd_lane_ends_sent_total",
		"ldafwd_lane_max_tx_stamp_gap_seconds", "ldafwd_control_bad_tag_total", "ldafwd_exchange_replies_expired_total",
		"ldafwd_exchange_given_up_total", "ldafwd_up"); err != nil {
		t.Fatal(err)
	}
	// Every control.Counters field is exported.
	n := 0
	cc.Each(func(name string, v uint64) {
		n++
		if c, err := testutil.GatherAndCount(m.Registry(), "ldafwd_control_"+name+"_total"); err != nil || c != 1 {
			t.Errorf("control counter %s: %d series, %v", name, c, err)
		}
	})
	if n < 20 {
		t.Fatalf("only %d control counters", n)
	}
	probs, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		if strings.HasPrefix(p.Metric, "ldafwd_") && !strings.HasPrefix(p.Metric, "ldafwd_process") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

func TestHTTP(t *testing.T) {
	m := New("east", map[string]string{"segment_port": "a"})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"starting"`) {
		t.Fatalf("before start: %d %s", code, body)
	}
	m.SetState(StateRunning)
	m.Observe(&report.Interval{Interval: 3, Direction: "b>a", MEC: "all", Synopsis: "lda", Valid: true, MeanNs: 1000})
	code, body := get("/healthz")
	if code != http.StatusOK {
		t.Fatalf("running: %d %s", code, body)
	}
	var h Health
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatal(err)
	}
	if h.Status != "running" || h.LastInterval != 3 || !h.LastValid || h.Reports != 1 || h.Info["segment_port"] != "a" {
		t.Fatalf("health %+v", h)
	}
	code, body = get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{`ldafwd_interval_number{direction="b>a",mec="all",segment="east",synopsis="lda"} 3`, `ldafwd_up{segment="east"} 1`, `ldafwd_info{segment="east",segment_port="a"} 1`,
		`ldafwd_build_info{dpdk="` + fmt.Sprint(dpdk.Built) + `",goversion="` + runtime.Version() + `",`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// A failing report sink degrades a running appliance.
	m.SetProblem("report sink failing (3 lines lost): no space left on device")
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"degraded"`) || !strings.Contains(body, "no space left") {
		t.Fatalf("degraded: %d %s", code, body)
	}
	m.SetProblem("")
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("problem cleared: %d", code)
	}
	m.SetState(StateStopped)
	if code, _ := get("/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("stopped: %d", code)
	}
}

func TestServe(t *testing.T) {
	m := New("", nil)
	if _, err := m.Serve("256.0.0.1:99999"); err == nil {
		t.Fatal("bad address accepted")
	}
	s, err := m.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + s.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentObserveScrape: the control goroutine observes while
// Prometheus scrapes and main changes state (run with -race).
func TestConcurrentObserveScrape(t *testing.T) {
	m := New("", nil)
	var st dataplane.LaneStats
	m.SetSources(Sources{Lanes: map[string]*dataplane.LaneStats{"sender": &st}, Control: func() control.Counters { return control.Counters{} }})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 500; i++ {
			st.RxFrames.Add(1)
			r := &report.Interval{Interval: int64(i), Direction: "a>b", MEC: "all", Synopsis: "lda", Lost: 1, Sent: 10, Received: 9, ControlBytes: 100}
			if i%3 == 0 {
				r.Invalidate(report.ControlLost, "control fragment lost")
			} else {
				r.SetVerdict(report.Verdict{})
			}
			m.Observe(r)
		}
	}()
	for i := 0; i < 20; i++ {
		m.SetState([]State{StateRunning, StateStopping}[i%2])
		resp, err := http.Get(srv.URL + []string{"/metrics", "/healthz"}[i%2])
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	<-done
	// 500 lines: 333 valid (i%3 != 0), each lost 1.
	if got := testutil.ToFloat64(m.lostTotal.WithLabelValues("a>b", "all", "lda")); got != 333 {
		t.Fatalf("lost total %v, want 333", got)
	}
	if got := testutil.ToFloat64(m.intervals.WithLabelValues("a>b", "all", "lda", "false", "control_lost")); got != 167 {
		t.Fatalf("invalid intervals %v, want 167", got)
	}
}

// TestMicrobursts: the microbursts a line lists are counted with their
// losses and durations, valid line or not; a line listing none adds
// nothing, and LDS flow lines are not exported.
func TestMicrobursts(t *testing.T) {
	m := New("lab", nil)
	mb := func(d float64, n int) report.Microburst {
		return report.Microburst{StartNs: 1e18, EndNs: 1e18 + uint64(d*1e9), Losses: n}
	}
	m.Observe(&report.Interval{Interval: 1, Direction: "a>b", MEC: "all", Synopsis: "rda", Valid: true, Lost: 40,
		Extra: map[string]any{"microbursts": []report.Microburst{mb(0, 5), mb(0.002, 30)}}})
	unverified := &report.Interval{Interval: 2, Direction: "a>b", MEC: "all", Synopsis: "rda", Lost: 9,
		Extra: map[string]any{"microbursts": []report.Microburst{mb(0.3, 9)}}}
	unverified.Invalidate(report.LossUnverified, "loss not verifiable")
	m.Observe(unverified)
	m.Observe(&report.Interval{Interval: 3, Direction: "a>b", MEC: "all", Synopsis: "rda", Valid: true,
		Extra: map[string]any{"microbursts": []report.Microburst{}}})
	m.Observe(&report.Interval{Interval: 3, Direction: "a>b", MEC: "all", Synopsis: "lds", Flow: "6 1.2.3.4:1>5.6.7.8:2",
		Extra: map[string]any{"microbursts": []report.Microburst{mb(0, 5)}}})
	l := prometheus.Labels{"direction": "a>b", "mec": "all", "synopsis": "rda"}
	if got := testutil.ToFloat64(m.mbTotal.With(l)); got != 3 {
		t.Errorf("microbursts %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.mbLost.With(l)); got != 44 {
		t.Errorf("microburst losses %v, want 44", got)
	}
	want := `
# HELP ldafwd_microburst_duration_seconds Send time from the first to the last loss of each microburst of ldafwd_microbursts_total, seconds.
# TYPE ldafwd_microburst_duration_seconds histogram
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="0"} 1
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="0.0001"} 1
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="0.0005"} 1
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="0.001"} 1
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="0.005"} 2
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="0.01"} 2
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="0.05"} 2
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="0.1"} 2
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="0.5"} 3
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="1"} 3
ldafwd_microburst_duration_seconds_bucket{direction="a>b",mec="all",segment="lab",synopsis="rda",le="+Inf"} 3
ldafwd_microburst_duration_seconds_sum{direction="a>b",mec="all",segment="lab",synopsis="rda"} 0.302
ldafwd_microburst_duration_seconds_count{direction="a>b",mec="all",segment="lab",synopsis="rda"} 3
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "ldafwd_microburst_duration_seconds"); err != nil {
		t.Error(err)
	}
}

// TestClockOffsetGauge: a line with a clock offset estimate in its extra
// sets the direction's offset and bound gauges (seconds); a line without
// one leaves them as they were.
func TestClockOffsetGauge(t *testing.T) {
	m := New("lab", nil)
	m.Observe(&report.Interval{Interval: 7, Direction: "a>b", MEC: "all", Synopsis: "lda", Valid: true, Received: 10, MeanNs: 800e3,
		Extra: map[string]any{"clock_offset_ns": 300e3, "clock_offset_ci_ns": 1.5e3, "clock_offset_interval": uint64(5), "clock_reverse_mean_ns": 200e3}})
	m.Observe(&report.Interval{Interval: 8, Direction: "a>b", MEC: "all", Synopsis: "lda", Valid: true, Received: 10, MeanNs: 800e3})
	if got := testutil.ToFloat64(m.clockOff.WithLabelValues("a>b")); got != 300e-6 {
		t.Errorf("offset %v s, want 300e-6", got)
	}
	if got := testutil.ToFloat64(m.clockBound.WithLabelValues("a>b")); got != 1.5e-6 {
		t.Errorf("bound %v s, want 1.5e-6", got)
	}
}

// TestSampledDelay: a sample line whose delay is valid adds each paired
// delay to its class's histogram (classic buckets and native); one whose
// delay is not adds nothing, and neither counts its sampled packets as
// the class's traffic.
func TestSampledDelay(t *testing.T) {
	m := New("lab", nil)
	ok := &report.Interval{Interval: 1, Direction: "a>b", MEC: "all", Synopsis: "sample", Sent: 4, Received: 3, Lost: 1,
		SampleDelaysNs: []int64{1500, 30_000, 30_000}}
	ok.Invalidate(report.Crossing, "the loss is in doubt, not the delay")
	m.Observe(ok)
	bad := &report.Interval{Interval: 2, Direction: "a>b", MEC: "all", Synopsis: "sample", SampleDelaysNs: []int64{7}}
	bad.Invalidate(report.Session, "spans two intervals")
	m.Observe(bad)
	h := m.sampled.With(prometheus.Labels{"direction": "a>b", "mec": "all"}).(prometheus.Histogram)
	var d dto.Metric
	if err := h.Write(&d); err != nil {
		t.Fatal(err)
	}
	hg := d.GetHistogram()
	if hg.GetSampleCount() != 3 || math.Abs(hg.GetSampleSum()-61.5e-6) > 1e-12 {
		t.Errorf("histogram count %d sum %g, want 3 and 61.5e-6", hg.GetSampleCount(), hg.GetSampleSum())
	}
	if hg.GetSchema() == 0 && len(hg.GetPositiveSpan()) == 0 {
		t.Error("no native histogram")
	}
	for _, b := range hg.GetBucket() {
		want := map[float64]uint64{1e-6: 0, 2e-6: 1, 5e-5: 3}[b.GetUpperBound()]
		if v := b.GetUpperBound(); (v == 1e-6 || v == 2e-6 || v == 5e-5) && b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%g: %d, want %d", v, b.GetCumulativeCount(), want)
		}
	}
	l := prometheus.Labels{"direction": "a>b", "mec": "all", "synopsis": "sample"}
	if got := testutil.ToFloat64(m.lostTotal.With(l)); got != 0 {
		t.Errorf("a sample line added %v lost packets", got)
	}
}
