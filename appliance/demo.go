package appliance

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/porttest"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// DemoConfig is `ldafwd demo`: two appliances in one process joined by an
// impaired ring link, a generator in front of the first and a sink behind
// the second.
//
//	generator ─ring─ [a  ldafwd#1  b] ═impaired segment═ [a  ldafwd#2  b] ─ring─ sink
type DemoConfig struct {
	Duration    time.Duration
	Interval    time.Duration
	Delay       model.Delay // one-way delay of the segment (a→b)
	Loss        model.Loss
	ReorderProb float64
	DupProb     float64
	Rate        float64 // generator packets per second; 0: as fast as the appliances take them
	Flows       int
	Size        int // frame bytes
	Seed        uint64
	Syn         dataplane.SynConfig
	Classifier  *classifier.Classifier
	Bounds      synopsis.CompactBounds
	Conf        float64
	TopFlows    int
	// ControlCopies: see Config. The demo's segment loses control frames
	// like any other, so `ldafwd demo` sends two copies.
	ControlCopies int
	// BudgetBytes and BudgetFraction: see Config.
	BudgetBytes    int
	BudgetFraction float64
	// AdaptRDA, AdaptLDS, RDAProblemRate: see Config.
	AdaptRDA, AdaptLDS bool
	RDAProblemRate     float64
	Key                []byte
	Insecure           bool
	// Test hooks. WrapSegment wraps appliance #1's segment port (faults on
	// what it transmits). Traffic says, per generator burst, whether to pause
	// and whether to send malformed frames instead. RestartAt > 0 stops
	// appliance #1 then and starts a new one (a new session) on the same
	// ports.
	WrapSegment func(dataplane.Port) dataplane.Port
	Traffic     func(elapsed time.Duration) (pause, malformed bool)
	RestartAt   time.Duration
	// Reports gets every interval line of the measured direction with the
	// exact truth (true_*) filled in.
	Reports func(*report.Interval)
	Log     zerolog.Logger
}

// DemoSummary is what the demo saw from end to end.
type DemoSummary struct {
	Generated, Sunk    uint64
	ImpairLost         uint64
	Intervals, Valid   int // intervals with traffic, and how many were valid
	Idle               int // intervals without traffic (reported invalid: nothing to measure)
	LossExact          int // valid intervals whose lost equals the true loss
	MeanInBound        int // valid intervals whose true mean is inside mean ± mean_ci_ns
	ApplianceTxDropped uint64
	Malformed          uint64  // malformed frames the generator sent (Traffic hook)
	ControlBytesPerInt float64 // mean control bytes per interval (a→b)
}

// RunDemo runs the demo for cfg.Duration and stops cleanly.
func RunDemo(cfg DemoConfig) (DemoSummary, error) {
	var sum DemoSummary
	if cfg.Duration <= 0 || cfg.Interval <= 0 {
		return sum, errors.New("demo: duration and interval must be positive")
	}
	if cfg.Flows == 0 {
		cfg.Flows = 1000
	}
	if cfg.Size == 0 {
		cfg.Size = 128
	}
	if cfg.Bounds == (synopsis.CompactBounds{}) {
		// The compact encoding must know how long a delay can be. The
		// segment is FIFO, so a long draw also delays the frames queued
		// behind it: allow for the tail and the queueing, and for the
		// scheduler: the demo's workers share the machine with everything
		// else, and on a busy 2-CPU machine a frame has waited over 10 ms
		// for a descheduled worker (a clean-clone CI run, 2026-11-21):
		// ≥ 100 ms. A wider range costs a few bits per bucket.
		cfg.Bounds = synopsis.DefaultCompactBounds()
		if m := cfg.Delay.Mean(); m*200 > 100e6 && m*200 < 1e12 {
			cfg.Bounds.MaxDelayNs = int64(m * 200)
		} else {
			cfg.Bounds.MaxDelayNs = 100_000_000
		}
		// A worker preempted around its TxBurst stamps a frame late by
		// up to half the gap, so a frame may appear to arrive before it
		// left: allow −10 ms.
		cfg.Bounds.MinDelayNs = -10_000_000
	}
	truth, err := dataplane.NewIntervalTruth(DirAtoB)
	if err != nil {
		return sum, err
	}
	mk := func(name string, c dataplane.LinkConfig) (*dataplane.RingLink, error) {
		return dataplane.NewRingLink(name, c)
	}
	l0, err := mk("", dataplane.LinkConfig{Size: 4096, Pool: 16384})
	if err != nil {
		return sum, err
	}
	l1, err := mk("", dataplane.LinkConfig{Size: 4096, Pool: 32768, AtoB: &dataplane.ImpairConfig{
		Delay: cfg.Delay, Loss: cfg.Loss, ReorderProb: cfg.ReorderProb, DupProb: cfg.DupProb, Seed: cfg.Seed,
		Queue: 16384, Truth: truth.Record}})
	if err != nil {
		return sum, err
	}
	l2, err := mk("", dataplane.LinkConfig{Size: 4096, Pool: 4096})
	if err != nil {
		return sum, err
	}
	defer func() {
		for _, l := range []*dataplane.RingLink{l0, l1, l2} {
			l.A().Close()
			l.B().Close()
		}
	}()

	// Reports of the measured direction wait for their interval's truth.
	var mu sync.Mutex
	truths := map[uint64]dataplane.TruthInterval{}
	var ctlBytes, ctlIntervals float64
	onReport := func(r *report.Interval) {
		if r.Direction != DirectionName(DirAtoB) {
			return // the generator sends a→b only; b→a carries control frames alone
		}
		mu.Lock()
		for {
			t, ok := truth.Next()
			if !ok {
				break
			}
			truths[t.K] = t
		}
		t, ok := truths[uint64(r.Interval)]
		mu.Unlock()
		// The link's truth is per interval, not per flow: flow lines get none.
		if ok && t.Delivered > 0 && r.Flow == "" {
			mean, sd, lost := t.Mean(), t.Stddev(), t.Lost
			r.TrueMeanNs, r.TrueStddevNs, r.TrueLost = &mean, &sd, &lost
		}
		if r.Synopsis != "lda" {
			if cfg.Reports != nil {
				cfg.Reports(r)
			}
			return
		}
		if r.Sent == 0 && r.Received == 0 && !r.Valid {
			// An interval without traffic (a pause, or the one the stop
			// closes right after a boundary) has nothing to measure: it is
			// reported, but it is not a failure of the measurement.
			sum.Idle++
			if cfg.Reports != nil {
				cfg.Reports(r)
			}
			return
		}
		sum.Intervals++
		if r.Valid {
			sum.Valid++
			if ok && r.Lost == t.Lost {
				sum.LossExact++
			}
			if ok && t.Delivered > 0 && abs(r.MeanNs-t.Mean()) <= r.MeanCINs {
				sum.MeanInBound++
			}
		}
		if r.ControlBytes > 0 && r.MEC == "all" {
			ctlBytes += float64(r.ControlBytes)
			ctlIntervals++
		}
		if cfg.Reports != nil {
			cfg.Reports(r)
		}
	}
	common := Config{Interval: cfg.Interval, Syn: cfg.Syn, Classifier: cfg.Classifier, Key: cfg.Key, Insecure: cfg.Insecure,
		Bounds: cfg.Bounds, Conf: cfg.Conf, TopFlows: cfg.TopFlows, ControlCopies: cfg.ControlCopies,
		BudgetBytes: cfg.BudgetBytes, BudgetFraction: cfg.BudgetFraction,
		AdaptRDA: cfg.AdaptRDA, AdaptLDS: cfg.AdaptLDS, RDAProblemRate: cfg.RDAProblemRate, IdleSleep: 20 * time.Microsecond, Reports: onReport}
	c1, c2 := common, common
	seg1 := dataplane.Port(l1.A())
	if cfg.WrapSegment != nil {
		seg1 = cfg.WrapSegment(seg1)
	}
	c1.Name, c1.PortA, c1.PortB, c1.Segment, c1.Log = "ldafwd#1", l0.B(), seg1, "b", cfg.Log.With().Str("appliance", "#1").Logger()
	c2.Name, c2.PortA, c2.PortB, c2.Segment, c2.Log = "ldafwd#2", l1.B(), l2.A(), "a", cfg.Log.With().Str("appliance", "#2").Logger()
	a1, err := New(c1)
	if err != nil {
		return sum, fmt.Errorf("demo: appliance #1: %w", err)
	}
	a2, err := New(c2)
	if err != nil {
		return sum, fmt.Errorf("demo: appliance #2: %w", err)
	}
	a2.Start()
	a1.Start()

	var sunk atomic.Uint64
	stopSink := make(chan struct{})
	sinkDone := make(chan struct{})
	go func() {
		defer close(sinkDone)
		pk := make([]*dataplane.Packet, 64)
		for {
			n := l2.B().RxBurst(pk)
			if n > 0 {
				sunk.Add(uint64(n))
				l2.B().Free(pk[:n])
				continue
			}
			select {
			case <-stopSink:
				return
			default:
				time.Sleep(20 * time.Microsecond)
			}
		}
	}()

	// Generator: distinct IDs, many flows, paced to Rate when set.
	gen, err := porttest.NewGen(porttest.GenConfig{Flows: cfg.Flows, Size: cfg.Size})
	if err != nil {
		return sum, err
	}
	pk := make([]*dataplane.Packet, 32)
	origin := time.Now() // the hooks' clock; start moves past pauses for the rate schedule
	start := origin
	end := start.Add(cfg.Duration)
	id := uint64(1)
	restarted := cfg.RestartAt <= 0
	var junk uint64
	for now := time.Now(); now.Before(end); now = time.Now() {
		if !restarted && now.Sub(origin) >= cfg.RestartAt {
			// The sender appliance dies without a graceful stop of its
			// interval (its control side is gone), and comes back.
			restarted = true
			a1.Stop(0)
			if a1, err = New(c1); err != nil {
				return sum, fmt.Errorf("demo: restarting appliance #1: %w", err)
			}
			a1.Start()
		}
		if cfg.Traffic != nil {
			pause, bad := cfg.Traffic(now.Sub(origin))
			if pause {
				// The schedule skips the pause: no backlog burst after it.
				time.Sleep(200 * time.Microsecond)
				start = start.Add(time.Since(now))
				continue
			}
			if bad {
				// Malformed frames: IPv4 headers with an impossible IHL,
				// truncated IPv6, random bytes. Forwarded and counted,
				// never measured wrong.
				n := l0.A().Alloc(pk[:8])
				for i := 0; i < n; i++ {
					junk++
					pk[i].Data = malformedFrame(pk[i].Data[:cap(pk[i].Data)], junk)
				}
				if m := l0.A().TxBurst(pk[:n]); m < n {
					l0.A().Free(pk[m:n])
				}
				sum.Malformed += uint64(n)
				time.Sleep(50 * time.Microsecond)
				continue
			}
		}
		want := len(pk)
		if cfg.Rate > 0 {
			due := uint64(cfg.Rate*now.Sub(start).Seconds()) + 1
			if due <= id-1 {
				time.Sleep(50 * time.Microsecond)
				continue
			}
			want = int(min(uint64(len(pk)), due-(id-1)))
		}
		n := l0.A().Alloc(pk[:want])
		for i := 0; i < n; i++ {
			pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], id+uint64(i))
		}
		m := l0.A().TxBurst(pk[:n])
		if m < n {
			l0.A().Free(pk[m:n])
			time.Sleep(20 * time.Microsecond)
		}
		id += uint64(m)
	}
	sum.Generated = id - 1
	// Let the segment drain, then stop both appliances gracefully.
	imp := l1.B().Impairer()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if sunk.Load()+imp.Stats().Lost >= sum.Generated { // (Lost includes control frames: at worst we wait less)
			break
		}
	}
	// The sender of the measured direction first, so its last interval is
	// on the wire before the receiver settles.
	drain := cfg.Interval + time.Second
	err1 := a1.Stop(drain)
	err2 := a2.Stop(drain)
	close(stopSink)
	<-sinkDone
	sum.Sunk = sunk.Load()
	sum.ImpairLost = truth.LostData() // data frames only: a lost control frame is no traffic
	for _, a := range []*Appliance{a1, a2} {
		s, r := a.Lanes()
		sum.ApplianceTxDropped += s.Stats.TxDropped.Load() + r.Stats.TxDropped.Load()
	}
	if ctlIntervals > 0 {
		sum.ControlBytesPerInt = ctlBytes / ctlIntervals
	}
	return sum, errors.Join(err1, err2)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// DemoBounds is the compact encoding's delay bounds for a given largest
// one-way delay.
func DemoBounds(maxDelay time.Duration) synopsis.CompactBounds {
	b := synopsis.DefaultCompactBounds()
	b.MaxDelayNs = maxDelay.Nanoseconds()
	return b
}

// malformedFrame writes one of several broken frames into buf.
func malformedFrame(buf []byte, i uint64) []byte {
	buf = buf[:64]
	for j := range buf {
		buf[j] = byte(i*131 + uint64(j)*7)
	}
	switch i % 3 {
	case 0: // IPv4 with IHL 2 (below the minimum)
		buf[12], buf[13], buf[14] = 0x08, 0x00, 0x42
	case 1: // IPv6 cut inside its header
		buf[12], buf[13], buf[14] = 0x86, 0xdd, 0x60
		buf = buf[:30]
	default: // an unknown EtherType: random bytes after L2
		buf[12], buf[13] = 0x12, 0x34
	}
	return buf
}
