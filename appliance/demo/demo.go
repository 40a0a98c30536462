package demo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// Config is `ldafwd demo`: two appliances in one process joined by an
// impaired ring link, a generator in front of the first and a sink behind
// the second.
//
//	generator ─ring─ [a  ldafwd#1  b] ═impaired segment═ [a  ldafwd#2  b] ─ring─ sink
type Config struct {
	Duration    time.Duration
	Interval    time.Duration
	Delay       model.Delay // one-way delay of the segment (a→b)
	Loss        model.Loss
	ReorderProb float64
	// ReorderDepth and ReorderHold: how many later packets overtake a
	// held one, and its longest hold (dataplane.ImpairConfig's
	// ReorderDepth and MaxHoldNs; zero: their defaults, 1 and 1 ms).
	ReorderDepth int
	ReorderHold  time.Duration
	DupProb      float64
	// Remark rewrites DSCPs inside the segment (a router remarking).
	Remark []dataplane.Remark
	// LinkLocalRate > 0: link-local frames per second (STP BPDU, LLDP,
	// ARP in turn) the generator sends among its traffic, which the
	// segment consumes, and as many the segment originates toward ldafwd#2,
	// as a switch there does.
	LinkLocalRate float64
	// DSCP marks the generated flows: flow f carries DSCP[f%len(DSCP)]
	// (nil: 0).
	DSCP       []uint8
	Rate       float64 // generator packets per second; 0: as fast as the appliances take them
	Flows      int
	Size       int // frame bytes
	Seed       uint64
	Syn        dataplane.SynConfig
	Classifier *classifier.Classifier
	// Bounds: the wire range (Config.Bounds); zero: the default,
	// widened for a delay model whose tail needs more (Run).
	Bounds synopsis.CompactBounds
	// Assumed: the confidence range before an interval shows a wider one
	// (Config.Assumed); zero: AssumedDelay.
	Assumed  appliance.DelayRange
	Conf     float64
	TopFlows int
	// ControlCopies: see Config. The demo's segment loses control frames
	// like any other, so `ldafwd demo` sends two copies.
	ControlCopies int
	// ControlParity: see Config.
	ControlParity float64
	// ControlPriority: see Config. The demo's segment has one queue, so
	// the tag changes no frame's fate; it exercises the tagged frames end
	// to end (sizes, budget, parsing, stripping).
	ControlPriority control.Priority
	// BudgetBytes and BudgetFraction: see Config.
	BudgetBytes    int
	BudgetFraction float64
	// AdaptLDA, AdaptRDA, AdaptLDS, RDAProblemRate: see Config.
	AdaptLDA, AdaptRDA, AdaptLDS bool
	RDAProblemRate               float64
	Key                          []byte
	Insecure                     bool
	// AdaptSample: see Config.
	AdaptSample bool
	// Test hooks. WrapSegment wraps appliance #1's segment port (faults on
	// what it transmits). Traffic says, per generator burst, whether to pause
	// and whether to send malformed frames instead. RestartAt > 0 stops
	// appliance #1 then and starts a new one (a new session) on the same
	// ports.
	WrapSegment func(dataplane.Port) dataplane.Port
	// WrapReceiver wraps appliance #2's segment port (what its receiver
	// lane polls).
	WrapReceiver func(dataplane.Port) dataplane.Port
	Traffic      func(elapsed time.Duration) (pause, malformed bool)
	RestartAt    time.Duration
	// ClockStepAt > 0 steps appliance #1's clock (its stamps and the
	// interval clock its lanes cut by; not its control side's monotonic
	// clock) by ClockStepBy, forward or back, that far into the run, as
	// an NTP daemon's step would. The truth follows the delays the
	// appliances then see. Simulated time only.
	ClockStepAt time.Duration
	ClockStepBy time.Duration
	// CalmFor > 0 keeps the segment in order and lossless for that long
	// from the start (delays still apply): loss, reordering, duplicates
	// and remarking start after it. The receiver so checks intervals in
	// order before the segment turns bad, as a calm start does before
	// congestion. Simulated time only.
	CalmFor time.Duration
	// LastReported is appliance #2's Config.LastReported: where an
	// earlier run's reports ended, per direction.
	LastReported map[string]uint64
	// Taps capture what the appliances' ports receive: [0] is ldafwd#1,
	// [1] ldafwd#2, each {port a, port b} (nil: none). Run starts
	// them and closes them once the appliances have stopped.
	Taps [2][2]*dataplane.Tap
	// Reports gets every interval line of the measured direction with the
	// exact truth (true_*) filled in.
	Reports func(*report.Interval)
	Log     zerolog.Logger

	// MicroburstGap, MicroburstMin: see Config.
	MicroburstGap time.Duration
	MicroburstMin int
	// TruthHook (a test hook) gets every record of the impaired a→b link
	// besides the demo's own truth, on the link's receiving goroutine (it
	// must not block): the send times of the packets the stage lost, say.
	TruthHook dataplane.TruthFunc
	// Queues > 1 gives every appliance port that many queues, steered in
	// software like a NIC's RSS (dataplane.SoftQueues): one lane pair and
	// one worker per queue at each appliance.
	Queues int
	// SteerReceiver, with Queues, steers what ldafwd#2's segment port
	// receives instead of dataplane.SteerQueue (a test hook: steering
	// gone wrong).
	SteerReceiver func(frame []byte, n int) int
	// SimulatedTime runs the demo on simulated time (simdemo.go): one
	// goroutine moves a simulated clock and drives the generator, the
	// links, every lane and both control sides, so a seed and the flags
	// decide every report byte for byte, whatever the host's load.
	// Taps, Queues > 1 and Rate 0 are refused with it; a
	// Traffic hook's pauses run, the malformed frames it asks for are
	// refused when asked.
	SimulatedTime bool
}

// Summary is what the demo saw from end to end.
type Summary struct {
	Generated, Sunk    uint64
	ImpairLost         uint64
	Intervals, Valid   int // intervals with traffic, and how many were valid
	Idle               int // intervals without traffic (reported invalid: nothing to measure)
	LossExact          int // valid intervals whose lost equals the true loss
	MeanInBound        int // valid intervals whose true mean is inside mean ± mean_ci_ns
	ApplianceTxDropped uint64
	Malformed          uint64  // malformed frames the generator sent (Traffic hook)
	ControlBytesPerInt float64 // mean control bytes per interval (a→b)
	// What the segment did besides delay and loss (its exact counts), and
	// what the appliances left unmeasured.
	Duplicated, Reordered, Remarked   uint64
	LinkLocalSent, Consumed, Injected uint64
	ExcludedSent, ExcludedReceived    uint64 // link-local frames ldafwd#1's sender and ldafwd#2's receiver forwarded unrecorded
	// FlowReordered counts generated frames the sink received after a
	// later frame of their own flow (the segment's reordering, and any of
	// the appliances': with several queues, per-flow order must hold).
	FlowReordered uint64
	// Per queue of ldafwd#2's receiver: frames recorded and intervals cut
	// (End markers of its own lane), and End markers of another lane that
	// reached it (steered wrongly), summed over queues.
	QueueRecorded, QueueFlips []uint64
	EndsMisrouted             uint64
	// TruthTooLate counts packets the truth could not place: delivered
	// after their interval's truth was published. Zero, or the truth the
	// lines were held to is wrong.
	TruthTooLate uint64
}

// Run runs the demo for cfg.Duration and stops cleanly.
func Run(cfg Config) (Summary, error) {
	var sum Summary
	if cfg.Duration <= 0 || cfg.Interval <= 0 {
		return sum, errors.New("demo: duration and interval must be positive")
	}
	if cfg.Flows == 0 {
		cfg.Flows = 1000
	}
	if cfg.Size == 0 {
		cfg.Size = 128
	}
	var clk *appliance.SimClock
	if cfg.ClockStepAt > 0 && !cfg.SimulatedTime {
		return sum, errors.New("demo: a clock step (ClockStepAt) needs simulated time")
	}
	if cfg.CalmFor > 0 && !cfg.SimulatedTime {
		return sum, errors.New("demo: a calm start (CalmFor) needs simulated time")
	}
	if cfg.SimulatedTime {
		if err := simUnsupported(&cfg); err != nil {
			return sum, err
		}
		clk = appliance.NewSimClock(SimStartNs)
	}
	// The range the per-flow bounds assume before an interval shows a
	// wider one (Assumed): the demo's workers share the machine with
	// everything else, and on a busy 2-CPU machine a frame has waited over
	// 10 ms for a descheduled worker (a clean-clone CI run, 2026-11-21):
	// 100 ms; a worker preempted around its TxBurst stamps a frame late by
	// up to half the gap, so a frame may appear to arrive before it left:
	// −10 ms. The compact encoding carries the default −10 ms … 1 s, more
	// where the model's tail needs it: the segment is FIFO, so a long draw
	// also delays the frames queued behind it (200 × the mean).
	if cfg.Bounds == (synopsis.CompactBounds{}) {
		cfg.Bounds = synopsis.DefaultCompactBounds()
		if m := cfg.Delay.Mean(); m*200 > float64(cfg.Bounds.MaxDelayNs) && m*200 < 1e12 {
			cfg.Bounds.MaxDelayNs = int64(m * 200)
		}
	}
	if cfg.Assumed == (appliance.DelayRange{}) {
		cfg.Assumed = AssumedDelay.Within(cfg.Bounds)
	}
	var truth demoTruth
	var err error
	if cfg.Queues > 1 {
		// Each lane cuts at its own End marker: so does the truth.
		truth, err = newLaneTruth(cfg.Queues, appliance.DirAtoB, cfg.Classifier)
	} else {
		truth, err = dataplane.NewIntervalTruthClasses(appliance.DirAtoB, cfg.Classifier, 1)
	}
	if err == nil {
		err = truth.Authenticate(cfg.Key) // it cuts where the receiver does: at authentic End markers only
	}
	if err == nil && cfg.Syn.Sample != nil {
		truth.KeepDelays() // the sample and flow lines' true quantiles (sampleTruth, flowTruth)
	}
	if err != nil {
		return sum, err
	}
	var lostTx lostTimes // the stage's lost packets, for the true microbursts
	hook := cfg.TruthHook
	if cfg.MicroburstGap > 0 {
		hook = lostTx.hook(cfg.TruthHook, cfg.LinkLocalRate > 0)
	}
	var injectEvery uint64
	if cfg.LinkLocalRate > 0 {
		injectEvery = uint64(1e9 / cfg.LinkLocalRate)
	}
	// The links' pools hold what a descheduled worker leaves queued on
	// the wall clock (seconds of traffic at 20 kpps). On simulated time
	// nothing is descheduled: a quarter of that (no less than a ring's
	// slots) holds every frame in flight, and a property run of a
	// thousand demos in one process clears a quarter of the memory.
	poolDiv := 1
	if clk != nil {
		poolDiv = 4
	}
	mk := func(name string, c dataplane.LinkConfig) (*dataplane.RingLink, error) {
		if clk != nil {
			c.Clock = clk.Clock
		}
		c.Pool = max(c.Pool/poolDiv, c.Size)
		return dataplane.NewRingLink(name, c)
	}
	var calmUntil uint64
	if cfg.CalmFor > 0 {
		calmUntil = SimStartNs + uint64(cfg.CalmFor)
	}
	l0, err := mk("", dataplane.LinkConfig{Size: 4096, Pool: 16384})
	if err != nil {
		return sum, err
	}
	l1, err := mk("", dataplane.LinkConfig{Size: 4096, Pool: 32768, AtoB: &dataplane.ImpairConfig{
		Delay: cfg.Delay, Loss: cfg.Loss, ReorderProb: cfg.ReorderProb, ReorderDepth: cfg.ReorderDepth, MaxHoldNs: uint64(cfg.ReorderHold), DupProb: cfg.DupProb, Seed: cfg.Seed,
		Queue: 16384, Truth: truthFunc(truth, hook), Remark: cfg.Remark, ConsumeLinkLocal: cfg.LinkLocalRate > 0, InjectEveryNs: injectEvery,
		CalmUntilNs: calmUntil}})
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
	// A sender restarted within an interval cuts it a second time: that
	// truth belongs to the second cut's lines (ReasonRecut), reported
	// after the first cut's (which wait for the next interval).
	recuts := map[uint64]dataplane.TruthInterval{}
	// waited: intervals whose truth was waited for in vain; their other
	// lines (one per MEC and synopsis) do not wait again.
	waited := map[uint64]bool{}
	var ctlBytes, ctlIntervals float64
	names := cfg.Classifier.Names()
	// lookup takes the truth published so far and returns r's interval's;
	// ok false: not (yet) there.
	lookup := func(r *report.Interval) (dataplane.TruthInterval, bool) {
		for {
			ti, got := truth.Next()
			if !got {
				break
			}
			ti.Classes = append([]dataplane.ClassTruth(nil), ti.Classes...)
			if _, dup := truths[ti.K]; dup {
				recuts[ti.K] = ti
			} else {
				truths[ti.K] = ti
			}
		}
		src := truths
		if r.Verdict().Lead().Code == report.Recut {
			src = recuts
		}
		t, ok := src[uint64(r.Interval)]
		return t, ok
	}
	// On simulated time a line waits for its truth in a queue the driver
	// looks at after every tick (simdemo.go), in order, up to
	// truthWait of simulated time: the driver cannot sleep.
	var simLines []simLine
	var deliver func(r *report.Interval, t dataplane.TruthInterval, ok bool)
	onReport := func(r *report.Interval) {
		if r.Direction != appliance.DirectionName(appliance.DirAtoB) {
			return // the generator sends a→b only; b→a carries control frames alone
		}
		if clk != nil {
			simLines = append(simLines, simLine{r: r, at: clk.Clock()})
			return
		}
		mu.Lock()
		// The truth of an interval is final a few frames after its End
		// marker (a packet held back across it may still come): wait a
		// little for it.
		var t dataplane.TruthInterval
		var ok bool
		for wait := 0; ; wait++ {
			if t, ok = lookup(r); ok || wait == int(truthWait/time.Millisecond) || waited[uint64(r.Interval)] {
				if !ok {
					waited[uint64(r.Interval)] = true
				}
				break
			}
			time.Sleep(time.Millisecond)
		}
		mu.Unlock()
		deliver(r, t, ok)
	}
	deliver = func(r *report.Interval, t dataplane.TruthInterval, ok bool) {
		// The link's truth is per interval and class (the sender's); a
		// flow line gets only its sampled quantiles' (flowTruth).
		var ct dataplane.ClassTruth
		if ok {
			for m, n := range names {
				if n == r.MEC && m < len(t.Classes) {
					ct = t.Classes[m]
				}
			}
		}
		if ok && r.Flow == "" {
			// The loss is known whatever was delivered (an interval that
			// sent nothing lost nothing); the delays only of what was.
			lost := ct.Lost
			r.TrueLost = &lost
			if ct.Delivered > 0 {
				mean, sd := ct.Mean(), ct.Stddev()
				r.TrueMeanNs, r.TrueStddevNs = &mean, &sd
			}
			if t.Crossed+t.Remarked+t.Dups+t.Excluded+t.Injected > 0 {
				if r.Extra == nil {
					r.Extra = map[string]any{}
				}
				r.Extra["true_crossed"], r.Extra["true_dups"], r.Extra["true_remarked"] = ct.Crossed, t.Dups, t.Remarked
				r.Extra["true_excluded"], r.Extra["true_injected"] = t.Excluded, t.Injected
			}
			if r.Synopsis == "sample" {
				sampleTruth(r, &ct)
			}
		}
		if ok && r.Synopsis == "lds" {
			flowTruth(r, t.Classes)
		}
		if _, listed := r.Extra["microbursts"]; listed && ok && len(names) == 1 {
			// The stage lost these packets at these send times: the
			// microbursts the line should have found.
			r.Extra["true_microbursts"] = lostTx.microbursts(r, uint64(cfg.MicroburstGap.Nanoseconds()), cfg.MicroburstMin)
		}
		if r.Synopsis != "lda" {
			if cfg.Reports != nil {
				cfg.Reports(r)
			}
			return
		}
		if !r.Valid && (r.Sent == 0 && r.Received == 0 || r.Verdict().Lead().Code == report.Warmup) {
			// An interval without traffic (a pause, or the one the stop
			// closes right after a boundary) has nothing to measure, and
			// the one the receiver started in is partial by construction:
			// they are reported, but they are not failures of the
			// measurement.
			sum.Idle++
			if cfg.Reports != nil {
				cfg.Reports(r)
			}
			return
		}
		sum.Intervals++
		if r.Valid {
			sum.Valid++
			if ok && r.Lost == ct.Lost {
				sum.LossExact++
			}
			if ok && ct.Delivered > 0 && abs(r.MeanNs-ct.Mean()) <= r.MeanCINs {
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
	common := appliance.Config{Interval: cfg.Interval, Syn: cfg.Syn, Classifier: cfg.Classifier, Key: cfg.Key, Insecure: cfg.Insecure,
		Bounds: cfg.Bounds, Assumed: cfg.Assumed, Conf: cfg.Conf, TopFlows: cfg.TopFlows, ControlCopies: cfg.ControlCopies, ControlParity: cfg.ControlParity, ControlPriority: cfg.ControlPriority,
		BudgetBytes: cfg.BudgetBytes, BudgetFraction: cfg.BudgetFraction,
		AdaptLDA: cfg.AdaptLDA, AdaptRDA: cfg.AdaptRDA, AdaptLDS: cfg.AdaptLDS, AdaptSample: cfg.AdaptSample, RDAProblemRate: cfg.RDAProblemRate, IdleSleep: 20 * time.Microsecond, Reports: onReport,
		MicroburstGap: appliance.MicroburstGapOff(cfg.MicroburstGap), MicroburstMin: cfg.MicroburstMin}
	c1, c2 := common, common
	var stepOff func(ns uint64) int64 // what ClockStepBy adds to #1's clock at a time
	if clk != nil {
		common.Clock, common.Now, common.ClockName = clk.Clock, clk.Now, "simulated"
		c1, c2 = common, common
		c1.Session, c2.Session = simSession(cfg.Seed, 1), simSession(cfg.Seed, 2)
		if cfg.ClockStepAt > 0 {
			at, by := SimStartNs+uint64(cfg.ClockStepAt), int64(cfg.ClockStepBy)
			stepOff = func(ns uint64) int64 {
				if ns >= at {
					return by
				}
				return 0
			}
			c1.Clock = func() uint64 {
				t := clk.Clock()
				return uint64(int64(t) + stepOff(t))
			}
			if it, ok := truth.(*dataplane.IntervalTruth); ok {
				// The sender's stamps run ahead by what the step added.
				it.ClockOffset = func(txNs, _ uint64) int64 { return -stepOff(txNs) }
			}
		}
	}
	seg1 := dataplane.Port(l1.A())
	if cfg.ClockStepAt > 0 {
		// The link stamps what ldafwd#1 transmits (as a NIC stamps on its
		// own clock): that clock steps with the system's, as one kept in
		// step by a daemon does.
		seg1 = steppedStamps(seg1, stepOff)
	}
	if cfg.WrapSegment != nil {
		seg1 = cfg.WrapSegment(seg1)
	}
	c1.PortA, c1.PortB, c1.Segment, c1.Log = l0.B(), seg1, "b", cfg.Log.With().Str("appliance", "#1").Logger()
	seg2 := dataplane.Port(l1.B())
	if cfg.WrapReceiver != nil {
		seg2 = cfg.WrapReceiver(seg2)
	}
	c2.PortA, c2.PortB, c2.Segment, c2.Log = seg2, l2.A(), "a", cfg.Log.With().Str("appliance", "#2").Logger()
	c2.LastReported = cfg.LastReported
	if cfg.Queues > 1 {
		stopQ, err := splitQueues(cfg.Queues, cfg.SteerReceiver, &c1, &c2)
		if err != nil {
			return sum, err
		}
		defer stopQ()
	}
	c1.TapA, c1.TapB, c2.TapA, c2.TapB = cfg.Taps[0][0], cfg.Taps[0][1], cfg.Taps[1][0], cfg.Taps[1][1]
	a1, err := appliance.New(c1)
	if err != nil {
		return sum, fmt.Errorf("demo: appliance #1: %w", err)
	}
	a2, err := appliance.New(c2)
	if err != nil {
		return sum, fmt.Errorf("demo: appliance #2: %w", err)
	}
	for _, t := range []*dataplane.Tap{c1.TapA, c1.TapB, c2.TapA, c2.TapB} {
		t.Start()
		defer t.Close() // after the appliances' Stop (deferred below or done at the end)
	}
	var sunk, flowReordered atomic.Uint64
	lastID := make([]uint64, cfg.Flows) // per flow: the latest frame id sunk
	sinkPk := make([]*dataplane.Packet, 64)
	// sinkBurst takes one burst off the downstream link and counts it.
	sinkBurst := func() int {
		n := l2.B().RxBurst(sinkPk)
		if n == 0 {
			return 0
		}
		for _, p := range sinkPk[:n] {
			if id, ok := traffic.FrameID(p.Data); ok && id > 0 && id < 1<<40 {
				f := id % uint64(len(lastID))
				if id < lastID[f] {
					flowReordered.Add(1)
				} else {
					lastID[f] = id
				}
			}
		}
		sunk.Add(uint64(n))
		l2.B().Free(sinkPk[:n])
		return n
	}

	// Generator: distinct IDs, many flows, paced to Rate when set.
	gen, err := traffic.NewGen(traffic.GenConfig{Flows: cfg.Flows, Size: cfg.Size})
	if err != nil {
		return sum, err
	}
	pk := make([]*dataplane.Packet, 32)
	id := uint64(1)
	// linkLocal sends the link-local frames due after elapsed of the
	// rate schedule: a host's (or the upstream switch's) own frames, which
	// the segment consumes and the appliances forward unmeasured.
	linkLocal := func(elapsed time.Duration) {
		if cfg.LinkLocalRate > 0 && float64(sum.LinkLocalSent) < cfg.LinkLocalRate*elapsed.Seconds() {
			if l0.A().Alloc(pk[:1]) == 1 {
				pk[0].Data = dataplane.LinkLocalFrame(pk[0].Data[:cap(pk[0].Data)], 1<<40+sum.LinkLocalSent)
				if l0.A().TxBurst(pk[:1]) == 1 {
					sum.LinkLocalSent++
				} else {
					l0.A().Free(pk[:1])
				}
			}
		}
	}
	// frames sends up to want generated frames (as many as the pool has
	// buffers for) and reports whether the link refused some of them.
	frames := func(want int) (refused bool) {
		n := l0.A().Alloc(pk[:want])
		for i := 0; i < n; i++ {
			pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], id+uint64(i))
			if len(cfg.DSCP) > 0 {
				setDSCP(pk[i].Data, cfg.DSCP[gen.Flow(id+uint64(i))%len(cfg.DSCP)])
			}
		}
		m := l0.A().TxBurst(pk[:n])
		if m < n {
			l0.A().Free(pk[m:n])
		}
		id += uint64(m)
		return m < n
	}
	// drained reports whether every frame sent has left the segment
	// (Lost includes control frames, sunk duplicates and injected frames:
	// at worst the wait is shorter).
	imp := l1.B().Impairer()
	drained := func() bool {
		st := imp.Stats()
		return sunk.Load()+st.Lost+st.Consumed >= id-1+sum.LinkLocalSent
	}
	// The sender of the measured direction stops first, so its last
	// interval is on the wire before the receiver settles.
	drain := cfg.Interval + time.Second
	var err1, err2 error
	var gone []*appliance.Appliance // appliance #1 before a restart: its counters count too
	if clk != nil {
		if err1, err2, err = simulateDemo(&cfg, clk, a1, a2, simWorld{
			linkLocal: linkLocal, frames: frames, generated: func() uint64 { return id - 1 }, sink: sinkBurst, drained: drained, drain: drain,
			restart: func() (*appliance.Appliance, error) {
				gone = append(gone, a1)
				c := c1
				c.Session = simSession(cfg.Seed, 3)
				var err error
				a1, err = appliance.New(c)
				return a1, err
			},
			lines: func(final bool) {
				for len(simLines) > 0 {
					l := simLines[0]
					t, ok := lookup(l.r)
					k := uint64(l.r.Interval)
					if !ok && !final && !waited[k] && time.Duration(clk.Clock()-l.at) < truthWait {
						return // its truth may still come: the lines after it wait too, in order
					}
					if !ok {
						waited[k] = true
					}
					simLines = simLines[1:]
					deliver(l.r, t, ok)
				}
			}}); err != nil {
			return sum, err
		}
	} else {
		a2.Start()
		a1.Start()
		stopSink := make(chan struct{})
		sinkDone := make(chan struct{})
		go func() {
			defer close(sinkDone)
			for {
				if sinkBurst() > 0 {
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
		origin := time.Now() // the hooks' clock; start moves past pauses for the rate schedule
		start := origin
		end := start.Add(cfg.Duration)
		restarted := cfg.RestartAt <= 0
		var junk uint64
		for now := time.Now(); now.Before(end); now = time.Now() {
			if !restarted && now.Sub(origin) >= cfg.RestartAt {
				// The sender appliance dies without a graceful stop of its
				// interval (its control side is gone), and comes back.
				restarted = true
				a1.Stop(0)
				gone = append(gone, a1)
				if a1, err = appliance.New(c1); err != nil {
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
			linkLocal(now.Sub(start))
			if frames(want) {
				time.Sleep(20 * time.Microsecond)
			}
		}
		// Let the segment drain, then stop both appliances gracefully.
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !drained(); time.Sleep(time.Millisecond) {
		}
		err1 = a1.Stop(drain)
		err2 = a2.Stop(drain)
		close(stopSink)
		<-sinkDone
	}
	sum.Generated = id - 1
	sum.Sunk = sunk.Load()
	sum.FlowReordered = flowReordered.Load()
	sum.ImpairLost = truth.LostData() // data frames only: a lost control frame is no traffic
	sum.TruthTooLate = tooLate(truth)
	for _, a := range append(gone, a1, a2) {
		s, r := a.LaneTotals()
		sum.ApplianceTxDropped += s.TxDropped.Load() + r.TxDropped.Load()
	}
	for _, a := range append(gone, a1) {
		s1, _ := a.LaneTotals()
		sum.ExcludedSent += s1.Excluded.Load()
	}
	_, r2 := a2.LaneTotals()
	sum.ExcludedReceived = r2.Excluded.Load()
	sum.EndsMisrouted = r2.EndsMisrouted.Load()
	for _, p := range a2.QueueLanes() {
		sum.QueueRecorded = append(sum.QueueRecorded, p[1].Stats.Recorded.Load())
		sum.QueueFlips = append(sum.QueueFlips, p[1].Stats.Flips.Load())
	}
	st := imp.Stats()
	sum.Duplicated, sum.Reordered, sum.Remarked, sum.Consumed, sum.Injected = st.Duplicated, st.Reordered, st.Remarked, st.Consumed, st.Injected
	if ctlIntervals > 0 {
		sum.ControlBytesPerInt = ctlBytes / ctlIntervals
	}
	return sum, errors.Join(err1, err2)
}

// setDSCP marks an untagged IPv4 or IPv6 frame with DSCP d (ECN kept),
// fixing the IPv4 header checksum.
func setDSCP(b []byte, d uint8) {
	if len(b) < 14+40 {
		return
	}
	switch binary.BigEndian.Uint16(b[12:]) {
	case 0x0800:
		b[15] = d<<2 | b[15]&3
		h := b[14:34]
		h[10], h[11] = 0, 0
		var s uint32
		for i := 0; i < 20; i += 2 {
			s += uint32(h[i])<<8 | uint32(h[i+1])
		}
		for s>>16 != 0 {
			s = s&0xffff + s>>16
		}
		binary.BigEndian.PutUint16(h[10:], ^uint16(s))
	case 0x86DD:
		tc := (b[14]<<4|b[15]>>4)&3 | d<<2
		b[14] = 0x60 | tc>>4
		b[15] = tc<<4 | b[15]&0x0f
	}
}

// lostTimes keeps the send times of the data packets the impairment stage
// lost (their truth records), for the true microbursts of the demo's lines.
type lostTimes struct {
	mu sync.Mutex
	tx []uint64 // in send order
}

// hook records lost data frames (not control frames; not link-local
// frames, which no class of the demo measures, when there are any), then
// calls next.
func (l *lostTimes) hook(next dataplane.TruthFunc, linkLocal bool) dataplane.TruthFunc {
	return func(frame []byte, r *dataplane.TruthRecord) {
		if r.Flags&dataplane.TruthLost != 0 && !control.IsControlFrame(frame) &&
			!(linkLocal && len(frame) >= 6 && frame[0]&1 == 1) {
			l.mu.Lock()
			l.tx = append(l.tx, r.TxNs)
			l.mu.Unlock()
		}
		if next != nil {
			next(frame, r)
		}
	}
}

// microbursts are the true microbursts of r's interval: the lost packets
// sent within [StartNs, EndNs) grouped as the appliance groups its own.
// Losses sent before the interval are forgotten (lines come in interval
// order).
func (l *lostTimes) microbursts(r *report.Interval, gapNs uint64, minLosses int) []report.Microburst {
	l.mu.Lock()
	defer l.mu.Unlock()
	var in []synopsis.LossTime
	keep := 0
	for _, t := range l.tx {
		if t >= uint64(r.StartNs) && t < uint64(r.EndNs) {
			in = append(in, synopsis.LossTime{SendNs: t, Estimates: 1})
		}
		if t+2*uint64(r.EndNs-r.StartNs) >= uint64(r.StartNs) {
			l.tx[keep] = t
			keep++
		}
	}
	l.tx = l.tx[:keep]
	sort.Slice(in, func(a, b int) bool { return in[a].SendNs < in[b].SendNs })
	out := []report.Microburst{}
	for _, m := range synopsis.DetectMicrobursts(in, gapNs, minLosses) {
		out = append(out, report.Microburst{StartNs: m.StartNs, EndNs: m.EndNs, Losses: m.Losses})
	}
	return out
}

// truthFunc is the stage's truth recording, and hook's when set.
func truthFunc(t demoTruth, hook dataplane.TruthFunc) dataplane.TruthFunc {
	if hook == nil {
		return t.Record
	}
	return func(frame []byte, r *dataplane.TruthRecord) {
		t.Record(frame, r)
		hook(frame, r)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// AssumedDelay is the demo's confidence range before an interval
// shows a wider one (Run says why).
var AssumedDelay = appliance.DelayRange{MinNs: -10_000_000, MaxNs: 100_000_000}

// Bounds is the compact encoding's delay bounds (the wire range) for
// a given largest one-way delay.
func Bounds(maxDelay time.Duration) synopsis.CompactBounds {
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

// sampleTruth puts the demo's exact truth on a sample line: the true
// p50 … p99.9 of the class's delivered packets of the interval
// (true_quantiles, the ⌈NP⌉-th smallest delay, as analyze --truth) and
// the class's true loss rate. The truth does not know which packets the
// sample kept, so the line gets no true_lost: its lost is of the sample.
func sampleTruth(r *report.Interval, ct *dataplane.ClassTruth) {
	r.TrueLost, r.TrueMeanNs, r.TrueStddevNs = nil, nil, nil
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	if n := ct.Delivered + ct.Lost; n > 0 {
		r.Extra["true_loss_rate"] = float64(ct.Lost) / float64(n)
	}
	if q := analyze.TrueQuantiles(append([]int64(nil), ct.Delays...)); q != nil {
		r.Extra["true_quantiles"] = q
	}
}

// flowTruth puts the demo's exact quantiles of the flow's delivered
// packets of the interval, over every class (cs), on an LDS line that
// carries sampled quantiles (true_quantiles, as a sample line's).
func flowTruth(r *report.Interval, cs []dataplane.ClassTruth) {
	fh, ok := r.Extra["flow_hash"].(uint64)
	if _, has := r.Extra["quantiles"]; !ok || !has {
		return
	}
	var ds []int64
	for i := range cs {
		ds = cs[i].FlowDelays(ds, fh)
	}
	if q := analyze.TrueQuantiles(ds); q != nil {
		r.Extra["true_quantiles"] = q
	}
}
