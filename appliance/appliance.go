package appliance

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/ring"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// Config is one appliance: two ports, which of them faces the measured
// segment, and what to measure.
type Config struct {
	PortA, PortB dataplane.Port
	Segment      string // "a" or "b": the port facing the measured segment
	Interval     time.Duration
	Syn          dataplane.SynConfig
	Classifier   *classifier.Classifier
	Key          []byte // pre-shared HMAC key; nil with Insecure
	Insecure     bool
	MTU          int // segment IP MTU for control frames; 0: 1500
	// ControlPriority tags the synopsis fragments, parity fragments,
	// requests and replies this appliance sends with an 802.1p priority
	// (control.Priority); the zero value sends them untagged. End markers
	// and Hellos always go untagged, in the data's queue.
	ControlPriority control.Priority
	// Bounds are the delays the compact LDA encoding carries (the wire
	// range, --min-delay/--max-delay): an interval whose buckets leave
	// them is invalid. Zero: synopsis.DefaultCompactBounds.
	Bounds synopsis.CompactBounds
	// Assumed is the delay range the per-flow (LDS) bounds and the
	// crossing windows assume before the interval shows any wider
	// (DelayRange); zero: DefaultAssumedDelay, clamped into Bounds.
	Assumed   DelayRange
	Conf      float64 // confidence of mean_ci_ns; 0: 0.98
	Burst     int
	Cores     []int // worker cores: none (unpinned, one worker), one, or two (one per direction); with queues none or one per queue pair
	IdleSleep time.Duration
	Clock     func() uint64 // ns since the Unix epoch; nil: CLOCK_REALTIME
	ClockName string        // reported; "CLOCK_REALTIME" by default
	// Now is the control side's clock: its timers (pairing and repair
	// timeouts, Stop's waits, the pacing of End markers) and the times
	// it records. nil: time.Now. A run on simulated time sets it and
	// Clock from the same simulated clock, so the control side and the
	// lanes agree on what time it is.
	Now func() time.Time
	// Session is the sending session's id; 0 (the normal case) draws a
	// random one. A run on simulated time gives one drawn from its seed:
	// every random choice of such a run comes from the seed.
	Session uint64
	// Reports receive every report line the appliance produces.
	Reports func(*report.Interval)
	Log     zerolog.Logger
	// OnWorkerStart/OnWorkerExit run on each worker thread (DPDK lcore
	// registration).
	OnWorkerStart func() error
	OnWorkerExit  func()
	// ControlCopies sends every control frame of an interval (End marker,
	// Hello, fragments) this many times, for lossy segments: an interval
	// then fails only if every copy of one frame is lost, at ControlCopies
	// times the control traffic. 0 means 1. End markers go at least
	// MinEndCopies times whatever it says (endCopies).
	ControlCopies int
	// ControlParity is the least frame loss rate (0 … 0.9) the parity
	// fragments of every part are sized for (fec.go); the sender sizes
	// them for the control loss its peer reports when that is higher. 0:
	// the reports alone (none until the first arrives); negative: no
	// parity.
	ControlParity float64
	// BudgetBytes, or else BudgetFraction of the data bytes the sender
	// recorded in the interval, bounds the control bytes of an interval,
	// all copies counted; both 0: no bound. The LDA always goes; the RDA
	// and the LDS shrink, then are left out, in the order budget.go states.
	BudgetBytes    int
	BudgetFraction float64
	// AdaptRDA ships each interval's RDA folded to the cells its packets
	// need at RDAProblemRate (lost plus reordered, 0: DefaultRDAProblemRate); AdaptLDS
	// ships the LDS folded to the columns the flows it saw need. Both
	// ends agree without a handshake: the encoding carries the shape
	// and the receiver folds its own copy alike. Off, the configured
	// shapes are shipped (the budget may still shrink them).
	AdaptRDA, AdaptLDS bool
	RDAProblemRate     float64
	// AdaptSample ships each class's trajectory sample (Syn.Sample) cut
	// to the level whose encoding fits its share of the control budget
	// (sample.go); off, the sample goes as recorded, whatever it costs.
	AdaptSample bool
	// AdaptLDA ships each interval's LDA of each class folded to the rows
	// its banks' packets fill (synopsis.LDA.ShipRows: a power of two
	// about the packets a bank recorded, at least LDAShipFloorRows, at
	// most the recorded rows) within the LDA's share of the control
	// budget (budget.go); the receiver folds its own copy to the shape
	// the encoding carries. Off, Syn.LDA's shape is shipped as it is.
	AdaptLDA bool
	// TopFlows is how many flows (largest first) the LDS reports per
	// interval; 0: 10.
	TopFlows int
	// PairTimeout is how long a receiver copy waits for the sender's
	// synopses before the interval is reported invalid; 0: interval + 2 s.
	PairTimeout time.Duration
	// MaxClockSkew bounds how far the signed time of the frame that starts
	// a peer's session may lie from our clock (docs/protocol.md, threat
	// model); 0: control.DefaultMaxClockSkew (1 s).
	MaxClockSkew time.Duration
	// MaxStampErr is the fixed part of the stamping-error limit: an
	// interval whose timestamps may be off, on average, by more than
	// MaxStampErr + 10 % of its mean is reported invalid (stamps.go).
	// 0: DefaultMaxStampErr.
	MaxStampErr time.Duration
	// LastReported is, per direction ("a>b", "b>a"), the last interval an
	// earlier run of this appliance reported (run reads it back from its
	// --report file). The receiver reports the intervals after it that
	// ended before it started invalid with ReasonNotRunning, before its
	// first line: a restart leaves no interval without a line, even when
	// the earlier run was killed and could not say so itself.
	LastReported map[string]uint64
	// MicroburstGap > 0 reports the microbursts of every interval
	// (microburst.go): its losses with a send time, those closer than
	// MicroburstGap grouped, groups of at least MicroburstMin (0: 5)
	// listed. 0: DefaultMicroburstGap; negative: off.
	MicroburstGap time.Duration
	MicroburstMin int

	// QueuesA and QueuesB, when set, are the queues of PortA and PortB
	// (as many of each, ≥ 2): one sender and one receiver lane per queue
	// pair, one worker each (queues.go). PortA and PortB stay the ports
	// whose counters are read.
	QueuesA, QueuesB []dataplane.Port

	// TapA and TapB, when set, capture what port a and port b receive
	// (every lane reading the port copies its bursts into a ring of the
	// tap; see dataplane.Tap). The caller starts and closes them.
	TapA, TapB *dataplane.Tap
}

// Direction ids on the wire: data flowing from port a to port b is
// direction 1 at both appliances of a segment (wire them the same way
// round: upstream on a), b to a is 2.
const (
	DirAtoB uint16 = 1
	DirBtoA uint16 = 2
)

// DirectionName is the report's "direction" for a direction id.
func DirectionName(d uint16) string {
	if d == DirAtoB {
		return "a>b"
	}
	return "b>a"
}

// Appliance is a running (or ready) bump in the wire with its control side.
type Appliance struct {
	cfg     Config
	desc    string // describeConfig(&cfg): in the Hello and every report line
	sendDir uint16
	recvDir uint16
	lanes   [2]*dataplane.Lane // [0] sender lane (toward the segment), [1] receiver lane
	segPort dataplane.Port     // the port facing the measured segment
	workers []*dataplane.Worker
	sbuf    synBuffer
	rbuf    synBuffer
	qlanes  [][2]*dataplane.Lane // per queue: sender and receiver lane (lanes is queue 0's)
	epoch   atomic.Uint64
	// injectGap: the least time between the control frames the sender
	// lane injects, ns (pacing.go); set at each shipment.
	injectGap atomic.Uint64
	// peerConfig is the newest configuration mismatch with the peer
	// (PeerConfigMismatch), for run's watchdog.
	peerConfig atomic.Pointer[PeerMismatch]
	endrs      []*control.EndReader // the receiver lanes': count frames that fail the tag there
	sender     *control.Sender
	inject     *ring.SPSC[[]byte]
	toCtl      []*dataplane.FrameQueue // one per receiver lane
	receiver   *control.Receiver
	ctl        *controller
	stop       chan struct{}
	done       chan struct{}
	life       sync.Mutex // Start against Stop
	state      lifeState
	stopOnce   sync.Once
	stopErr    error
	// sim: the appliance runs on simulated time, driven by its caller
	// (simulated.go); nil: its own workers and control goroutine.
	sim *simDrive
}

// Limits New enforces, for a command to validate its flags against.
const (
	// MinInterval is the shortest interval: the control side drains each
	// lane's idle copy every ms, and an interval must leave it time to
	// (see minFlipGap).
	MinInterval = 10 * time.Millisecond
	// MinEndCopies is the fewest copies of each End marker a sender lane
	// sends. A lost End marker costs more than its own interval (the
	// receiver's copy then spans two intervals) and it carries the
	// interval's per-class counts, the loss that stays measured when every
	// synopsis fragment is lost; a copy costs one frame of about 110 bytes
	// an interval. With uniform loss p, four copies back to back fail with
	// p⁴: 1.5 % of intervals on a segment dropping 35 % (two copies: 12 %).
	MinEndCopies = 4
	// DefaultRDAProblemRate is Config.RDAProblemRate's default: the share
	// of an interval's packets lost or reordered that the RDA's cells are
	// sized for.
	DefaultRDAProblemRate = 0.01
	// MaxControlCopies bounds Config.ControlCopies: each copy costs the
	// whole control traffic again.
	MaxControlCopies = 4
)

// lifeState is where the appliance is in its one life: new, running,
// stopped (for good: a stopped appliance never starts).
type lifeState uint8

const (
	stateNew lifeState = iota
	stateRunning
	stateStopped
)

// ErrStopped is Start's error for an appliance already stopped.
var ErrStopped = errors.New("appliance: stopped")

// New builds the appliance from cfg: defaults first (WithDefaults), then
// validation (Validate), then construction — so a library caller that
// leaves a setting zero gets what `ldafwd run` gets without its flag. Ports
// are opened by the caller; the appliance does not close them.
func New(cfg Config) (*Appliance, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	nq, _ := queueCount(&cfg) // validated
	a := &Appliance{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	segPort, otherPort := cfg.PortB, cfg.PortA
	a.sendDir, a.recvDir = DirAtoB, DirBtoA
	if cfg.Segment == "a" {
		segPort, otherPort = cfg.PortA, cfg.PortB
		a.sendDir, a.recvDir = DirBtoA, DirAtoB
	}
	a.segPort = segPort
	// Memory follows the traffic: flow tables and timestamp caches start
	// small and grow between intervals (ReserveFlows, ReserveCache). The
	// sender's RDA keeps a timestamp cache like the receiver's: the
	// receiver asks it for the timestamps of the packets lost in the
	// segment (repair.go).
	if cfg.Syn.LDS != nil {
		l := *cfg.Syn.LDS
		l.FlowsGrow = true
		l.Cols = foldableCols(l.Cols)
		cfg.Syn.LDS = &l
	}
	sbufs, rbufs, err := a.newBuffers(cfg.Syn, nq)
	if err != nil {
		return nil, err
	}
	for _, d := range append(sbufs, rbufs...) {
		for _, set := range d.Sets {
			for _, r := range set.RDA {
				// Start at cacheStartPackets shared by the classes; the
				// controller then sizes each copy to its traffic
				// (ReserveCache).
				if c := r.Cache(); c != nil {
					c.Reserve(cacheStartPackets / uint64(len(set.RDA)))
				}
			}
		}
	}
	hash, desc := configHash(&cfg), describeConfig(&cfg)
	a.desc = desc
	parts := []control.PartKey{}
	for m := 0; m < cfg.Syn.Classes; m++ {
		parts = append(parts, control.PartKey{MEC: uint16(m), Kind: control.KindLDA})
		if cfg.Syn.RDA != nil {
			parts = append(parts, control.PartKey{MEC: uint16(m), Kind: control.KindRDA})
		}
	}
	if cfg.Syn.Sample != nil {
		for m := 0; m < cfg.Syn.Classes; m++ {
			parts = append(parts, control.PartKey{MEC: uint16(m), Kind: control.KindSample})
		}
	}
	parts = append(parts, clockPart) // this end's mean of the direction it receives (clock.go)
	if cfg.Syn.LDS != nil {
		parts = append(parts, control.PartKey{MEC: 0, Kind: control.KindLDS})
	}
	scfg := control.SenderConfig{Session: cfg.Session, Key: cfg.Key, Insecure: cfg.Insecure, MTU: cfg.MTU, Priority: cfg.ControlPriority, Direction: a.sendDir, NumberAtSend: true, // shipper.handOver
		Hello: control.Hello{IntervalNs: cfg.Interval.Nanoseconds(), ConfigHash: hash, Lanes: uint16(nq), Clock: cfg.ClockName,
			MECs: cfg.Classifier.Names(), Parts: parts, Config: desc}}
	if a.sender, err = control.NewSender(scfg); err != nil {
		// A Hello too long for a small MTU goes without its description:
		// the hash still guards the match, the reason just cannot name
		// the setting.
		scfg.Hello.Config = ""
		if a.sender, err = control.NewSender(scfg); err != nil {
			return nil, err
		}
	}
	rcfg := control.ReceiverConfig{Key: cfg.Key, Insecure: cfg.Insecure, Direction: a.recvDir,
		ConfigHash: hash, Config: desc, Timeout: cfg.PairTimeout.Nanoseconds(), MaxClockSkew: cfg.MaxClockSkew.Nanoseconds()}
	if a.receiver, err = control.NewReceiver(rcfg); err != nil {
		return nil, err
	}
	if a.inject, err = ring.NewSPSC[[]byte](1024); err != nil {
		return nil, err
	}
	segQ, otherQ := []dataplane.Port{segPort}, []dataplane.Port{otherPort}
	if nq > 1 {
		segQ, otherQ = cfg.QueuesB, cfg.QueuesA
		if cfg.Segment == "a" {
			segQ, otherQ = cfg.QueuesA, cfg.QueuesB
		}
	}
	segTap, otherTap := cfg.TapB, cfg.TapA
	if cfg.Segment == "a" {
		segTap, otherTap = cfg.TapA, cfg.TapB
	}
	for q := 0; q < nq; q++ {
		segRing, err := segTap.Ring(cfg.Burst)
		if err != nil {
			return nil, err
		}
		otherRing, err := otherTap.Ring(cfg.Burst)
		if err != nil {
			return nil, err
		}
		// Queue q's sender lane writes End markers as lane q; its receiver
		// lane cuts at the peer's lane-q End only (with one queue, at any).
		// The worker's End check follows the same session rule on the same
		// frames and receive times as the receiver.
		endw, err := a.sender.NewEndWriter(uint16(q))
		if err != nil {
			return nil, err
		}
		endr, err := control.NewEndReaderConfig(rcfg)
		if err != nil {
			return nil, err
		}
		if nq > 1 {
			endr.OnlyLane(uint16(q))
		}
		a.endrs = append(a.endrs, endr)
		guard, err := control.NewControlCheck(cfg.Key, cfg.Insecure)
		if err != nil {
			return nil, err
		}
		toCtl, err := dataplane.NewFrameQueue(1024, 9216+18)
		if err != nil {
			return nil, err
		}
		a.toCtl = append(a.toCtl, toCtl)
		var inject *ring.SPSC[[]byte]
		if q == 0 {
			inject = a.inject // the control side's frames leave on queue 0
		}
		var pair [2]*dataplane.Lane
		pair[0], err = dataplane.NewLane(dataplane.LaneConfig{Rx: otherQ[q], Tx: segQ[q], Role: dataplane.RoleSender, Burst: cfg.Burst,
			Clock: cfg.Clock, Classifier: cfg.Classifier, Buffer: sbufs[q], Epoch: &a.epoch, End: endw, EndCopies: endCopies(cfg.ControlCopies), Inject: inject, InjectGap: &a.injectGap, Guard: guard, Tap: otherRing})
		if err != nil {
			return nil, err
		}
		pair[1], err = dataplane.NewLane(dataplane.LaneConfig{Rx: segQ[q], Tx: otherQ[q], Role: dataplane.RoleReceiver, Burst: cfg.Burst,
			Clock: cfg.Clock, Classifier: cfg.Classifier, Buffer: rbufs[q], EndReader: endr, ToControl: toCtl,
			Queue: q, Queues: nq, Tap: segRing})
		if err != nil {
			return nil, err
		}
		a.qlanes = append(a.qlanes, pair)
	}
	a.lanes = a.qlanes[0]
	wcfg := dataplane.WorkerConfig{IdleSleep: cfg.IdleSleep, OnStart: cfg.OnWorkerStart, OnExit: cfg.OnWorkerExit}
	if nq == 1 {
		a.workers, err = dataplane.NewWorkers(a.lanes, cfg.Cores, wcfg)
	} else {
		a.workers, err = dataplane.NewQueueWorkers(a.qlanes, cfg.Cores, wcfg)
	}
	if err != nil {
		return nil, err
	}
	a.ctl = newController(a)
	return a, nil
}

// closeWait bounds how long Stop lets the sender lane close the interval of
// the frames forwarded during the drain and ship it.
const closeWait = 200 * time.Millisecond

// foldableCols rounds an LDS's columns up to a multiple of 2^j, the
// largest with 2^j ≤ cols/16, so the control budget can fold it (halve its
// columns) j times, down to about 16 columns; it adds under 1/16 to the
// sketch. Both ends round alike.
func foldableCols(cols int) int {
	step := 1
	for step*2*16 <= cols {
		step *= 2
	}
	return (cols + step - 1) / step * step
}

// configHash names the synopsis configuration both ends must share: its
// description, and every field of the configurations in case one is not
// described. The RDA's timestamp cache budget is left out: each end may
// size its own (coordinated sampling reconciles them).
func configHash(cfg *Config) uint64 {
	var rda *synopsis.RDAConfig
	if cfg.Syn.RDA != nil {
		r := *cfg.Syn.RDA
		r.CacheBudget = 0
		rda = &r
	}
	s := fmt.Sprintf("%s|%+v|%+v|%+v", describeConfig(cfg), cfg.Syn.LDA, rda, cfg.Syn.LDS)

	return xxhash.Sum64String(s) | 1
}

// describeConfig is the configuration both ends must share as
// space-separated key=value items. The Hello carries it, so a receiver
// whose configuration differs names the setting in its report reason.
func describeConfig(cfg *Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "interval=%v mecs=%s lda=", cfg.Interval, strings.Join(cfg.Classifier.Names(), ","))
	for i, bk := range cfg.Syn.LDA.Banks {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d", bk.Rows, bk.SampleLog2)
	}
	fmt.Fprintf(&b, " lda-digest=%v rda=", cfg.Syn.LDA.Digest)
	if r := cfg.Syn.RDA; r != nil {
		fmt.Fprintf(&b, "%dx%d", r.Banks, r.Cells)
	} else {
		b.WriteString("off")
	}
	b.WriteString(" lds=")
	if l := cfg.Syn.LDS; l != nil {
		fmt.Fprintf(&b, "%dx%d lds-cells-per-flow=%d lds-flow-table=%d lds-hold-rate=%g lds-row-rates=", l.Rows, l.Cols, l.CellsPerFlow, l.MaxFlows, l.HoldRate)
		if l.RowRates == nil {
			b.WriteString("all")
		}
		for i, r := range l.RowRates {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%.4g", r)
		}
	} else {
		b.WriteString("off")
	}
	// Only when on, so that a configuration without it is described as
	// before. The two ends' levels and capacities may differ: matching
	// cuts both samples to the deeper level.
	if cfg.Syn.Sample != nil {
		b.WriteString(" sample=on")
	}
	// Last, so that a peer from before it was named sees one extra
	// setting: "identity: sender none, ours 2".
	fmt.Fprintf(&b, " identity=%d", classifier.IdentityRevision)
	return b.String()
}

// SendDirection and RecvDirection are the direction ids this appliance
// sends and receives measurements for.
func (a *Appliance) SendDirection() uint16 { return a.sendDir }
func (a *Appliance) RecvDirection() uint16 { return a.recvDir }

// PeerMismatch is an interval the peer's synopsis configuration made
// unusable: when it was seen and the settings that differ.
type PeerMismatch struct {
	At       time.Time
	Interval uint64
	Detail   string   // "interval: sender 1s, ours 200ms; lda: …"
	Settings []string // the settings' names: interval, lda, …
}

// PeerConfigMismatch is the newest configuration mismatch with the peer,
// or nil if none was seen. Safe from any goroutine.
func (a *Appliance) PeerConfigMismatch() *PeerMismatch { return a.peerConfig.Load() }

// Lanes returns the sender and receiver lanes (for counters).
func (a *Appliance) Lanes() (sender, receiver *dataplane.Lane) { return a.lanes[0], a.lanes[1] }

// Session is the sender's session id.
func (a *Appliance) Session() uint64 { return a.sender.Session() }

// ControlCounters are the receiver's control-frame counters.
// The worker forwards a frame that does not authenticate as a user's
// without handing it to the receiver: those it parsed as control frames
// are added to BadTag (and PeerInsecure, PeerKeyed) here, so a wrong key
// or an insecure/keyed mismatch shows in the counters and the watchdog.
func (a *Appliance) ControlCounters() control.Counters {
	c := a.receiver.Counters()
	for _, r := range a.endrs {
		all, ins, keyed := r.Unauthenticated()
		c.BadTag += all
		c.PeerInsecure += ins
		c.PeerKeyed += keyed
	}
	return c
}

// Start starts the workers and the control goroutine. A worker that
// cannot pin itself or start (DPDK lcore registration) is an error: the
// workers already started are stopped and nothing runs.
func (a *Appliance) Start() error {
	a.life.Lock()
	defer a.life.Unlock()
	switch a.state {
	case stateStopped:
		return ErrStopped
	case stateRunning:
		return errors.New("appliance: already started")
	}
	now := a.cfg.Clock()
	a.epoch.Store(now / uint64(a.cfg.Interval.Nanoseconds()))
	a.ctl.startAt(now)
	for _, w := range a.workers {
		if err := w.Start(); err != nil {
			for _, v := range a.workers {
				_ = v.Close() // the started ones stop; the rest never start
			}
			a.state = stateStopped
			return fmt.Errorf("appliance: %w", err)
		}
	}
	a.state = stateRunning
	go a.ctl.run()
	a.cfg.Log.Info().Str("segment", a.cfg.Segment).Dur("interval", a.cfg.Interval).Str("clock", a.cfg.ClockName).
		Uint64("session", a.sender.Session()).Bool("insecure", a.cfg.Insecure).Stringer("control_priority", a.cfg.ControlPriority).Msg("appliance started")
	return nil
}

// Stop ends the measurement gracefully: the sender closes its current
// interval (End marker, synopses sent in-band), the control side waits up
// to drain for the last reports and, while the peer is alive, for the
// peer's End of the receiver's interval in progress; then the sender lane closes one more
// interval around the frames forwarded meanwhile (its End marker tells the
// peer where they end), the workers drain their buffers and stop, and the
// control side reports what it still holds — the receiver's interval in
// progress included, invalid with the reason. Frames keep being forwarded
// until the very end.
//
// Stop is the appliance's one stop path: it may be called any number of
// times and from several goroutines at once (every call returns once the
// appliance has stopped, with the same error); Stop before Start (or after
// a failed Start) returns at once, and the appliance then never starts.
func (a *Appliance) Stop(drain time.Duration) error {
	if a.sim != nil {
		return errSimStop
	}
	a.stopOnce.Do(func() {
		a.life.Lock()
		was := a.state
		a.state = stateStopped
		a.life.Unlock()
		if was != stateRunning {
			for _, w := range a.workers {
				_ = w.Close() // never started (or stopped by a failed Start): now never will
			}
			return
		}
		// The control side closes the sender's interval through the
		// interval clock (so there is exactly one End marker for it), ships
		// it, and collects the peer's; it reports what is still missing as
		// invalid. Each wait is a message to the control goroutine, which
		// ends it when its condition holds after a step.
		deadline := a.now().Add(drain)
		a.ctl.await(a.ctl.finish(deadline))
		a.ctl.await(a.ctl.awaitPeerEnd(deadline))
		for _, w := range a.workers {
			w.EndInterval()
		}
		a.ctl.await(a.ctl.awaitIntervalsEnded())
		for _, w := range a.workers {
			if err := w.Close(); err != nil && a.stopErr == nil {
				a.stopErr = err
			}
		}
		// The workers are gone: the control side may read the receiver's
		// active copy.
		close(a.stop)
		<-a.done
		a.logStopped()
	})
	return a.stopErr
}

// logStopped logs the appliance's counters once it has stopped.
func (a *Appliance) logStopped() {
	s, r := a.laneTotals()
	cc := a.receiver.Counters()
	rc := a.RepairCounters()
	a.cfg.Log.Info().Uint64("sent_recorded", s.Recorded.Load()).Uint64("received_recorded", r.Recorded.Load()).
		Uint64("tx_dropped", s.TxDropped.Load()+r.TxDropped.Load()).
		Uint64("sender_tx_dropped", s.TxDropped.Load()).Uint64("receiver_tx_dropped", r.TxDropped.Load()).
		Uint64("control_passed", s.ControlPassed.Load()+r.ControlPassed.Load()).Uint64("control_blocked", s.ControlBlocked.Load()).
		Uint64("excluded_sent", s.Excluded.Load()).Uint64("excluded_received", r.Excluded.Load()).Uint64("ends_sent", s.EndsSent.Load()).
		Uint64("ends_seen", r.EndsSeen.Load()).Uint64("ends_ignored", r.EndsIgnored.Load()).
		Uint64("control_injected", s.Injected.Load()).Uint64("inject_failed", s.InjectFailed.Load()).
		Uint64("sender_fast_bursts", s.FastBursts.Load()).Uint64("receiver_fast_bursts", r.FastBursts.Load()).
		Uint64("control_stripped", r.ControlStripped.Load()).Uint64("control_queue_full", r.ControlQueueFull.Load()).
		Uint64("ctl_accepted", cc.Accepted).Uint64("ctl_bundles", cc.Bundles).Uint64("ctl_failures", cc.Failures).
		Uint64("ctl_late", cc.Late).Uint64("ctl_too_old", cc.TooOld).Uint64("ctl_out_of_order", cc.OutOfOrder).Uint64("ctl_bad_tag", cc.BadTag).Uint64("ctl_replayed", cc.Replayed).
		Uint64("ctl_rebuilt", cc.Rebuilt).Uint64("ctl_rebuilt_fragments", cc.RebuiltFragments).
		Uint64("overruns", a.sbuf.Overruns()+a.rbuf.Overruns()).
		Uint64("rda_requests_sent", rc.RequestsSent).Uint64("rda_replies_accepted", rc.RepliesAccepted).Uint64("rda_repairs_given_up", rc.GivenUp).
		Uint64("rda_requests_answered", rc.RequestsAnswered).Uint64("rda_requests_refused", rc.RequestsRefused).
		Uint64("rda_replies_stray", rc.RepliesStray).Uint64("rda_replies_bad", rc.RepliesBad).Uint64("rda_replies_over_budget", rc.RepliesOverBudget).
		Uint64("rda_replies_expired", rc.RepliesExpired).Msg("appliance stopped")
}

// cacheStartPackets sizes the RDA timestamp caches at start, shared by
// the classes (TSCache.Reserve: room for twice as many, at least its
// 4 096-slot floor): the copies recorded into before the control side
// first sizes one to its traffic (the first two intervals) keep this
// room, and a cache that overflows samples, so those intervals repair
// only the sampled lost packets. 16 384 gives one class 65 536 slots
// (49 152 packets, 1 MiB, 1.5 MiB with flow hashes): the demo's 20 kpps,
// whose first interval on a loaded host carried 28 000 packets (the
// generator catching up), repairs from its first interval. Many classes
// start nearer the floor.
const cacheStartPackets = 16384

// endCopies is how many times a sender lane sends each End marker for
// Config.ControlCopies copies of the other control frames.
func endCopies(controlCopies int) int { return max(controlCopies, MinEndCopies) }

// now is the control side's clock (Config.Now). An appliance built
// without New (unit tests of the control side) has none: the wall clock.
func (a *Appliance) now() time.Time {
	if a.cfg.Now == nil {
		return time.Now()
	}
	return a.cfg.Now()
}
