package service

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// Run is `ldafwd run` after its flags are validated: open the ports →
// build the appliance (or the forward-only lanes) → run until ctx is
// cancelled or --duration passes → stop and close, in that order
// (l2fwd's order). The reports go to w, and to table (nil: none) as a
// table; last is what the --report file last held per direction
// (LastReported), so that a restart reports the intervals nobody held.
func Run(ctx context.Context, o *Config, w *report.Writer, table io.Writer, last map[string]uint64, log zerolog.Logger) (err error) {
	appliance.TuneGC() // start-up buffers are most of the heap: see there
	ports, err := openPorts(o, log)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer func() {
		if cerr := ports.close(); cerr != nil && err == nil {
			err = fmt.Errorf("run: closing ports: %w", cerr)
		}
	}()

	segment := o.Segment
	if o.ForwardOnly {
		segment = "none" // nothing is measured
	}
	info := map[string]string{"segment_port": segment, "port_a": o.PortA, "port_b": o.PortB}
	if o.Insecure {
		info["insecure"] = "true" // control frames unauthenticated: shown by ldafwd_info and /healthz
	}
	m := metrics.New(o.SegmentName, info)
	var out runOutput
	out.init(o, w, table, m, log)
	out.queued()
	defer out.drain()
	tapA, tapB, closeTaps, err := o.Capture.Open(o.PortA, o.PortB, log)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer func() {
		if cerr := closeTaps(); cerr != nil && err == nil {
			err = fmt.Errorf("run: %w", cerr)
		}
	}()
	if o.ForwardOnly {
		f, err := newForwardOnly(o, ports, log)
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		m.SetSources(metrics.Sources{
			Ports: map[string]dataplane.Port{"a": ports.a, "b": ports.b},
			Lanes: map[string]*dataplane.LaneStats{"forward_ab": &f.lanes[0].Stats, "forward_ba": &f.lanes[1].Stats},
		})
		log.Info().Msg("forwarding only: nothing is measured")
		return serve(ctx, o, f, ports, &out, m, log)
	}
	qa, qb, stopQueues, err := ports.queues(o.Queues)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer stopQueues()
	ac := o.Appliance()
	ac.PortA, ac.PortB, ac.QueuesA, ac.QueuesB, ac.TapA, ac.TapB = ports.a, ports.b, qa, qb, tapA, tapB
	ac.Reports, ac.Log, ac.LastReported = out.put, log, last
	ac.OnWorkerStart, ac.OnWorkerExit = ports.onWorkerStart, ports.onWorkerExit
	a, err := appliance.New(ac)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	sender, receiver := a.Lanes()
	lanes := map[string]*dataplane.LaneStats{"sender": &sender.Stats, "receiver": &receiver.Stats}
	for q, p := range a.QueueLanes()[1:] {
		// Queue 0's lanes keep the names one queue has; the others' carry
		// their queue number.
		lanes[fmt.Sprintf("sender_q%d", q+1)], lanes[fmt.Sprintf("receiver_q%d", q+1)] = &p[0].Stats, &p[1].Stats
	}
	m.SetSources(metrics.Sources{
		Ports:    map[string]dataplane.Port{"a": ports.a, "b": ports.b},
		Lanes:    lanes,
		Control:  a.ControlCounters,
		Exchange: func(fn func(string, uint64)) { a.RepairCounters().Each(fn) },
		Captures: captureSources(tapA, tapB),
	})
	tapA.Start()
	tapB.Start()
	return serve(ctx, o, a, ports, &out, m, log)
}

// runner is what serve runs: the appliance, or the forward-only lanes.
type runner interface {
	Start() error
	Stop(drain time.Duration) error
}

// serve runs r until the context is cancelled or --duration passes,
// printing the port records every --stats-interval and at the end.
func serve(ctx context.Context, o *Config, a runner, ports *portSet, out *runOutput, m *metrics.Metrics, log zerolog.Logger) error {
	var srv *metrics.Server
	var err error
	if o.MetricsAddr != "" {
		if srv, err = m.Serve(o.MetricsAddr); err != nil {
			return fmt.Errorf("run: --metrics-addr: %w", err)
		}
		log.Info().Str("addr", srv.Addr().String()).Msg("serving /metrics and /healthz")
		defer srv.Close()
	}

	if err := a.Start(); err != nil {
		m.SetState(metrics.StateStopped)
		return fmt.Errorf("run: %w", err)
	}
	m.SetState(metrics.StateRunning)
	start := time.Now()
	var wdC <-chan time.Time
	if src, ok := a.(peerSource); ok {
		wd := newWatchdog(o, src, out, m, log, start)
		out.setWatchdog(wd)
		t := time.NewTicker(max(o.Interval/2, 5*time.Millisecond))
		defer t.Stop()
		wdC = t.C
		defer func() { out.setWatchdog(nil) }()
	}
	var deadline <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		deadline = t.C
	}
	stats := time.NewTicker(o.StatsInterval)
	defer stats.Stop()
	// --insecure warns every interval, but at most once a second so a
	// 1 ms interval does not turn the log into nothing else.
	var insecureC <-chan time.Time
	if o.Insecure {
		warn := time.NewTicker(max(o.Interval, time.Second))
		defer warn.Stop()
		insecureC = warn.C
		log.Warn().Msg(InsecureWarning)
	}
	if l, ok := a.(interface {
		Lanes() (sender, receiver *dataplane.Lane)
	}); ok {
		snd, rcv := l.Lanes()
		// The sender lane receives on the port facing away from the
		// segment, the receiver lane on the segment port.
		out.excluded = func() [2]uint64 {
			x := [2]uint64{snd.Stats.Excluded.Load(), rcv.Stats.Excluded.Load()}
			if o.Segment == "a" {
				x[0], x[1] = x[1], x[0]
			}
			return x
		}
	}
	prev := [2]dataplane.Stats{ports.a.Stats(), ports.b.Stats()}
	prevAt := start
loop:
	for {
		select {
		case <-ctx.Done():
			log.Info().Msg("signalled: stopping")
			break loop
		case <-deadline:
			log.Info().Dur("duration", o.Duration).Msg("duration reached: stopping")
			break loop
		case <-insecureC:
			log.Warn().Msg(InsecureWarning)
		case now := <-wdC:
			out.watchdog().check(now, false)
		case now := <-stats.C:
			cur := [2]dataplane.Stats{ports.a.Stats(), ports.b.Stats()}
			out.ports(cur, prev, now.Sub(start), now.Sub(prevAt), false)
			prev, prevAt = cur, now
		}
	}
	m.SetState(metrics.StateStopping)
	stopErr := a.Stop(o.Drain)
	out.drain() // every line the appliance reported, before the verdict and the final records
	if wd := out.watchdog(); wd != nil {
		wd.check(time.Now(), true)
	}
	elapsed := time.Since(start)
	out.ports([2]dataplane.Stats{ports.a.Stats(), ports.b.Stats()}, [2]dataplane.Stats{}, elapsed, elapsed, true)
	m.SetState(metrics.StateStopped)
	if stopErr != nil {
		return fmt.Errorf("run: %w", stopErr)
	}
	return out.err()
}

// Appliance is the appliance configuration o's flags give: every setting,
// none of a run's pieces (ports, queues, taps, report sink, log, worker
// hooks, what an earlier run reported), which Run fills in.
func (o *Config) Appliance() appliance.Config {
	return appliance.Config{
		Segment: o.Segment, Interval: o.Interval, Syn: o.Syn, Classifier: o.Classifier, Key: o.Key, Insecure: o.Insecure,
		MTU: o.MTU, ControlPriority: o.Priority, Bounds: o.Bounds, Conf: o.Conf, Burst: o.Burst, Cores: o.Cores, IdleSleep: o.IdleSleep,
		ControlCopies: o.Copies, ControlParity: o.Parity, TopFlows: o.Top, BudgetBytes: o.BudgetBytes, BudgetFraction: o.BudgetFraction,
		AdaptLDA: o.AdaptLDA, AdaptRDA: o.AdaptRDA, AdaptLDS: o.AdaptLDS, AdaptSample: o.AdaptSample, RDAProblemRate: o.RDAProblemRate,
		MaxClockSkew: o.MaxSkew, MaxStampErr: o.MaxStampErr, MicroburstGap: appliance.MicroburstGapOff(o.MicroburstGap), MicroburstMin: o.MicroburstMin,
	}
}
