package appliance_test

import (
	"bytes"
	"encoding/binary"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// pair is two appliances around a segment, with traffic both ways and
// hooks where an attacker (upstream, on the segment) or a faulty port
// acts:
//
//	up ─l0─ [a #1 b] ═l1 (delay, truth a→b)═ [a #2 b] ─l2─ down
//
// up sends a→b, down sends b→a; each end counts and keeps what arrives.
type pair struct {
	t        *testing.T
	iv       time.Duration
	key      []byte
	l0, l1   *dataplane.RingLink
	l2       *dataplane.RingLink
	a1, a2   *appliance.Appliance
	c1, c2   appliance.Config
	truth    *dataplane.IntervalTruth
	mu       sync.Mutex
	lines    []report.Interval // #2's a→b lines, with truth
	back     []report.Interval // #1's b→a lines
	truths   map[uint64]dataplane.TruthInterval
	gotUp    atomic.Uint64 // frames arriving at up (b→a)
	gotDown  atomic.Uint64 // frames arriving at down (a→b)
	special  [][]byte      // frames of EtherType 0x88B5 that reached down
	specMu   sync.Mutex
	seg1, s2 dataplane.Port
	log2     syncBuf // #2's log
	// ringSize is the slots per ring direction (a NIC's rx ring): a
	// generator whose frame finds the ring full loses it (ingress loss).
	ringSize int
	lostIn   [2]atomic.Uint64 // frames up's and down's ring refused
	// clk: the pair runs on this simulated clock (simRun drives it);
	// nil: on the wall clock, with goroutines (run).
	clk *appliance.SimClock
}

func newPair(t *testing.T, iv time.Duration, ringSize int, wrapSeg1Tx func(dataplane.Port) dataplane.Port, wrapSeg2Rx func(dataplane.Port) dataplane.Port) *pair {
	return newPairOpts(t, iv, ringSize, pairOpts{wrapSeg1Tx: wrapSeg1Tx, wrapSeg2Rx: wrapSeg2Rx})
}

// pairOpts are newPairOpts's settings beyond newPair's.
type pairOpts struct {
	wrapSeg1Tx, wrapSeg2Rx func(dataplane.Port) dataplane.Port
	delay, backDelay       model.Delay   // l1's a→b delay (nil: Weibull, mean 30 µs) and b→a delay (nil: none)
	clock2                 func() uint64 // #2's clock (nil: CLOCK_REALTIME, or clk's)
	// clk puts the pair on simulated time: links, lanes and control
	// sides read it, and simRun is what drives them.
	clk *appliance.SimClock
}

func newPairOpts(t *testing.T, iv time.Duration, ringSize int, o pairOpts) *pair {
	wrapSeg1Tx, wrapSeg2Rx := o.wrapSeg1Tx, o.wrapSeg2Rx
	p := &pair{t: t, iv: iv, key: []byte("0123456789abcdef0123456789abcdef"), truths: map[uint64]dataplane.TruthInterval{}, ringSize: ringSize, clk: o.clk}
	var linkClock func() uint64 // nil: CLOCK_REALTIME
	if o.clk != nil {
		linkClock = o.clk.Clock
	}
	var err error
	if p.truth, err = dataplane.NewIntervalTruth(appliance.DirAtoB); err != nil {
		t.Fatal(err)
	}
	if err = p.truth.Authenticate(p.key); err != nil {
		t.Fatal(err)
	}
	var delay model.Delay = o.delay
	if delay == nil {
		delay, _ = model.NewWeibull(30_000, 0.7)
	}
	var back *dataplane.ImpairConfig
	if o.backDelay != nil {
		back = &dataplane.ImpairConfig{Delay: o.backDelay, Loss: model.NoLoss{}, Seed: 10, Queue: 16384}
	}
	if p.l0, err = dataplane.NewRingLink("", dataplane.LinkConfig{Size: ringSize, Pool: 16384, Clock: linkClock}); err != nil {
		t.Fatal(err)
	}
	if p.l1, err = dataplane.NewRingLink("", dataplane.LinkConfig{Size: ringSize, Pool: 32768, Clock: linkClock, AtoB: &dataplane.ImpairConfig{
		Delay: delay, Loss: model.NoLoss{}, Seed: 9, Queue: 16384, Truth: p.truth.Record}, BtoA: back}); err != nil {
		t.Fatal(err)
	}
	if p.l2, err = dataplane.NewRingLink("", dataplane.LinkConfig{Size: ringSize, Pool: 16384, Clock: linkClock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, l := range []*dataplane.RingLink{p.l0, p.l1, p.l2} {
			l.A().Close()
			l.B().Close()
		}
	})
	cl, _ := classifier.NewClassifier(nil)
	b := synopsis.DefaultCompactBounds()
	b.MaxDelayNs, b.MinDelayNs = 100_000_000, -10_000_000
	common := appliance.Config{Interval: iv, Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Classifier: cl, Key: p.key,
		Bounds: b, IdleSleep: 20 * time.Microsecond}
	p.seg1, p.s2 = p.l1.A(), p.l1.B()
	if wrapSeg1Tx != nil {
		p.seg1 = wrapSeg1Tx(p.seg1)
	}
	if wrapSeg2Rx != nil {
		p.s2 = wrapSeg2Rx(p.s2)
	}
	if o.clk != nil {
		common.Clock, common.Now, common.ClockName = o.clk.Clock, o.clk.Now, "simulated"
	}
	p.c1, p.c2 = common, common
	p.c2.Log = zerolog.New(&p.log2)
	if o.clock2 != nil {
		p.c2.Clock = o.clock2
	}
	if o.clk != nil {
		// Fixed sessions: on simulated time nothing random is drawn.
		p.c1.Session, p.c2.Session = 0x5e55_0001, 0x5e55_0002
	}
	p.c1.PortA, p.c1.PortB, p.c1.Segment = p.l0.B(), p.seg1, "b"
	p.c2.PortA, p.c2.PortB, p.c2.Segment = p.s2, p.l2.A(), "a"
	p.c1.Reports = func(r *report.Interval) {
		p.mu.Lock()
		p.back = append(p.back, *r)
		p.mu.Unlock()
	}
	p.c2.Reports = func(r *report.Interval) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for {
			tr, ok := p.truth.Next()
			if !ok {
				break
			}
			p.truths[tr.K] = tr
		}
		if tr, ok := p.truths[uint64(r.Interval)]; ok && tr.Delivered > 0 {
			mean, lost := tr.Mean(), tr.Lost
			r.TrueMeanNs, r.TrueLost = &mean, &lost
			if r.Extra == nil {
				r.Extra = map[string]any{}
			}
			r.Extra["true_delivered"] = tr.Delivered
		}
		p.lines = append(p.lines, *r)
	}
	if p.a1, err = appliance.New(p.c1); err != nil {
		t.Fatal(err)
	}
	if p.a2, err = appliance.New(p.c2); err != nil {
		t.Fatal(err)
	}
	return p
}

// restart1 stops #1 without a drain (its last interval dies with it) and
// starts a new one, a new session, on the same ports.
func (p *pair) restart1() {
	p.a1.Stop(0)
	var err error
	if p.a1, err = appliance.New(p.c1); err != nil {
		p.t.Fatal(err)
	}
	p.a1.Start()
}

// sink counts what arrives at port and keeps 0x88B5 frames (down only).
func (p *pair) sink(port *dataplane.RingPort, n *atomic.Uint64, keep bool, stop chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	pk := make([]*dataplane.Packet, 64)
	for {
		if p.sinkBurst(port, n, keep, pk) == 0 {
			select {
			case <-stop:
				return
			default:
				time.Sleep(20 * time.Microsecond)
			}
		}
	}
}

// sinkBurst is one burst of sink: it returns the frames it took.
func (p *pair) sinkBurst(port *dataplane.RingPort, n *atomic.Uint64, keep bool, pk []*dataplane.Packet) int {
	k := port.RxBurst(pk)
	for _, q := range pk[:k] {
		if keep && binary.BigEndian.Uint16(q.Data[12:]) == control.EtherType {
			p.specMu.Lock()
			p.special = append(p.special, append([]byte(nil), q.Data...))
			p.specMu.Unlock()
		}
	}
	n.Add(uint64(k))
	port.Free(pk[:k])
	return k
}

// run sends rate frames/s each way for d; extra, when set, is called on
// the up generator's goroutine every burst and may return frames to send
// upstream besides the traffic. It returns the frames sent each way.
func (p *pair) run(d time.Duration, rate float64, extra func(elapsed time.Duration) [][]byte, midway func(elapsed time.Duration)) (up, down uint64) {
	p.a2.Start()
	p.a1.Start()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go p.sink(p.l2.B(), &p.gotDown, true, stop, &wg)
	go p.sink(p.l0.A(), &p.gotUp, false, stop, &wg)
	gen, _ := traffic.NewGen(traffic.GenConfig{Flows: 40, Size: 128})
	var sentBack atomic.Uint64
	var genWg sync.WaitGroup
	genWg.Add(1)
	go func() { // b→a
		defer genWg.Done()
		sentBack.Store(generate(p.l2.B(), gen, rate, d, 1<<40, &p.lostIn[1], nil))
	}()
	sent := generate(p.l0.A(), gen, rate, d, 1, &p.lostIn[0], func(e time.Duration) [][]byte {
		if midway != nil {
			midway(e)
		}
		if extra != nil {
			return extra(e)
		}
		return nil
	})
	genWg.Wait()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if p.gotDown.Load() >= sent && p.gotUp.Load() >= sentBack.Load() {
			break
		}
	}
	drain := p.iv + time.Second
	if err := p.a1.Stop(drain); err != nil {
		p.t.Error(err)
	}
	if err := p.a2.Stop(drain); err != nil {
		p.t.Error(err)
	}
	close(stop)
	wg.Wait()
	return sent, sentBack.Load()
}

// generate sends paced traffic on port for d (ids from id0) plus what
// extra returns, and returns the traffic frames the port took (extra's not
// counted). Frames it refuses (the ring is full: the appliance did not
// keep up) are lost and counted in lost, as a NIC drops them.
func generate(port *dataplane.RingPort, gen *traffic.Gen, rate float64, d time.Duration, id0 uint64, lost *atomic.Uint64, extra func(time.Duration) [][]byte) uint64 {
	pk := make([]*dataplane.Packet, 32)
	start := time.Now()
	id := id0
	var sent uint64
	for now := start; now.Sub(start) < d; now = time.Now() {
		if extra != nil {
			for _, f := range extra(now.Sub(start)) {
				one := pk[:1]
				if port.Alloc(one) == 1 {
					one[0].Data = append(one[0].Data[:0], f...)
					for port.TxBurst(one) == 0 {
						time.Sleep(10 * time.Microsecond)
					}
				}
			}
		}
		due := id0 + uint64(rate*now.Sub(start).Seconds())
		if due <= id {
			time.Sleep(50 * time.Microsecond)
			continue
		}
		n := port.Alloc(pk[:min(uint64(len(pk)), due-id)])
		for i := 0; i < n; i++ {
			pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], id+uint64(i))
		}
		m := port.TxBurst(pk[:n])
		if m < n {
			port.Free(pk[m:n])
			lost.Add(uint64(n - m))
		}
		sent += uint64(m)
		id += uint64(n)
	}
	return sent
}

// checkLines: no wrong number reported as valid; returns the valid
// intervals.
func (p *pair) checkLines() map[int64]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	valid := map[int64]bool{}
	// An interval the restarted sender cut twice has one truth for both
	// cuts (the link's truth is per interval): the first cut's line
	// cannot be held to it.
	recut := map[int64]bool{}
	for _, r := range p.lines {
		if r.Reason == appliance.ReasonRecut {
			recut[r.Interval] = true
		}
	}
	for _, r := range p.lines {
		p.t.Logf("%d valid=%v sent=%d recv=%d samples=%d lost=%d true_lost=%v mean=%.0f±%.0f true_mean=%s stamp_err=%.0f %s %v", r.Interval, r.Valid, r.Sent, r.Received, r.Samples, r.Lost, deref(r.TrueLost), r.MeanNs, r.MeanCINs, derefF(r.TrueMeanNs), r.StampErrNs, r.Reason, r.Extra)
		if !r.Valid {
			continue
		}
		valid[r.Interval] = true
		if recut[r.Interval] {
			continue
		}
		if r.TrueLost == nil {
			p.t.Errorf("interval %d valid without truth", r.Interval)
			continue
		}
		if r.Lost != *r.TrueLost {
			p.t.Errorf("interval %d valid with lost %d, true %d", r.Interval, r.Lost, *r.TrueLost)
		}
		if d := r.Extra["true_delivered"]; d != r.Sent-r.Lost {
			// The same packets, not just as many lost: the truth cut
			// where the appliances did.
			p.t.Errorf("interval %d valid with %d sent − %d lost, the link delivered %v of it", r.Interval, r.Sent, r.Lost, d)
		}
		if abs(r.MeanNs-*r.TrueMeanNs) > 3*r.MeanCINs {
			p.t.Errorf("interval %d valid with mean %.0f ± %.0f, true %.0f", r.Interval, r.MeanNs, r.MeanCINs, *r.TrueMeanNs)
		}
	}
	return valid
}

// ctlRecorder wraps #2's segment port: it records every authentic control
// frame #1's first session sends, and once #1 has restarted it puts the
// recording back on the segment behind every End of the live session.
type ctlRecorder struct {
	dataplane.Port
	mu       sync.Mutex
	first    uint64 // #1's first session
	rec      [][]byte
	replay   atomic.Bool
	injected atomic.Uint64
	f        control.Frame
	extra    []*dataplane.Packet
}

func (c *ctlRecorder) RxBurst(pkts []*dataplane.Packet) int {
	n := c.Port.RxBurst(pkts)
	live := false
	for _, q := range pkts[:n] {
		if control.ParseFrame(q.Data, &c.f) != nil {
			continue
		}
		c.mu.Lock()
		if c.first == 0 {
			c.first = c.f.Session
		}
		if c.f.Session == c.first {
			c.rec = append(c.rec, append([]byte(nil), q.Data...))
		} else if c.f.Type == control.TypeEnd {
			live = true
		}
		c.mu.Unlock()
	}
	if !live || !c.replay.Load() {
		return n
	}
	// Replay the recording right behind the live End: the recorded frames
	// come in the next bursts (the ring port's room permitting).
	c.mu.Lock()
	defer c.mu.Unlock()
	room := len(pkts) - n
	for i := 0; i < room && i < len(c.rec); i++ {
		one := pkts[n : n+1]
		if c.Port.Alloc(one) != 1 {
			break
		}
		b := c.rec[(int(c.injected.Load())+i)%len(c.rec)]
		one[0].Data = append(one[0].Data[:0], b...)
		one[0].TS = 0
		n++
	}
	c.injected.Add(uint64(min(room, len(c.rec))))
	return n
}

// TestReplayedSessionsAcrossAppliances: #1 restarts (a new session); an
// attacker replays everything #1's first session sent — on the segment,
// right behind each End of the live session, and from upstream through
// #1. Every interval of the live session after its first must be valid and
// correct, and the upstream replays must never reach the segment.
func TestReplayedSessionsAcrossAppliances(t *testing.T) {
	if raceEnabled {
		t.Skip("judges validity per interval; too slow under -race")
	}
	const iv = 200 * time.Millisecond
	rec := &ctlRecorder{}
	p := newPair(t, iv, 4096, nil, func(port dataplane.Port) dataplane.Port { rec.Port = port; return rec })
	restarted := false
	var restartedAt, genEnd time.Time
	var upstream atomic.Uint64
	p.run(14*iv, 4000, func(e time.Duration) [][]byte {
		genEnd = time.Now()
		if !restarted || e%(20*time.Millisecond) > time.Millisecond {
			return nil
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		upstream.Add(uint64(len(rec.rec)))
		return append([][]byte(nil), rec.rec...)
	}, func(e time.Duration) {
		if !restarted && e >= 4*iv {
			restarted, restartedAt = true, time.Now()
			p.restart1()
			rec.replay.Store(true)
		}
	})
	valid := p.checkLines()
	if rec.injected.Load() == 0 || upstream.Load() == 0 {
		t.Fatalf("nothing replayed (segment %d, upstream %d)", rec.injected.Load(), upstream.Load())
	}
	s1, _ := p.a1.Lanes()
	if got := s1.Stats.ControlBlocked.Load(); got != upstream.Load() {
		t.Errorf("upstream replays: %d sent, %d blocked by #1", upstream.Load(), got)
	}
	// The live session's intervals: from the second after the restart to
	// the last full one.
	k0 := uint64(restartedAt.UnixNano()/iv.Nanoseconds()) + 2
	last := uint64(genEnd.UnixNano()/iv.Nanoseconds()) - 1 // the last whole interval with traffic
	missing := 0
	for k := k0; k < last; k++ {
		if !valid[int64(k)] {
			missing++
			t.Errorf("live interval %d not valid", k)
		}
	}
	_, r2 := p.a2.Lanes()
	cc := p.a2.ControlCounters()
	t.Logf("segment replays %d, upstream %d (blocked %d); #2 ends ignored %d, stale %d older %d unfresh %d untimed %d restarts %d",
		rec.injected.Load(), upstream.Load(), s1.Stats.ControlBlocked.Load(), r2.Stats.EndsIgnored.Load(),
		cc.StaleSession, cc.OlderSession, cc.StaleHello, cc.UnknownSession, cc.SessionRestarts)
	if cc.SessionRestarts != 1 {
		t.Errorf("#2 changed session %d times, want once (the real restart)", cc.SessionRestarts)
	}
}

// TestUserControlEtherTypeCrossesUnchanged: a user's frames of EtherType
// 0x88B5 — one that looks like ours up to the tag, and plain ones — cross
// both appliances byte for byte, are counted, and cost no interval.
func TestUserControlEtherTypeCrossesUnchanged(t *testing.T) {
	if raceEnabled {
		t.Skip("judges validity per interval; too slow under -race")
	}
	const iv = 200 * time.Millisecond
	p := newPair(t, iv, 4096, nil, nil)
	// A frame laid out as a control frame of our protocol, with a tag made
	// under another key, and a plain frame of the same EtherType.
	other, _ := control.NewSender(control.SenderConfig{Key: bytes.Repeat([]byte{9}, 32), MTU: 1500, Direction: appliance.DirAtoB,
		Hello: control.Hello{IntervalNs: 1e9, Lanes: 1, MECs: []string{"x"}}})
	w, _ := other.NewEndWriter(0)
	lookalike := w.AppendEnd(nil, 5, &control.End{StartNs: 1, EndNs: 2})
	plain := append([]byte{0x03, 0x4C, 0x44, 0x41, 0x00, 0x01, 2, 0, 0, 0, 0, 1, 0x88, 0xB5}, []byte("hello, this is my own protocol")...)
	var user [][]byte
	sent := 0
	p.run(8*iv, 3000, func(e time.Duration) [][]byte {
		if e%(10*time.Millisecond) > time.Millisecond || sent >= 200 {
			return nil
		}
		sent += 2
		user = append(user, lookalike, plain)
		return [][]byte{lookalike, plain}
	}, nil)
	p.specMu.Lock()
	got := p.special
	p.specMu.Unlock()
	if len(got) != sent {
		t.Fatalf("%d user frames of EtherType 0x88B5 sent, %d arrived", sent, len(got))
	}
	for i, g := range got {
		if !bytes.Equal(g, user[i]) {
			t.Fatalf("user frame %d changed: % x", i, g)
		}
	}
	s1, _ := p.a1.Lanes()
	_, r2 := p.a2.Lanes()
	if s1.Stats.ControlPassed.Load() != uint64(sent) || r2.Stats.ControlPassed.Load() != uint64(sent) {
		t.Errorf("passed counts %d, %d, want %d", s1.Stats.ControlPassed.Load(), r2.Stats.ControlPassed.Load(), sent)
	}
	valid := p.checkLines()
	if len(valid) < 4 {
		t.Errorf("%d valid intervals", len(valid))
	}
}

// refusingPort is a segment port whose transmit side refuses: in spells
// (2 ms of every 5 ms, a tx ring that fills), or every frame longer than
// 1000 bytes (a port that will not take the appliance's fragments).
type refusingPort struct {
	dataplane.Port
	big     bool
	refused atomic.Uint64
}

func (r *refusingPort) TxBurst(pkts []*dataplane.Packet) int {
	if !r.big {
		if time.Now().UnixNano()%5e6 < 2e6 {
			r.refused.Add(1)
			return 0
		}
		return r.Port.TxBurst(pkts)
	}
	n := 0
	for n < len(pkts) && len(pkts[n].Data) <= 1000 {
		n++
	}
	if n < len(pkts) {
		r.refused.Add(1)
	}
	if n == 0 {
		return 0
	}
	return r.Port.TxBurst(pkts[:n])
}

// TestRefusingSegmentPortLosesNoUserFrame: #1's segment port refuses
// frames; control frames wait their turn behind the data or are dropped
// and counted, never spun on, so not one user frame is lost in either
// direction (the rings are a NIC's, and a frame that finds its ring full is
// lost), and every interval is reported, valid and right or
// invalid with the reason.
func TestRefusingSegmentPortLosesNoUserFrame(t *testing.T) {
	if raceEnabled {
		t.Skip("judges loss under timing; too slow under -race")
	}
	for _, big := range []bool{false, true} {
		name := map[bool]string{false: "spells", true: "large frames"}[big]
		t.Run(name, func(t *testing.T) {
			const iv = 200 * time.Millisecond
			rp := &refusingPort{big: big}
			// Rings of 4096 slots, 400 ms of this traffic: room for the
			// machine's own hiccups (a 2-CPU test host running other
			// packages' tests lost frames from 512-slot rings), and far
			// short of what a worker spinning on refused frames loses
			// (the old busy-wait: 50 ms per refused fragment, several
			// fragments an interval, five intervals a second).
			ring := 4096
			// A busy 2-CPU host can itself stall the workers past a
			// 512-slot ring (other test packages run beside this one): a
			// loss is judged on a second run too. The busy-wait this test
			// guards against loses frames in every run.
			var p *pair
			var up, down uint64
			for try := 1; ; try++ {
				rp.refused.Store(0)
				p = newPair(t, iv, ring, func(port dataplane.Port) dataplane.Port { rp.Port = port; return rp }, nil)
				up, down = p.run(10*iv, 10000, nil, nil)
				n := p.lostIn[0].Load() + p.lostIn[1].Load()
				if n == 0 || try == 2 {
					break
				}
				t.Logf("run %d: user frames lost at the ingress rings (a→b %d, b→a %d): once more", try, p.lostIn[0].Load(), p.lostIn[1].Load())
			}
			if rp.refused.Load() == 0 {
				t.Fatal("the port never refused")
			}
			if n := p.lostIn[0].Load() + p.lostIn[1].Load(); n > 0 {
				t.Errorf("user frames lost at the ingress rings in two runs: a→b %d, b→a %d", p.lostIn[0].Load(), p.lostIn[1].Load())
			}
			if got := p.gotDown.Load(); got != up {
				t.Errorf("a→b: %d sent, %d arrived", up, got)
			}
			if got := p.gotUp.Load(); got != down {
				t.Errorf("b→a: %d sent, %d arrived", down, got)
			}
			valid := p.checkLines()
			s1, r1 := p.a1.Lanes()
			t.Logf("refused %d bursts; #1 tx dropped %d/%d, control dropped %d, ends %d; %d valid a→b intervals",
				rp.refused.Load(), s1.Stats.TxDropped.Load(), r1.Stats.TxDropped.Load(), s1.Stats.ControlDropped.Load(), s1.Stats.EndsSent.Load(), len(valid))
			if !big && len(valid) < 5 {
				t.Errorf("%d valid intervals", len(valid))
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			for _, r := range p.lines {
				if !r.Valid && r.Reason == "" {
					t.Errorf("interval %d invalid without a reason", r.Interval)
				}
			}
		})
	}
}

// TestStopsAccountEveryFrame: each side stopped mid-interval — gracefully
// (what SIGTERM and SIGHUP do) or abruptly and started again — and every
// frame the receiving appliance recorded is in exactly one reported
// interval: the received counts of its lines add up to what its workers
// recorded, across its restarts. Lines that are not valid say why.
func TestStopsAccountEveryFrame(t *testing.T) {
	if raceEnabled {
		t.Skip("too slow under -race")
	}
	const iv = 200 * time.Millisecond
	for _, tc := range []struct {
		name     string
		receiver bool // act on #2 (the receiver of a→b) rather than #1
		restart  bool
	}{
		{"receiver stops", true, false},
		{"receiver restarts", true, true},
		{"sender stops", false, false},
		{"sender restarts", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, iv, 4096, nil, nil)
			var gone []*appliance.Appliance // #2 instances stopped before the end
			acted := false
			p.run(12*iv, 3000, nil, func(e time.Duration) {
				// Mid-interval: 40 % into the interval after 5.
				if acted || e < 5*iv+2*iv/5 {
					return
				}
				acted = true
				switch {
				case tc.receiver && tc.restart:
					gone = append(gone, p.a2)
					p.a2.Stop(0)
					var err error
					if p.a2, err = appliance.New(p.c2); err != nil {
						t.Fatal(err)
					}
					p.a2.Start()
				case tc.receiver:
					p.a2.Stop(iv + time.Second)
				case tc.restart:
					p.restart1()
				default:
					p.a1.Stop(iv + time.Second)
				}
			})
			if tc.restart && !tc.receiver && !strings.Contains(p.log2.String(), "peer restarted") {
				t.Errorf("the survivor did not log the peer's restart:\n%s", p.log2.String())
			}
			var recorded uint64
			for _, a := range append(gone, p.a2) {
				_, r := a.Lanes()
				recorded += r.Stats.Recorded.Load()
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			var reported uint64
			seen := map[int64]int{}
			for _, r := range p.lines {
				if r.Synopsis != "lda" || r.MEC != "all" {
					continue
				}
				reported += r.Received
				seen[r.Interval]++
				if !r.Valid && r.Reason == "" {
					t.Errorf("interval %d invalid without a reason", r.Interval)
				}
				t.Logf("%d valid=%v received=%d %s", r.Interval, r.Valid, r.Received, r.Reason)
			}
			if reported != recorded {
				t.Errorf("#2 recorded %d frames, its lines account for %d", recorded, reported)
			}
			for k, n := range seen {
				if n > 1 && !tc.restart {
					t.Errorf("interval %d reported %d times", k, n)
				}
			}
		})
	}
}

// syncBuf is a bytes.Buffer for a logger on other goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStopBeforeStart: an appliance built but never started (a failed
// start elsewhere, an early signal) stops at once.
func TestStopBeforeStart(t *testing.T) {
	p := newPair(t, 100*time.Millisecond, 64, nil, nil)
	done := make(chan error, 1)
	go func() { done <- p.a1.Stop(time.Second) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Stop before Start blocked")
	}
}
