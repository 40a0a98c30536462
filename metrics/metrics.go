package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	dto "github.com/prometheus/client_model/go"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ldafwd/ldafwd/buildinfo"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric name.
const Namespace = "ldafwd"

// Sources are what the scrape-time collector reads. Any field may be nil
// or empty.
type Sources struct {
	// Ports by report name ("a", "b").
	Ports map[string]dataplane.Port
	// Lanes by role ("sender", "receiver").
	Lanes map[string]*dataplane.LaneStats
	// Control returns the receiver's control-frame counters.
	Control func() control.Counters
	// Exchange calls fn with each request/reply exchange counter's name
	// and value (appliance.RepairCounters.Each).
	Exchange func(fn func(name string, v uint64))
	// Captures are the capture taps by the report name of their port
	// ("a", "b").
	Captures map[string]*dataplane.Tap
}

// State is the appliance's life stage as /healthz reports it.
type State string

// States; only StateRunning is healthy.
const (
	StateStarting State = "starting"
	StateRunning  State = "running"
	StateStopping State = "stopping"
	StateStopped  State = "stopped"
)

// Metrics holds the Prometheus registry of one appliance.
type Metrics struct {
	reg *prometheus.Registry

	valid, last                                    *prometheus.GaugeVec
	ctlBytes, ctlFrames                            *prometheus.GaugeVec
	clockOff, clockBound                           *prometheus.GaugeVec // the clock offset estimate (observeClock)
	intervals, traffic                             *prometheus.CounterVec
	lostTotal, sentTotal, recvTotal, ctlBytesTotal *prometheus.CounterVec
	// The delay moments of valid intervals, packet-weighted (see observeDelay).
	delaySum, delayNegSum, delaySq, delayPkts *prometheus.CounterVec
	// Microbursts the lines list (observeMicrobursts).
	mbTotal, mbLost *prometheus.CounterVec
	mbDur           *prometheus.HistogramVec
	// The sampled one-way delays of valid sample lines (observeSample).
	sampled *prometheus.HistogramVec

	// obs makes a report line's counters change together: Observe holds
	// it while it adds a line, and the /metrics handler while it gathers,
	// so no scrape sees a line in one counter (packets) and not yet in
	// another (delay), which skews any window's mean computed from them.
	obs     sync.Mutex
	mu      sync.Mutex
	src     Sources
	state   atomic.Value // State
	started time.Time
	info    map[string]string
	// lastIv is the newest interval observed and whether it was valid,
	// for /healthz.
	lastIv    atomic.Int64
	lastValid atomic.Bool
	observed  atomic.Uint64
	problem   atomic.Value // string: why a running appliance is degraded ("" healthy)
	checks    atomic.Value // map[string]string: the peer watchdog's findings by check (SetChecks)
}

// New builds the registry. segment names the measured segment: every
// metric, the Go and process ones included, carries it as the label
// segment ("" leaves the label off). info are constant labels of
// ldafwd_info (segment_port, ports…; not "segment"); they are also shown
// by /healthz.
func New(segment string, info map[string]string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), info: info, started: time.Now()}
	m.state.Store(StateStarting)
	m.lastIv.Store(-1)
	var r prometheus.Registerer = m.reg
	if segment != "" {
		r = prometheus.WrapRegistererWith(prometheus.Labels{"segment": segment}, m.reg)
	}
	ivLabels := []string{"direction", "mec", "synopsis"}
	g := func(name, help string, labels ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		r.MustRegister(v)
		return v
	}
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		r.MustRegister(v)
		return v
	}
	m.valid = g("interval_valid", "1 when the last reported interval is valid, 0 when not (see ldafwd_intervals_total's reason).", ivLabels...)
	m.last = g("interval_number", "Number of the last reported interval (interval start / interval length since the Unix epoch).", ivLabels...)
	m.ctlBytes = g("control_bytes_per_interval", "Control bytes (Hello, End markers, fragments) that carried the last interval's synopses in-band.", "direction")
	m.ctlFrames = g("control_frames_per_interval", "Control frames that carried the last interval's synopses in-band.", "direction")
	m.clockOff = g("clock_offset_seconds", "Offset of this end's clock over the peer's (positive: this end's is ahead), estimated from the two directions' mean one-way delays assuming symmetric paths, as of the last interval line with an estimate; direction is the one this end receives.", "direction")
	m.clockBound = g("clock_offset_bound_seconds", "Bound of ldafwd_clock_offset_seconds from the two means' confidence intervals (half their sum); it does not cover path asymmetry.", "direction")
	m.intervals = c("intervals_total", "Reported intervals by validity and reason (a short slug of the report's reason).", "direction", "mec", "synopsis", "valid", "reason")
	m.traffic = c("traffic_intervals_total", "Reported intervals that carried traffic (sent or received > 0), by validity and reason as ldafwd_intervals_total: valid=\"false\" ones carried packets whose loss or delay went unmeasured.", "direction", "mec", "synopsis", "valid", "reason")
	m.lostTotal = c("lost_packets_total", "Lost packets summed over the intervals whose loss is exact (loss_valid), valid or not.", ivLabels...)
	m.sentTotal = c("sent_packets_total", "Sender-recorded packets summed over the intervals whose loss is exact (loss_valid).", ivLabels...)
	m.recvTotal = c("received_packets_total", "Receiver-recorded packets summed over the intervals whose loss is exact (loss_valid).", ivLabels...)
	m.delayPkts = c("delay_packets_total", "Packets whose delays the ldafwd_delay_seconds* counters hold: received, summed over valid intervals with a delay estimate.", ivLabels...)
	m.delaySum = c("delay_seconds_total", "Sum over valid intervals with a non-negative mean of received x mean one-way delay, seconds: with ldafwd_delay_negative_seconds_total and ldafwd_delay_packets_total it gives the packet-weighted mean delay.", ivLabels...)
	m.delayNegSum = c("delay_negative_seconds_total", "Sum over valid intervals with a negative mean (receiver clock behind the sender's) of received x -mean, seconds: subtract it from ldafwd_delay_seconds_total.", ivLabels...)
	m.delaySq = c("delay_seconds_squared_total", "Sum over valid intervals of received x (stddev^2 + mean^2), seconds squared: the packets' summed squared delays, for the standard deviation over any window.", ivLabels...)
	m.mbTotal = c("microbursts_total", "Microbursts (losses closer than --microburst-gap, at least --microburst-min of them) the interval lines list: synopsis lda from single-loss buckets, rda from a completed repair's exact send times.", ivLabels...)
	m.mbLost = c("microburst_lost_packets_total", "Lost packets in the microbursts of ldafwd_microbursts_total.", ivLabels...)
	m.mbDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "microburst_duration_seconds",
		Help:    "Send time from the first to the last loss of each microburst of ldafwd_microbursts_total, seconds.",
		Buckets: []float64{0, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1}}, ivLabels)
	r.MustRegister(m.mbDur)
	m.sampled = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "sampled_delay_seconds",
		Help:                            "One-way delay of each packet the trajectory sample paired (synopsis sample, valid lines): a uniform sample of the delivered packets, so histogram_quantile over it estimates the delay percentiles of any window (docs/sample.md). Native histogram, and classic buckets from 1 us to 10 s.",
		Buckets:                         SampledDelayBuckets,
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: time.Hour,
	}, []string{"direction", "mec"})
	r.MustRegister(m.sampled)
	m.ctlBytesTotal = c("control_bytes_total", "Control bytes of all reported intervals (counted once per interval, not per MEC).", "direction")
	labels := prometheus.Labels{}
	for k, v := range info {
		if k != "segment" || segment == "" { // the wrapper's label wins
			labels[k] = v
		}
	}
	if len(labels) > 0 {
		inf := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "info",
			Help: "Constant 1; the labels describe this appliance.", ConstLabels: labels})
		inf.Set(1)
		r.MustRegister(inf)
	}
	bi := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "build_info",
		Help:        "Constant 1; the labels name the build: module version, VCS revision (empty when the go tool recorded none), Go version, whether DPDK is linked.",
		ConstLabels: buildinfo.Get().Labels()})
	bi.Set(1)
	r.MustRegister(bi)
	r.MustRegister(&scrape{m: m}, exchangeScrape{m: m})
	r.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{Namespace: Namespace}))
	return m
}

// Registry is the registry behind /metrics (for tests and embedding).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetSources attaches the counters read at scrape time.
func (m *Metrics) SetSources(s Sources) {
	m.mu.Lock()
	m.src = s
	m.mu.Unlock()
}

// SetState moves /healthz to st.
func (m *Metrics) SetState(st State) { m.state.Store(st) }

// SetChecks replaces the peer watchdog's findings (check name → reason;
// empty: none). Any finding makes a running appliance degraded, as
// SetProblem does; /healthz lists them under "checks".
func (m *Metrics) SetChecks(c map[string]string) { m.checks.Store(c) }

// SetProblem marks a running appliance degraded (a failing report sink):
// /healthz then answers 503 with status "degraded" and the problem, since
// measuring without recording the results is not healthy. "" clears it.
func (m *Metrics) SetProblem(p string) { m.problem.Store(p) }

// Observe records one interval report line (the appliance's Reports
// callback). Per-flow lines (Flow set) are not exported: their label
// set would be unbounded.
func (m *Metrics) Observe(r *report.Interval) {
	if r.Flow != "" {
		return
	}
	m.obs.Lock()
	defer m.obs.Unlock()
	syn := r.Synopsis
	if syn == "" {
		syn = "lda"
	}
	l := prometheus.Labels{"direction": r.Direction, "mec": r.MEC, "synopsis": syn}
	valid := 0.0
	if r.Valid {
		valid = 1
	}
	m.valid.With(l).Set(valid)
	m.last.With(l).Set(float64(r.Interval))
	il := prometheus.Labels{"direction": r.Direction, "mec": r.MEC, "synopsis": syn, "valid": fmt.Sprint(r.Valid), "reason": Reason(r)}
	m.intervals.With(il).Inc()
	if r.Sent > 0 || r.Received > 0 {
		m.traffic.With(il).Inc()
	}
	if (r.Valid || r.LossValid) && syn != "sample" {
		// Loss counts wherever it is exact, also on a line whose delay is
		// unknown (its synopsis lost: loss from the End markers' counts).
		// A sample line's counts are of its sampled packets, not the
		// class's traffic: it adds its histogram only.
		m.lostTotal.With(l).Add(float64(r.Lost))
		m.sentTotal.With(l).Add(float64(r.Sent))
		m.recvTotal.With(l).Add(float64(r.Received))
	}
	switch {
	case syn == "sample":
		m.observeSample(r)
	case r.Valid:
		m.observeDelay(l, r)
	}
	m.observeMicrobursts(l, r)
	m.observeClock(r)
	// Control traffic is per interval and direction, repeated on every
	// MEC's line: count it once, on the first class ("all").
	if r.ControlBytes > 0 && (r.MEC == "all" || r.MEC == "") {
		d := prometheus.Labels{"direction": r.Direction}
		m.ctlBytes.With(d).Set(float64(r.ControlBytes))
		m.ctlFrames.With(d).Set(float64(r.ControlFrames))
		m.ctlBytesTotal.With(d).Add(float64(r.ControlBytes))
	}
	m.observed.Add(1)
	if syn != "sample" {
		// A sample line too sparse for any bound (a quiet interval, a
		// small budget) says nothing of whether the interval was measured.
		m.lastIv.Store(r.Interval)
		m.lastValid.Store(r.Valid)
	}
}

// observeClock sets the clock offset gauges from a line's extra
// clock_offset_ns and clock_offset_ci_ns (docs/reports.md), when it has
// them.
func (m *Metrics) observeClock(r *report.Interval) {
	off, ok := r.Extra["clock_offset_ns"].(float64)
	ci, ok2 := r.Extra["clock_offset_ci_ns"].(float64)
	if !ok || !ok2 || math.IsNaN(off) || math.IsInf(off, 0) || math.IsNaN(ci) || math.IsInf(ci, 0) {
		return
	}
	d := prometheus.Labels{"direction": r.Direction}
	m.clockOff.With(d).Set(off / 1e9)
	m.clockBound.With(d).Set(ci / 1e9)
}

// observeDelay adds a valid interval's delay to the moment counters,
// weighted by the packets the receiver recorded: a line's mean and
// standard deviation estimate those of its received packets' delays, so
// received·mean is their summed delay and received·(stddev²+mean²) their
// summed squared delay (the estimates are population moments). Summed over
// any set of intervals and appliances, sum/packets is then the mean delay
// of all their packets and squared/packets − mean² its variance. A counter
// cannot go down, so a negative mean (the receiver's clock behind the
// sender's by more than the delay) goes to its own counter. A line
// without a finite estimate adds nothing, to any of the four.
func (m *Metrics) observeDelay(l prometheus.Labels, r *report.Interval) {
	n := float64(r.Received)
	mean, sd := r.MeanNs/1e9, r.StddevNs/1e9
	if r.Received == 0 || math.IsNaN(mean) || math.IsInf(mean, 0) || math.IsNaN(sd) || math.IsInf(sd, 0) {
		return
	}
	sq := n * (sd*sd + mean*mean)
	if math.IsInf(sq, 0) {
		return
	}
	// Both signs' series exist as soon as one does, so that PromQL's
	// sum − negative matches them label for label.
	pos, neg := m.delaySum.With(l), m.delayNegSum.With(l)
	if mean >= 0 {
		pos.Add(n * mean)
	} else {
		neg.Add(-n * mean)
	}
	m.delaySq.With(l).Add(sq)
	m.delayPkts.With(l).Add(n)
}

// SampledDelayBuckets are ldafwd_sampled_delay_seconds' classic buckets:
// 1, 2, 5 steps from 1 µs to 10 s (a scraper without native histograms
// reads these).
var SampledDelayBuckets = func() []float64 {
	var b []float64
	for e := 1e-6; e < 10; e *= 10 {
		b = append(b, e, 2*e, 5*e)
	}
	return append(b, 10)
}()

// observeSample adds a sample line's paired delays to its class's
// histogram, where the line's delay is valid.
func (m *Metrics) observeSample(r *report.Interval) {
	if !r.DelayValid && !r.Valid || len(r.SampleDelaysNs) == 0 {
		return
	}
	h := m.sampled.With(prometheus.Labels{"direction": r.Direction, "mec": r.MEC})
	for _, d := range r.SampleDelaysNs {
		h.Observe(float64(d) / 1e9)
	}
}

// observeMicrobursts counts the microbursts a line lists (extra
// "microbursts"), valid or not: a line lists them only where their times
// hold (an LDA mean from usable buckets, a complete RDA decode and
// repair); a line invalid for its loss count or bound still says when
// packets were lost.
func (m *Metrics) observeMicrobursts(l prometheus.Labels, r *report.Interval) {
	mbs, _ := r.Extra["microbursts"].([]report.Microburst)
	if len(mbs) == 0 {
		return
	}
	lost := 0
	h := m.mbDur.With(l)
	for _, b := range mbs {
		lost += b.Losses
		h.Observe(float64(b.EndNs-b.StartNs) / 1e9)
	}
	m.mbTotal.With(l).Add(float64(len(mbs)))
	m.mbLost.With(l).Add(float64(lost))
}

// Reason is the ldafwd_intervals_total reason label of a report line:
// "ok" for a valid one, else the code of its leading cause
// (report.Code: a fixed set, no number in it; the sentence with the
// measured numbers stays in the JSON line). "unknown" for an invalid line
// built without a cause, which ldafwd does not write.
func Reason(r *report.Interval) string {
	if r.Valid {
		return "ok"
	}
	if c := r.Verdict().Lead().Code; c != 0 {
		return c.String()
	}
	return "unknown"
}

// Health is the /healthz body.
type Health struct {
	Status       string            `json:"status"`
	UptimeS      float64           `json:"uptime_s"`
	Reports      uint64            `json:"reports"`
	LastInterval int64             `json:"last_interval"` // -1 before the first report
	LastValid    bool              `json:"last_valid"`
	Info         map[string]string `json:"info,omitempty"`
	Problem      string            `json:"problem,omitempty"`
	Checks       map[string]string `json:"checks,omitempty"` // the peer watchdog's findings: check → reason (docs/run.md)
}

// Handler serves /metrics and /healthz.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Gatherer(), promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("/healthz", m.healthz)
	return mux
}

func (m *Metrics) healthz(w http.ResponseWriter, _ *http.Request) {
	st := m.state.Load().(State)
	h := Health{Status: string(st), UptimeS: time.Since(m.started).Seconds(), Reports: m.observed.Load(),
		LastInterval: m.lastIv.Load(), LastValid: m.lastValid.Load(), Info: m.info}
	var problems []string
	if p, _ := m.problem.Load().(string); p != "" {
		problems = append(problems, p)
	}
	if c, _ := m.checks.Load().(map[string]string); len(c) > 0 {
		h.Checks = c
		names := make([]string, 0, len(c))
		for k := range c {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			problems = append(problems, k+": "+c[k])
		}
	}
	if len(problems) > 0 {
		h.Problem = strings.Join(problems, "; ")
		if st == StateRunning {
			h.Status = "degraded"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if st != StateRunning || h.Problem != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(h)
}

// Server is a running metrics HTTP server.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan error
}

// Serve listens on addr (host:port; port 0 picks one) and serves Handler
// until Close. A bad or busy address is returned as an error at once.
func (m *Metrics) Serve(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{srv: &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 5 * time.Second}, addr: ln.Addr(), done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.addr }

// Close stops the server, waiting up to 2 s for scrapes in progress.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// Gatherer gathers the registry between report lines (see obs): what
// /metrics serves.
func (m *Metrics) Gatherer() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		m.obs.Lock()
		defer m.obs.Unlock()
		return m.reg.Gather()
	})
}
