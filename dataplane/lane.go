package dataplane

import (
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/ring"
)

// Role says what a lane measures.
type Role uint8

const (
	// RoleForward forwards without measuring (measurement off).
	RoleForward Role = iota
	// RoleSender forwards toward the segment port and records every frame
	// it transmits there, with its transmit timestamp, in the sender
	// synopses; it emits End markers and the control side's frames.
	RoleSender
	// RoleReceiver forwards frames arriving on the segment port, records
	// them with their receive timestamp, strips control frames and flips
	// its synopses at each End marker.
	RoleReceiver
)

func (r Role) String() string {
	switch r {
	case RoleSender:
		return "sender"
	case RoleReceiver:
		return "receiver"
	}
	return "forward"
}

// LaneConfig is one direction of the bump in the wire: frames received on
// Rx are transmitted on Tx.
type LaneConfig struct {
	Rx, Tx     Port
	Role       Role
	Burst      int    // frames per RxBurst/TxBurst; default 32
	DrainNs    uint64 // flush a partial tx buffer after this long, ns; default 100 µs
	TxRetries  int    // TxBurst attempts per flush; default 4
	StallNs    uint64 // drop buffered frames the tx port has taken nothing of for this long, ns; default 50 ms
	Clock      func() uint64
	Classifier *classifier.Classifier
	Buffer     *SynBuffer // synopses (sender and receiver roles)

	// Sender role.
	Epoch *atomic.Uint64     // the interval clock: the control side stores k+1 when interval k ends
	End   *control.EndWriter // builds End markers
	// EndCopies sends each End marker this many times back to back (each
	// with its own sequence number; the receiver flips on the first and
	// ignores the rest), so one lost frame does not cost two intervals on
	// a lossy segment. 0 means 1.
	EndCopies int
	Inject    *ring.SPSC[[]byte] // control frames from the control side, sent paced in-band
	Pace      int                // control frames injected per poll; default 4
	// InjectGap, when set and non-zero, is the least time between two
	// injected control frames (ns), one per poll at most: the control
	// side sets it from the data's frame rate (appliance/pacing.go), so
	// that control frames go interleaved with the data instead of in a
	// burst that a full queue takes only the first frame of.
	InjectGap *atomic.Uint64
	// Guard recognises authentic control frames of this appliance pair
	// arriving from upstream: they are dropped (ControlBlocked), never put
	// on the segment, where the peer would take a replay for our own.
	// Other frames of the control EtherType are users' and forwarded.
	Guard *control.ControlCheck

	// Receiver role.
	ToControl *FrameQueue        // stripped control frames, for the control side
	EndReader *control.EndReader // checks End markers (tag, direction, replay) before flipping; one per lane
	// Queue and Queues: this receiver lane reads queue Queue of a port of
	// Queues > 1 queues. It then checks the first frame of every burst
	// against SteerQueue and counts one steered elsewhere in the active
	// copy's Misrouted: the per-lane cut is exact only when both ends
	// steer alike (docs/protocol.md, "Several lanes").
	Queue, Queues int

	// Tap, if set, gets a copy of every burst Rx delivered, with its
	// receive timestamps, before anything else looks at it (a capture of
	// what the port receives, control frames included; see Tap). A
	// forwarding lane with a Tap takes bursts the ordinary way, not
	// through Forwarder.
	Tap *TapRing

	// NoFastPath keeps a measuring lane off its rx port's MeasureFastPath
	// (tests and instruction counts of the Go path).
	NoFastPath bool
}

// LaneStats are a lane's counters. The worker updates them once per burst
// (atomic adds, never per packet); anyone may read them.
type LaneStats struct {
	RxFrames, TxFrames atomic.Uint64
	RxBytes            atomic.Uint64
	TxDropped          atomic.Uint64 // users' frames the tx port refused for StallNs, freed
	ControlDropped     atomic.Uint64 // sender: own control frames (End, injected) the tx port refused for StallNs, freed
	Recorded           atomic.Uint64 // frames recorded in the synopses
	Malformed          atomic.Uint64 // frames with truncated/malformed headers (forwarded, measured as far as parsed)
	ControlStripped    atomic.Uint64 // receiver: control frames taken off the wire
	ControlQueueFull   atomic.Uint64 // receiver: stripped frames the control side had no room for
	ControlPassed      atomic.Uint64 // frames of the control EtherType that are not ours (a user's), forwarded unrecorded
	ControlBlocked     atomic.Uint64 // sender: authentic control frames arriving from upstream (a replay), dropped
	Excluded           atomic.Uint64 // link-local frames (STP, LLDP, ARP…) forwarded unrecorded: no MEC claims them (classifier.Measure)
	EndsSent           atomic.Uint64
	EndsFailed         atomic.Uint64 // End markers that found no tx buffer (the receiver sees a lost End)
	EndsSeen           atomic.Uint64 // receiver: authentic End markers that flipped
	EndsIgnored        atomic.Uint64 // receiver: authentic End markers not flipped on (old interval, duplicate, session not live)
	EndsMisrouted      atomic.Uint64 // receiver: authentic End markers of another lane (steered to the wrong queue), not flipped on
	Misrouted          atomic.Uint64 // receiver: sampled frames steered to another queue (LaneConfig.Queues)
	Injected           atomic.Uint64 // sender: control frames sent for the control side
	InjectFailed       atomic.Uint64
	Flips              atomic.Uint64
	MaxTxStampGapNs    atomic.Uint64 // sender: widest clock gap around a TxBurst (timestamp uncertainty), ns
	FastBursts         atomic.Uint64 // bursts received, measured and transmitted in one call of the rx port's MeasureFastPath
	PollStamped        atomic.Uint64 // receiver: recorded frames the rx port did not stamp (stamped by the lane, see pollStamp)
	MaxRxStampErrNs    atomic.Uint64 // receiver: widest uncertainty of a poll-stamped burst, ns
	_                  [64]byte      // keep the next lane's counters off this cache line
}

// Lane is one direction's run-to-completion state: preallocated burst
// arrays, the tx buffer, and the current interval. Only its worker touches
// it, except Stats.
type Lane struct {
	cfg   LaneConfig
	Stats LaneStats

	rxPkts     []*Packet
	tx         txBuffer // frames waiting to be transmitted
	lastTx     uint64
	maxTxGap   uint64
	txStamper  TxStamper       // Tx, when it reports its own transmit time
	txErr      TxStampErr      // Tx, when its transmit time has an uncertainty
	fwd        Forwarder       // Rx, when a forwarding lane can hand it whole bursts (ForwardTo)
	fast       MeasureFastPath // Rx, when a measuring lane can hand it whole bursts (SendMeasured)
	stallSince uint64          // when the tx port last refused frames without taking any, ns; 0: not stalled
	free       []*Packet       // frames to Free on Rx at the end of a poll
	one        [1]*Packet
	now        uint64 // the lane's latest clock reading, ns
	oneClass   bool   // the classifier has only the default MEC: Classify is always 0
	realtime   bool   // the clock is RealtimeClock (a receiver's fast path may poll-stamp in C)

	// Receiver stamps of frames the rx port did not stamp (see pollStamp).
	pollStamps bool   // read the clock before each RxBurst: the port does not stamp (or did not lately)
	rxLow      uint64 // clock read before the last RxBurst that emptied the rx queue, ns
	pollTS     uint64 // the poll stamp given to the current burst's unstamped frames
	fastLow    uint64 // sendFast: a clock reading after the queue's last full burst of the call, 0: none
	pollErr    uint64 // its uncertainty, ns
	maxRxErr   uint64

	curK    uint64 // sender: interval being recorded; receiver: last End's interval
	started bool
	closing bool // sender: interval curK ends as soon as the frames queued before its end are out
	probing bool // flush runs inside probeBehindOwn
	// ownRefusedLen: the shortest own frame the tx port was shown to
	// refuse while taking the frames behind it (probeBehindOwn); 0: none.
	// An own frame at least that long is probed at once, not after a
	// wait, so a port that will not take fragments of some size costs the
	// users' frames one wait, not one per fragment. It is forgotten when
	// the port takes an own frame that long.
	ownRefusedLen int
	// ownAside holds the own frames at the front that probeBehindOwn sets
	// aside: as many as an interval's control frames come in a row (the
	// End markers, the Hello, each part's fragments and parity), so the
	// probe reaches the users' frames behind them.
	ownAside            [64]*Packet
	closeK              uint64 // the interval clock's value that closes it
	intStart            uint64
	intFrames, intBytes uint64
	endBuf              []byte
	endClasses          []uint64 // the End marker's per-class counts, reused
	endFrame            control.Frame
	injectBuf           [1][]byte
	nextInject          uint64 // with InjectGap: the earliest time the next control frame goes
	injectIdle          bool   // with InjectGap: the last poll found the inject ring empty (inject: the next frames earn no credit for that time)
	meta                classifier.Meta
	parse               classifier.Level // as little as the synopses read (NewLane)
}

// Defaults for LaneConfig.
const (
	DefaultLaneBurst = 32
	DefaultDrainNs   = 100_000
	DefaultTxRetries = 4
	DefaultPace      = 4
	DefaultStallNs   = 50_000_000
	// MaxLaneBurst bounds LaneConfig.Burst: the largest burst every port
	// kind takes whole (the DPDK port's C arrays are sized dpdk.MaxBurst,
	// which a dpdk test holds to at least this).
	MaxLaneBurst = 512
)

// NewLane checks cfg and preallocates everything the loop needs.
func NewLane(cfg LaneConfig) (*Lane, error) {
	if cfg.Rx == nil || cfg.Tx == nil {
		return nil, errLane("rx and tx ports are required")
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultLaneBurst
	}
	if cfg.Burst < 1 || cfg.Burst > MaxLaneBurst {
		return nil, fmt.Errorf("dataplane: lane: burst %d: want 1..%d", cfg.Burst, MaxLaneBurst)
	}
	if cfg.DrainNs == 0 {
		cfg.DrainNs = DefaultDrainNs
	}
	if cfg.TxRetries == 0 {
		cfg.TxRetries = DefaultTxRetries
	}
	if cfg.Pace == 0 {
		cfg.Pace = DefaultPace
	}
	if cfg.StallNs == 0 {
		cfg.StallNs = DefaultStallNs
	}
	if cfg.Clock == nil {
		cfg.Clock = RealtimeClock
	}
	if cfg.Role != RoleForward {
		if cfg.Buffer == nil || cfg.Classifier == nil {
			return nil, errLane("a measuring lane needs synopses and a classifier")
		}
	}
	if cfg.Role == RoleSender && cfg.Epoch == nil {
		return nil, errLane("a sender lane needs the interval clock")
	}
	if cfg.Role == RoleReceiver && cfg.EndReader == nil {
		return nil, errLane("a receiver lane needs an End marker reader")
	}
	// The tx buffer holds two rx bursts (one waiting out back-pressure, one
	// new) plus injected control frames and every copy of an End marker.
	txCap := 2*cfg.Burst + cfg.Pace + max(cfg.EndCopies, 1)
	l := &Lane{
		cfg:        cfg,
		rxPkts:     make([]*Packet, cfg.Burst),
		tx:         newTxBuffer(txCap),
		free:       make([]*Packet, 0, cfg.Burst),
		endBuf:     make([]byte, 0, control.EndFrameLenFor(cfg.Classifier.NumClasses())),
		endClasses: make([]uint64, cfg.Classifier.NumClasses()),
	}
	l.oneClass = cfg.Classifier.NumClasses() == 1
	l.realtime = reflect.ValueOf(cfg.Clock).Pointer() == reflect.ValueOf(RealtimeClock).Pointer()
	// A receiver starts out assuming its port does not stamp; the first
	// burst the port stamped entirely turns the extra clock read off.
	l.pollStamps = cfg.Role == RoleReceiver
	l.txStamper, _ = cfg.Tx.(TxStamper)
	l.txErr, _ = cfg.Tx.(TxStampErr)
	if cfg.Role == RoleForward {
		if cfg.Tap == nil {
			l.fwd, _ = cfg.Rx.(Forwarder)
		}
	}
	// Only MEC rules and the LDS read the flow key, and only the LDS its
	// hash: without them the lane parses with ParseLean, with rules but no
	// LDS with ParseNoFlowHash; each skips the rest on the common frame.
	switch {
	case cfg.Role == RoleForward: // never parses
	case cfg.Buffer.Sets[0].LDS != nil:
		l.parse = classifier.LevelFull
	case l.oneClass:
		l.parse = classifier.LevelIdentity
	default:
		l.parse = classifier.LevelFlowKey
	}
	// A receiver of several queues checks its bursts' steering in Go
	// (receiveReceiver), so it keeps to the Go path.
	if (cfg.Role == RoleSender && l.txStamper != nil || cfg.Role == RoleReceiver && cfg.Queues <= 1) &&
		!cfg.NoFastPath && cfg.Tap == nil && l.oneClass && fastSynopses(cfg.Buffer) {
		l.fast, _ = cfg.Rx.(MeasureFastPath)
	}
	return l, nil
}

// fastSynopses reports whether every copy of b records what a
// MeasureFastPath records: one LDA, at most one RDA and one trajectory
// sample, perhaps an LDS.
func fastSynopses(b *SynBuffer) bool {
	for _, s := range b.Sets {
		if s == nil || len(s.LDA) != 1 || len(s.RDA) > 1 || len(s.Sample) > 1 {
			return false
		}
	}
	return true
}

// fastSyn is FastSynopses of the active copy set.
func (s *SynSet) fastSyn() FastSynopses {
	f := FastSynopses{LDA: s.LDA[0], LDS: s.LDS, Weight: s.weights[0]}
	if len(s.RDA) > 0 {
		f.RDA = s.RDA[0]
	}
	if len(s.Sample) > 0 {
		f.Sample = s.Sample[0]
	}
	return f
}

// FastPath reports whether the lane hands whole bursts to its rx port's
// MeasureFastPath.
func (l *Lane) FastPath() bool { return l.fast != nil }

type errLane string

func (e errLane) Error() string { return "dataplane: lane: " + string(e) }

// Config returns the lane's configuration.
func (l *Lane) Config() LaneConfig { return l.cfg }

// Poll runs one iteration of the lane's loop and reports whether it moved
// any frame. It allocates nothing, takes no lock and makes one RxBurst and
// at most a few TxBurst calls.
//
// Clock reads: one per received burst (the rx timestamp of frames the port
// did not stamp, and the drain timer) but a sender's burst the measuring
// fast path took whole, whose port's reading after its transmit serves
// (FastResult.TxNow), two around each sender TxBurst (the transmit
// timestamp) unless the tx port is a TxStamper, one when an interval ends
// or the tx port refuses frames; an empty poll with nothing buffered reads
// none. A clock read
// (RealtimeClock: two vDSO calls) costs about as much as parsing a frame,
// so they are counted, not sprinkled.
func (l *Lane) Poll() bool {
	if !l.started {
		l.now = l.cfg.Clock()
		l.start(l.now)
	}
	work := false
	if l.cfg.Role == RoleSender {
		// The interval clock is read once per burst.
		if l.closing {
			l.flush()
			if l.tx.n == 0 {
				l.now = l.cfg.Clock()
				l.finishClose(l.now)
			}
			work = true
		} else if k := l.cfg.Epoch.Load(); k > l.curK { // never backwards: CloseInterval may have run ahead of the clock
			l.now = l.cfg.Clock()
			l.closeInterval(k, l.now)
			work = true
		}
		if !l.closing && l.inject() {
			work = true
		}
	}
	if l.fwd != nil && l.tx.n == 0 && l.forwardDirect() {
		return true
	}
	// Receive only as much as the tx buffer has room for, keeping room for
	// injected control frames and an End marker.
	// A sender lane closing an interval takes no new frames until those
	// queued before the interval's end are out (the rx port's queue holds
	// them meanwhile, as under back-pressure).
	n := 0
	var before uint64
	if room := min(l.cfg.Burst, len(l.tx.pkts)-l.cfg.Pace-1-l.tx.n); room > 0 && !l.closing {
		if l.pollStamps {
			before = l.cfg.Clock()
		}
		n = -1
		if l.fast != nil && l.tx.n == 0 && room == l.cfg.Burst {
			var done, moved bool
			l.fastLow = 0
			if n, done, moved = l.sendFast(); done {
				return true
			}
			if moved {
				work = true
				if before != 0 && l.fastLow > before {
					before = l.fastLow
				}
			}
		}
		if n < 0 {
			n = l.cfg.Rx.RxBurst(l.rxPkts[:room])
		}
		if n > 0 {
			work = true
			l.now = l.cfg.Clock()
			l.receive(l.rxPkts[:n], l.now)
		}
		if n < room && before != 0 {
			// The rx queue was empty after this call: whatever the next
			// burst holds arrived after before.
			l.rxLow = before
		}
	}
	// With n == 0 nothing more is coming now: flush without asking the
	// clock. Otherwise l.now was just read.
	if l.tx.n > 0 && (l.tx.n >= l.cfg.Burst || n == 0 || l.now-l.lastTx >= l.cfg.DrainNs) {
		l.flush()
	}
	return work
}

// forwardDirect is a forwarding lane's poll on a Forwarder port with
// nothing buffered: the port receives a burst and transmits it on the tx
// port itself (for DPDK, one cgo call and no per-frame Go work). Frames
// the tx port refused come back in order and go to the front of the tx
// buffer, where flush sends them (back-pressure and the stall limit as for
// any frame) before the next direct burst. It reports whether it handled
// the poll; false when nothing arrived or the port wants this burst taken
// the ordinary way.
func (l *Lane) forwardDirect() bool {
	kept := l.rxPkts[:l.cfg.Burst]
	rx, bytes, k, ok := l.fwd.ForwardTo(l.cfg.Tx, kept)
	if !ok || rx == 0 {
		return false
	}
	k = min(k, rx, len(kept))
	l.Stats.RxFrames.Add(uint64(rx))
	l.Stats.RxBytes.Add(bytes)
	l.Stats.TxFrames.Add(uint64(rx - k))
	if k > 0 {
		// Refused: queue them (order kept) and let flush retry. The
		// clock is read only here, for the drain and stall timers.
		l.tx.pushForwarded(kept[:k]) // the buffer is empty here
		clear(kept[:k])
		l.now = l.cfg.Clock()
		l.flush()
	}
	return true
}

// sendFast is a measuring lane's poll through its rx port's
// MeasureFastPath, with nothing buffered and not closing: what Poll's
// receive and flush would do with a full burst of frames it records as
// they are, in one call. done: a prefix of the burst was received,
// measured and transmitted; frames of it the tx port never took wait in
// the tx buffer (a sender's recorded when they go, as after a flush), and
// the rest of the burst behind them, received as from RxBurst. Otherwise
// n is what Poll goes on with: -1 when the port had nothing to say
// (RxBurst then receives), or the frames of a burst handed back in
// l.rxPkts[:n] (0: nothing arrived). moved: the call moved frames, in
// full bursts before its last poll (FastResult.Before) or in that poll;
// with !done, l.fastLow is then the clock read after the last full
// burst's receive, a later low bound than Poll's own for what a next
// burst holds.
func (l *Lane) sendFast() (n int, done, moved bool) {
	set := l.cfg.Buffer.Active()
	receiver := l.cfg.Role == RoleReceiver
	var rx RxStamp
	if receiver {
		rx.On = true
		if l.realtime {
			rx.PollLow, rx.PollStart = l.rxLow, l.intStart
		}
	}
	r, ok := l.fast.SendMeasured(l.cfg.Tx, set.fastSyn(), l.cfg.Burst, l.cfg.TxRetries, rx, l.rxPkts)
	if !ok {
		return -1, false, false
	}
	if moved = r.Before.Polls > 0; moved {
		// Full bursts that went whole before the last poll: as many
		// done bursts below with nothing kept and no rest.
		l.recordFast(set, receiver, r.Before, r.Before.Frames, r.Before.Bytes)
		if !r.Done {
			// The last poll's burst comes back (or none came) for Poll
			// to receive; the full bursts before it went now. The queue
			// was not seen empty before the last poll began, after the
			// reading that follows the last full burst's receive.
			l.now = l.cfg.Clock()
			l.lastTx = l.now
			l.stallSince = 0
			l.fastLow = r.Before.PollNow
		}
	}
	if !r.Done {
		return r.Rx, false, moved
	}
	// As receive, then flush's record and its tail. A sender's port read
	// the lane's clock right after its last transmit: that reading is the
	// poll's time (a time.Now is two vDSO calls a burst).
	if r.TxNow != 0 && l.realtime && r.Kept == 0 && r.Rest == 0 {
		l.now = r.TxNow
	} else {
		l.now = l.cfg.Clock()
	}
	last := FastPolls{Polls: 1, Frames: r.Rx - r.Rest, Bytes: r.RxBytes, TxErrSum: r.TxErrSum, TxErrMax: r.TxErrMax,
		Polled: r.Polled, PollTS: r.PollTS, PollNow: r.PollNow}
	if r.Polled > 0 {
		last.PollErrMax = r.PollNow - r.PollTS
		last.PollErrSum = last.PollErrMax * uint64(r.Polled)
	}
	l.recordFast(set, receiver, last, r.Sent, r.SentBytes)
	if r.Kept == 0 && r.Rest == 0 {
		l.lastTx = l.now
		l.stallSince = 0
		return r.Rx, true, true
	}
	if r.Kept > 0 {
		kept := l.rxPkts[:r.Kept]
		if receiver {
			l.tx.pushForwarded(kept) // recorded already
		} else {
			// Parsed as receiveSender would (frames the port took:
			// every one recorded, MEC 0), recorded when they go.
			pkts, metas, mecs, rec := l.tx.open(kept)
			parseBurst(pkts, metas, l.parse)
			copy(rec, allRecorded[:])
			clear(mecs)
			l.tx.commit(len(kept))
		}
	}
	if r.Rest > 0 {
		// The rest of the burst, behind them: received as Poll receives
		// (the Go lane decides about its first frame).
		l.receive(l.rxPkts[r.Kept:r.Kept+r.Rest], l.now)
	}
	if r.Kept > 0 {
		// The flush's tail decides about the buffer as if the frames
		// refused had been there.
		l.flushTail(0, r.Sent > 0)
	} else {
		// The prefix went whole: the buffer holds what a full burst
		// leaves after it, which Poll would flush now.
		l.lastTx = l.now
		l.stallSince = 0
		l.flush()
	}
	return r.Rx, true, true
}

// recordFast accounts for p, polls a MeasureFastPath measured (their
// sent frames and bytes taken by the tx port), in set and the lane's
// counters, as receive and flush would have for the same frames.
func (l *Lane) recordFast(set *SynSet, receiver bool, p FastPolls, sent int, sentBytes uint64) {
	l.Stats.FastBursts.Add(uint64(p.Polls))
	l.Stats.RxFrames.Add(uint64(p.Frames))
	l.Stats.RxBytes.Add(p.Bytes)
	if receiver {
		// Every frame of the prefix, with the port's stamp.
		rec := uint64(p.Frames)
		set.Frames += rec
		set.Bytes += p.Bytes
		l.Stats.Recorded.Add(rec)
		l.pollStamps = p.Polled > 0
		if p.Polled > 0 {
			// As receiveReceiver accounts for frames pollStamp stamped.
			polled := uint64(p.Polled)
			l.pollTS, l.pollErr = p.PollTS, p.PollNow-p.PollTS
			set.StampErrNs += p.PollErrSum
			set.PollStamped += polled
			l.Stats.PollStamped.Add(polled)
			if p.PollErrMax > l.maxRxErr {
				l.maxRxErr = p.PollErrMax
				l.Stats.MaxRxStampErrNs.Store(p.PollErrMax)
			}
		}
	} else if sent > 0 {
		set.Frames += uint64(sent)
		set.Bytes += sentBytes
		set.StampErrNs += p.TxErrSum
		if gap := 2 * p.TxErrMax; gap > l.maxTxGap {
			l.maxTxGap = gap
			l.Stats.MaxTxStampGapNs.Store(gap)
		}
		l.intFrames += uint64(sent)
		l.intBytes += sentBytes
		l.Stats.Recorded.Add(uint64(sent))
	}
	l.Stats.TxFrames.Add(uint64(sent))
}

func (l *Lane) start(now uint64) {
	l.started = true
	l.lastTx = now
	if l.cfg.Role == RoleSender {
		l.curK = l.cfg.Epoch.Load()
		l.intStart = now
		l.cfg.Buffer.Begin(l.curK, now)
	}
	if l.cfg.Role == RoleReceiver {
		l.intStart = now
		l.cfg.Buffer.Begin(0, now)
	}
}

// receive handles one rx burst: classify, record (receiver), strip
// control frames (receiver), and queue the rest for transmission. Poll
// received no more frames than the tx buffer has room for, so every frame
// finds a slot without a flush.
func (l *Lane) receive(rx []*Packet, now uint64) {
	n := len(rx)
	var rxBytes uint64
	stamp := now
	if l.cfg.Role == RoleReceiver {
		stamp = l.pollStamp(now)
	}
	unstamped := 0
	for _, p := range rx {
		rxBytes += uint64(len(p.Data))
		if p.TS == 0 {
			p.TS = stamp // the port has no timestamp of its own: one clock read per burst
			unstamped++
		}
	}
	if l.cfg.Role == RoleReceiver {
		l.pollStamps = unstamped > 0
	}
	l.cfg.Tap.Copy(rx)
	var malformed uint64
	switch l.cfg.Role {
	case RoleForward:
		l.tx.pushForwarded(rx)
	case RoleSender:
		malformed = l.receiveSender(rx)
	default:
		malformed = l.receiveReceiver(rx)
	}
	if len(l.free) > 0 {
		l.cfg.Rx.Free(l.free)
		l.free = l.free[:0]
	}
	l.Stats.RxFrames.Add(uint64(n))
	l.Stats.RxBytes.Add(rxBytes)
	if malformed > 0 {
		l.Stats.Malformed.Add(malformed)
	}
}

// pollStamp is the receive timestamp of a burst's frames the rx port did
// not stamp, read by the lane at poll time (now, right after RxBurst
// returned). Each of them arrived after the last RxBurst that left the rx
// queue empty began (rxLow) and before now: the stamp is the midpoint,
// uncertain by half that gap, carried as pollErr into the interval's stamp
// error. An idle worker's sleep, a preempted thread or a backlog widens
// the gap, and the report's stamp_err_ns with it, instead of skewing the
// mean unseen.
func (l *Lane) pollStamp(now uint64) uint64 {
	low := l.rxLow
	if low == 0 || low > now {
		low = l.intStart // no emptied queue seen yet: since the lane started
	}
	// now − the midpoint, not the half gap: an odd gap's last nanosecond
	// counts too.
	l.pollTS = low + (now-low)/2
	l.pollErr = now - l.pollTS
	return l.pollTS
}

// receiveSender parses and classifies the burst into the tx buffer's
// metadata slots (recorded at transmission, see record) and queues it, in
// order, behind what the buffer holds. It returns the number of malformed
// frames. The per-slot arrays are sliced to the burst once, so the loops
// have no bounds checks. The parse loop holds nothing but the parse across
// its call and ORs the frames' flags; a burst with no frame that needs a
// decision (malformed, control, link-local) and only the default MEC, the
// common one, then fills its record and MEC slots in two block writes
// (classifySender handles every other burst).
func (l *Lane) receiveSender(rx []*Packet) (malformed uint64) {
	n := len(rx)
	pkts, metas, mecs, rec := l.tx.open(rx)
	if seen := parseBurst(pkts, metas, l.parse); seen&(classifier.FlagTruncated|classifier.FlagMalformed|classifier.FlagControl|classifier.FlagLinkLocal) == 0 && l.oneClass {
		copy(rec, allRecorded[:])
		clear(mecs)
		l.tx.commit(n)
		return 0
	}
	return l.classifySender(rx, pkts, metas, mecs, rec)
}

// parseBurst parses pkts into metas at level and returns the OR of their
// flags. A function of its own: Go keeps no register across a call, so
// the loop around the parse reloads every value it holds, and here it
// holds only these.
//
//go:noinline
func parseBurst(pkts []*Packet, metas []classifier.Meta, level classifier.Level) (seen uint16) {
	metas = metas[:len(pkts)]
	for i, p := range pkts {
		m := &metas[i]
		// ParseLevel, as the receiving lane parses: classifier.ParseShort
		// for frames below MinFastLen saved ~9 instructions a frame but
		// lost in-process appliances their control frames under -race
		// (TestRunTwoAppliances), cause not found: both ends parse alike.
		classifier.ParseLevel(p.Data, m, level)
		seen |= m.Flags
	}
	return seen
}

// allRecorded fills a burst's record slots (receiveSender).
var allRecorded = func() (a [MaxLaneBurst]bool) {
	for i := range a {
		a[i] = true
	}
	return a
}()

// classifySender decides, frame by frame, what receiveSender's parsed
// burst records under which MEC, drops authentic control frames arriving
// from upstream, and commits the burst to the tx buffer.
func (l *Lane) classifySender(rx, pkts []*Packet, metas []classifier.Meta, mecs []uint16, rec []bool) (malformed uint64) {
	cl, oneClass := l.cfg.Classifier, l.oneClass
	n := len(rx)
	var passed, blocked, excluded uint64
	for i := range metas {
		m := &metas[i]
		rec[i], mecs[i] = true, 0
		if f := m.Flags; f&(classifier.FlagTruncated|classifier.FlagMalformed|classifier.FlagControl|classifier.FlagLinkLocal) != 0 {
			if f&(classifier.FlagTruncated|classifier.FlagMalformed) != 0 {
				malformed++
			}
			if f&classifier.FlagControl != 0 {
				// A frame of the control EtherType is forwarded but never
				// recorded (the peer records none either: it strips ours
				// and forwards the rest unrecorded) — unless it is one of
				// ours, which must not reach the segment at all.
				rec[i] = false
				if l.cfg.Guard != nil && l.cfg.Guard.Ours(pkts[i].Data) {
					pkts[i] = nil
					blocked++
				} else {
					passed++
				}
				continue
			}
			if f&classifier.FlagLinkLocal != 0 {
				// The segment's own devices may consume it (STP, ARP…):
				// forwarded, recorded only if a MEC claims it.
				mec, ok := cl.Measure(m)
				rec[i], mecs[i] = ok, mec
				if !ok {
					excluded++
				}
				continue
			}
		}
		if !oneClass {
			mecs[i] = cl.Classify(m)
		}
	}
	if blocked > 0 {
		// Free the blocked frames' packets at the end of the poll.
		l.free, n = l.tx.dropNil(rx, l.free)
		l.Stats.ControlBlocked.Add(blocked)
	}
	l.tx.commit(n)
	if passed > 0 {
		l.Stats.ControlPassed.Add(passed)
	}
	if excluded > 0 {
		l.Stats.Excluded.Add(excluded)
	}
	return malformed
}

// receiveReceiver records the burst with its receive timestamps, strips
// control frames (flipping at an End marker, between the frames before it
// and the frames after it) and queues the rest.
func (l *Lane) receiveReceiver(rx []*Packet) (malformed uint64) {
	cl := l.cfg.Classifier
	set := l.cfg.Buffer.Active()
	m := &l.meta
	level := l.parse
	var passed, excluded, polled uint64
	for _, p := range rx {
		classifier.ParseLevel(p.Data, m, level)
		if m.Flags&(classifier.FlagTruncated|classifier.FlagMalformed) != 0 {
			malformed++
		}
		if m.Flags&classifier.FlagControl != 0 {
			flipped, ours := l.controlFrame(p)
			if flipped {
				set = l.cfg.Buffer.Active() // flipped at this frame's position
			}
			if ours {
				l.free = append(l.free, p)
			} else {
				// A user's frame of the control EtherType: forwarded,
				// unrecorded like at the sender.
				passed++
				l.queue(p, false, false)
			}
			continue
		}
		mec := uint16(0)
		if m.Flags&classifier.FlagLinkLocal != 0 {
			// Originated inside the segment, perhaps (a switch's BPDU):
			// forwarded, recorded only if a MEC claims it.
			var ok bool
			if mec, ok = cl.Measure(m); !ok {
				excluded++
				l.queue(p, false, false)
				continue
			}
		} else if !l.oneClass {
			mec = cl.Classify(m)
		}
		var stampErr uint64
		if p.TS == l.pollTS {
			// Stamped by pollStamp (a port stamp equal to the ns would
			// only overstate the error).
			stampErr = l.pollErr
			set.StampErrNs += stampErr
			set.PollStamped++
			polled++
		}
		set.Record(m, mec, p.TS, stampErr)
		l.queue(p, false, false)
	}
	if l.cfg.Queues > 1 && SteerQueue(rx[0].Data, l.cfg.Queues) != l.cfg.Queue {
		// Sampled, one frame a burst: steering that differs between the
		// ends is systematic (a queue count, a key, a hashed field), so a
		// sample finds it within an interval at a cost the burst shares.
		l.cfg.Buffer.Active().Misrouted++
		l.Stats.Misrouted.Add(1)
	}
	l.Stats.Recorded.Add(uint64(len(rx)-len(l.free)) - passed - excluded)
	if passed > 0 {
		l.Stats.ControlPassed.Add(passed)
	}
	if excluded > 0 {
		l.Stats.Excluded.Add(excluded)
	}
	if polled > 0 {
		l.Stats.PollStamped.Add(polled)
		if l.pollErr > l.maxRxErr {
			l.maxRxErr = l.pollErr
			l.Stats.MaxRxStampErrNs.Store(l.pollErr)
		}
	}
	return malformed
}

// queue appends p to the tx buffer, flushing first if it is full.
func (l *Lane) queue(p *Packet, record, own bool) {
	if l.tx.full() {
		l.flushAll()
	}
	l.tx.push(p, record, own)
}

// flush transmits the tx buffer. Frames the port takes are recorded
// (sender) with one transmit timestamp per TxBurst. Frames it refuses stay
// at the front of the buffer and the lane stops receiving until they go
// (back-pressure: the rx port's own queue absorbs the burst, as a NIC's rx
// ring does); only when the port has taken nothing for StallNs are they
// freed and counted as dropped, so a dead link never wedges the lane.
func (l *Lane) flush() {
	if l.tx.n == 0 {
		return
	}
	sender := l.cfg.Role == RoleSender
	sent := 0
	for try := 0; try < l.cfg.TxRetries && sent < l.tx.n; try++ {
		// Only the sender timestamps transmissions. A TxStamper port
		// read the clock as it handed the burst over (within the
		// uncertainty a TxStampErr port reports), and no clock read
		// here. Otherwise the transmit timestamp is the midpoint of clock
		// reads around the TxBurst: a thread preempted before or after
		// the call (GC, an oversubscribed host) errs by half the gap, not
		// all of it.
		stamp := sender && l.txStamper == nil
		var before uint64
		if stamp {
			before = l.cfg.Clock()
		}
		k := l.cfg.Tx.TxBurst(l.tx.pkts[sent:l.tx.n])
		if l.ownRefusedLen > 0 && k > 0 {
			l.noteOwnTaken(sent, sent+k)
		}
		if sender && k > 0 {
			if !stamp {
				ts, errNs := l.txStamper.LastTxNs(), uint64(0)
				if l.txErr != nil {
					errNs = l.txErr.LastTxErrNs()
					if gap := 2 * errNs; gap > l.maxTxGap {
						l.maxTxGap = gap
						l.Stats.MaxTxStampGapNs.Store(gap)
					}
				}
				l.record(sent, sent+k, ts, errNs)
			} else {
				after := l.cfg.Clock()
				l.now = after
				if gap := after - before; gap > l.maxTxGap {
					l.maxTxGap = gap
					l.Stats.MaxTxStampGapNs.Store(gap)
				}
				// The frames left somewhere in [before, after]: the
				// midpoint is off by at most after − mid (the odd
				// nanosecond of an odd gap included).
				mid := before + (after-before)/2
				l.record(sent, sent+k, mid, after-mid)
			}
		}
		sent += k
		if k == 0 {
			break
		}
	}
	l.Stats.TxFrames.Add(uint64(sent))
	l.flushTail(sent, sent > 0)
}

// flushTail is flush after its transmit calls: the tx buffer's first sent
// frames went (progressed: the port took some frames, these or, for
// sendFast, frames before them).
func (l *Lane) flushTail(sent int, progressed bool) {
	if sent == l.tx.n {
		// The common case: everything went. The drain timer restarts
		// from the lane's latest clock reading (taken after this burst
		// was received, or after its TxBurst on the sender).
		l.tx.reset()
		l.lastTx = l.now
		l.stallSince = 0
		return
	}
	now := l.cfg.Clock()
	l.now, l.lastTx = now, now
	switch {
	case l.ownRefusedLen > 0 && l.tx.own[sent] && !l.probing && len(l.tx.pkts[sent].Data) >= l.ownRefusedLen &&
		(progressed || l.stallSince == 0 || now-l.stallSince < l.cfg.StallNs):
		// An own frame as long as one the port was shown to refuse: set
		// it aside at once. (A port that takes nothing at all is full:
		// the stall timer runs as for any frame.)
		if sent > 0 {
			l.tx.removeFront(sent)
		}
		if l.probeBehindOwn() {
			return
		}
		if progressed || l.stallSince == 0 {
			l.stallSince = now
		}
		return
	case progressed || l.stallSince == 0:
		l.stallSince = now
	case l.tx.own[0] && !l.probing && now-l.stallSince >= l.cfg.StallNs/ownStallDiv && now-l.stallSince < l.cfg.StallNs:
		// Our own control frame at the front has been refused for a
		// while. If the port takes the users' frames behind it, it is
		// this frame it refuses (too large, say): users' frames must not
		// wait on it, so it is dropped and counted (the receiver reports
		// its interval invalid with the reason). If the port takes
		// nothing, it is merely full: everything waits, as data does.
		if l.probeBehindOwn() {
			return
		}
	case now-l.stallSince >= l.cfg.StallNs:
		var own uint64
		for i := sent; i < l.tx.n; i++ {
			l.one[0] = l.tx.pkts[i]
			if l.tx.own[i] {
				own++
				l.cfg.Tx.Free(l.one[:])
			} else {
				l.cfg.Rx.Free(l.one[:])
			}
		}
		l.Stats.TxDropped.Add(uint64(l.tx.n-sent) - own)
		if own > 0 {
			l.Stats.ControlDropped.Add(own)
		}
		l.tx.reset()
		l.stallSince = 0
		return
	}
	// Keep what is left at the front, in order.
	if sent > 0 {
		l.tx.removeFront(sent)
	}
}

// ownStallDiv: an own control frame the tx port refuses for StallNs/ownStallDiv
// while it takes the frames behind it is dropped (probeBehindOwn), not
// waited on for the whole stall limit.
const ownStallDiv = 10

// probeBehindOwn sets the own control frames at the front of the tx buffer
// aside and flushes what is behind them. When the port takes some of it,
// the own frames are what it refuses: they are freed and counted, and it
// reports true. Otherwise they go back to the front, in order, and it
// reports false. Sending the frames behind first changes nothing the
// receiver measures: an End set aside is dropped (the receiver then
// reports the interval invalid), and fragments may travel in any order.
func (l *Lane) probeBehindOwn() bool {
	i := 0
	for i < l.tx.n && i < len(l.ownAside) && l.tx.own[i] {
		i++
	}
	if i == l.tx.n {
		return false // nothing behind to probe with
	}
	copy(l.ownAside[:], l.tx.pkts[:i])
	l.tx.removeFront(i)
	before := l.tx.n
	l.probing = true
	l.flush()
	l.probing = false
	if l.tx.n < before {
		shortest := len(l.ownAside[0].Data)
		for _, p := range l.ownAside[1:i] {
			shortest = min(shortest, len(p.Data))
		}
		if l.ownRefusedLen == 0 || shortest < l.ownRefusedLen {
			l.ownRefusedLen = shortest
		}
		l.Stats.ControlDropped.Add(uint64(i))
		l.cfg.Tx.Free(l.ownAside[:i])
		clear(l.ownAside[:i])
		return true
	}
	// Back to the front (the buffer had them, so it has room).
	l.tx.insertOwnFront(l.ownAside[:i])
	clear(l.ownAside[:i])
	return false
}

// noteOwnTaken forgets ownRefusedLen when the port took, in slots
// [from, to), an own frame at least that long: it takes them again.
func (l *Lane) noteOwnTaken(from, to int) {
	for i := from; i < to; i++ {
		if l.tx.own[i] && len(l.tx.pkts[i].Data) >= l.ownRefusedLen {
			l.ownRefusedLen = 0
			return
		}
	}
}

// flushAll transmits everything buffered, waiting out back-pressure up to
// the stall limit (interval ends and stop, never per packet).
func (l *Lane) flushAll() {
	for l.tx.n > 0 {
		l.flush()
	}
}

// record adds the sender's transmitted frames [from, to) to the active
// synopses with their transmit timestamp ts, known to ±uncert ns.
func (l *Lane) record(from, to int, ts, uncert uint64) {
	set := l.cfg.Buffer.Active()
	rec, bytes := set.recordTx(l.tx.meta[from:to], l.tx.mec[from:to], l.tx.rec[from:to], ts, uncert)
	set.StampErrNs += uncert * rec
	l.intFrames += rec
	l.intBytes += bytes
	l.Stats.Recorded.Add(rec)
}

// closeInterval ends sender interval curK: everything queued so far is
// transmitted (and recorded in curK), then the End marker goes out on the
// same queue right behind it, then the synopses flip to interval k. When
// the tx port does not take the queued frames at once, the lane stops
// receiving and Poll finishes the close once they are out (or dropped at
// the stall limit): nothing waits in a loop, so the other lanes of the
// worker go on.
func (l *Lane) closeInterval(k, now uint64) {
	l.closing, l.closeK = true, k
	if l.tx.n > 0 {
		l.flush()
		if l.tx.n > 0 {
			return
		}
		now = l.cfg.Clock()
		l.now = now
	}
	l.finishClose(now)
}

// finishClose sends the End marker(s) of curK and flips to closeK. The tx
// buffer is empty: every frame recorded in curK is out.
func (l *Lane) finishClose(now uint64) {
	old, k := l.curK, l.closeK
	l.closing = false
	if l.cfg.End != nil {
		e := control.End{StartNs: int64(l.intStart), EndNs: int64(now), Frames: l.intFrames, Bytes: l.intBytes, Classes: l.classCounts()}
		for c := 0; c < max(l.cfg.EndCopies, 1); c++ {
			l.endBuf = l.cfg.End.AppendEnd(l.endBuf[:0], old, &e)
			if l.queueOwn(l.endBuf) {
				l.Stats.EndsSent.Add(1)
			} else {
				l.Stats.EndsFailed.Add(1)
			}
		}
	}
	// Several intervals may have passed without a poll (a stalled
	// worker): the copy then covers them all and is reported merged.
	if k != old+1 {
		l.cfg.Buffer.Active().Merged = true
	}
	if l.cfg.Buffer.Flip(k-1, now) {
		l.Stats.Flips.Add(1)
	}
	l.curK = k
	l.intStart, l.intFrames, l.intBytes = now, 0, 0
	// The End markers lead the next interval's frames out (a refused one
	// waits at the front of the buffer like any frame).
	l.flush()
}

// classCounts is the frames this lane recorded in each class in the
// interval it is closing, for the End marker: the active copy's LDA counts
// (every frame offered, sampled or not). Nil when they cannot be told
// apart from other lanes' or other intervals' frames: no LDA per class, a
// copy shared with other lanes or carrying frames of several intervals
// (a stalled worker's merged copy), or counts that do not add up to the
// lane's own total.
func (l *Lane) classCounts() []uint64 {
	set := l.cfg.Buffer.Active()
	if set == nil || len(set.LDA) != len(l.endClasses) || set.Merged {
		return nil
	}
	var sum uint64
	for m, lda := range set.LDA {
		if lda == nil {
			return nil
		}
		l.endClasses[m] = lda.Count()
		sum += l.endClasses[m]
	}
	if sum != l.intFrames {
		return nil
	}
	return l.endClasses
}

// queueOwn copies a frame the appliance originates (End marker, control
// fragment) into a tx port buffer and queues it, unrecorded, behind what
// the tx buffer holds. It reports false, having queued nothing, when the
// port has no buffer to give or the frame does not fit in one.
func (l *Lane) queueOwn(frame []byte) bool {
	if l.tx.full() || l.cfg.Tx.Alloc(l.one[:]) != 1 {
		return false
	}
	p := l.one[0]
	if cap(p.Data) < len(frame) {
		l.cfg.Tx.Free(l.one[:])
		return false
	}
	p.Data = p.Data[:len(frame)]
	copy(p.Data, frame)
	l.queue(p, false, true)
	return true
}

// inject queues up to Pace control frames from the control side behind
// the data (which keeps the order), paced so a synopsis of many fragments
// never takes a burst's worth of the wire: with InjectGap non-zero, at
// least that gap apart on average, one frame per poll while the lane
// polls more often than the gap (the clock is read only while frames
// wait). A lane that polls less often (a worker busy with long bursts, or
// starved of its core) sends one frame for each gap since the last went,
// at most Pace, ahead of the poll's burst of data: one a poll would cap
// the control traffic at the poll rate, a few thousand frames a second
// on such a worker, below what a congested segment's shipments and
// exchanges take. Frames that find the ring empty get no credit for the
// time it was. A frame stays in the inject ring while the tx
// buffer has no room; one the port has no buffer for is dropped and
// counted (the receiver then reports the interval invalid, fragment
// lost).
func (l *Lane) inject() bool {
	if l.cfg.Inject == nil {
		return false
	}
	pace := l.cfg.Pace
	if l.cfg.InjectGap != nil {
		if gap := l.cfg.InjectGap.Load(); gap > 0 {
			if l.cfg.Inject.Count() == 0 {
				l.injectIdle = true
				return false
			}
			now := l.cfg.Clock()
			if now < l.nextInject {
				return false
			}
			due := uint64(1)
			if !l.injectIdle && l.nextInject != 0 {
				due += (now - l.nextInject) / gap
			}
			l.injectIdle = false
			l.nextInject = now + gap
			pace = int(min(due, uint64(pace)))
		}
	}
	sent := false
	for i := 0; i < pace && !l.tx.full(); i++ {
		if l.cfg.Inject.DequeueBurst(l.injectBuf[:]) != 1 {
			break
		}
		if l.queueOwn(l.injectBuf[0]) {
			l.Stats.Injected.Add(1)
		} else {
			l.Stats.InjectFailed.Add(1)
		}
		l.injectBuf[0] = nil
		sent = true
	}
	return sent
}

// controlFrame handles a frame of the control EtherType arriving on the
// segment port. Only an authentic one is ours: it is taken off the wire
// and handed to the control side, and an End marker of the live session
// for a newer interval flips the synopses right here, between the frames
// before it and the frames after it. Anything else is a user's frame and
// goes on. It reports whether it flipped and whether the frame was ours.
func (l *Lane) controlFrame(p *Packet) (flipped, ours bool) {
	k, _, st := l.cfg.EndReader.Read(p.Data, int64(p.TS))
	if st == control.EndForeign {
		return false, false
	}
	l.Stats.ControlStripped.Add(1)
	if l.cfg.ToControl != nil && !l.cfg.ToControl.Put(p.Data, p.TS) {
		l.Stats.ControlQueueFull.Add(1)
	}
	switch st {
	case control.EndNotMarker:
		return false, true
	case control.EndStale:
		// Replayed, duplicated or of a session that is not live: never
		// flip on it.
		l.Stats.EndsIgnored.Add(1)
		return false, true
	case control.EndOtherLane:
		// Another lane's, steered here: this lane's cut is its own End.
		l.Stats.EndsMisrouted.Add(1)
		return false, true
	}
	l.Stats.EndsSeen.Add(1)
	if l.curK == 0 || k != l.curK+1 {
		// The copy before the first End began mid-interval (we started
		// after the sender), or an End marker was lost and the copy holds
		// more than one interval: either way it matches no single sender
		// interval.
		l.cfg.Buffer.Active().Merged = true
	}
	l.curK = k
	if l.cfg.Buffer.Flip(k, p.TS) {
		l.Stats.Flips.Add(1)
		return true, true
	}
	return false, true
}

// Drain transmits whatever the tx buffer holds (used at stop).
func (l *Lane) Drain() { l.flushAll() }

// CloseInterval ends the sender's current interval now (used at stop so
// the last interval is measured and sent); a close already under way ends
// it anyway.
func (l *Lane) CloseInterval() {
	if l.cfg.Role != RoleSender || !l.started || l.closing {
		return
	}
	now := l.cfg.Clock()
	l.closeInterval(l.curK+1, now)
}
