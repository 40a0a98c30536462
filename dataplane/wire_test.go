package dataplane_test

import (
	"encoding/binary"
	"fmt"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/ring"
	"github.com/ldafwd/ldafwd/synopsis"
)

// wireTruth accumulates what the impaired segment did, per sender
// interval. Delivered records arrive in FIFO order, so the End markers in
// that stream cut it into intervals exactly; lost records arrive at
// admission, so they are placed afterwards by their tx time against the
// End markers' tx times.
type wireTruth struct {
	mu        sync.Mutex
	k         uint64 // interval of the next delivered record (0: before the first End)
	delivered map[uint64]*truthAcc
	endTx     []uint64 // tx time of each End marker, in order
	endK      []uint64
	lostTx    []uint64
}

type truthAcc struct {
	n       uint64
	sum, sq float64
}

func (w *wireTruth) record(frame []byte, r *dataplane.TruthRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	isCtl := len(frame) > 14 && binary.BigEndian.Uint16(frame[12:]) == classifier.ControlEtherType
	if r.Flags&dataplane.TruthLost != 0 {
		if !isCtl { // a lost End marker is not a lost data frame
			w.lostTx = append(w.lostTx, r.TxNs)
		}
		return
	}
	if isCtl {
		var f control.Frame
		if control.ParseFrame(frame, &f) == nil && f.Type == control.TypeEnd {
			w.endTx = append(w.endTx, r.TxNs)
			w.endK = append(w.endK, f.Interval)
			w.k = f.Interval + 1
		}
		return
	}
	a := w.delivered[w.k]
	if a == nil {
		a = &truthAcc{}
		w.delivered[w.k] = a
	}
	d := float64(r.DeliverNs - r.TxNs)
	a.n++
	a.sum += d
	a.sq += d * d
}

// lostData is how many data frames the impairment lost.
func (w *wireTruth) lostData() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return uint64(len(w.lostTx))
}

// lostIn counts lost packets sent in interval k: after End(k-1), before End(k).
func (w *wireTruth) lostIn(k uint64) (n uint64, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	lo, hi := uint64(0), uint64(math.MaxUint64)
	found := false
	for i, ek := range w.endK {
		if ek == k-1 {
			lo = w.endTx[i]
		}
		if ek == k {
			hi, found = w.endTx[i], true
		}
	}
	if !found {
		return 0, false
	}
	// An End marker leads the tx burst it goes out in, so a frame with
	// its tx time was sent after it: [End(k−1), End(k)).
	for _, t := range w.lostTx {
		if t >= lo && t < hi {
			n++
		}
	}
	return n, true
}

// TestTwoAppliancesImpairedLink pushes packets through two appliances
// joined by an impaired ring link: the appliances themselves must
// lose, duplicate and reorder nothing, and each interval's synopses from
// both sides must reproduce the loss the impairment recorded exactly and
// the mean within the reported bound.
func TestTwoAppliancesImpairedLink(t *testing.T) {
	total, interval := 10_000_000, 100*time.Millisecond
	var pace time.Duration // between generator bursts of 32
	if testing.Short() {
		// 100 000 packets would pass in 20-400 ms depending on the
		// machine and -race, in as few as one interval: paced over
		// about a second, ten 50 ms intervals close whole however fast
		// the machine is, and the control side (a goroutine sharing
		// two cores with two spinning workers) keeps up.
		total, interval, pace = 100_000, 50*time.Millisecond, time.Second*32/100_000
	}
	delay, _ := model.NewWeibull(20_000, 0.7) // 20 µs mean
	loss, _ := model.NewUniformLoss(0.001)
	truth := &wireTruth{delivered: map[uint64]*truthAcc{}}

	// gen ─L0─ [a1 appliance 1 b1] ═L1 (impaired)═ [a2 appliance 2 b2] ─L2─ sink
	mk := func(name string, cfg dataplane.LinkConfig) *dataplane.RingLink {
		l, err := dataplane.NewRingLink(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.A().Close(); l.B().Close() })
		return l
	}
	l0 := mk("", dataplane.LinkConfig{Size: 4096, Pool: 32768})
	l1 := mk("", dataplane.LinkConfig{Size: 4096, Pool: 16384, AtoB: &dataplane.ImpairConfig{
		Delay: delay, Loss: loss, Seed: 42, Queue: 16384, Truth: truth.record}})
	l2 := mk("", dataplane.LinkConfig{Size: 4096, Pool: 1024})

	cl, _ := classifier.NewClassifier(nil)
	syn := dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1}
	sbuf, err := dataplane.NewSynBuffer(syn)
	if err != nil {
		t.Fatal(err)
	}
	rbuf, _ := dataplane.NewSynBuffer(syn)
	sender, err := control.NewSender(control.SenderConfig{Insecure: true, Direction: 1,
		Hello: control.Hello{IntervalNs: int64(interval), Lanes: 1, MECs: []string{"all"}}})
	if err != nil {
		t.Fatal(err)
	}
	endw, err := sender.NewEndWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	endr, _ := control.NewEndReader(nil, true, 1)
	toCtl, _ := dataplane.NewFrameQueue(256, 2048)
	var epoch atomic.Uint64
	epoch.Store(uint64(time.Now().UnixNano()) / uint64(interval))

	lane := func(cfg dataplane.LaneConfig) *dataplane.Lane {
		// Correctness, not overload: on a shared 2-core machine a worker
		// can be descheduled for tens of ms; wait it out rather than drop.
		cfg.StallNs = uint64(5 * time.Second)
		l, err := dataplane.NewLane(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a1s := lane(dataplane.LaneConfig{Rx: l0.B(), Tx: l1.A(), Role: dataplane.RoleSender, Classifier: cl, Buffer: sbuf, Epoch: &epoch, End: endw})
	a1r := lane(dataplane.LaneConfig{Rx: l1.A(), Tx: l0.B(), Role: dataplane.RoleForward})
	a2r := lane(dataplane.LaneConfig{Rx: l1.B(), Tx: l2.A(), Role: dataplane.RoleReceiver, Classifier: cl, Buffer: rbuf, EndReader: endr, ToControl: toCtl})
	a2s := lane(dataplane.LaneConfig{Rx: l2.A(), Tx: l1.B(), Role: dataplane.RoleForward})
	w1, _ := dataplane.NewWorker(dataplane.WorkerConfig{ID: 1, Core: -1, Lanes: []*dataplane.Lane{a1s, a1r}})
	w2, _ := dataplane.NewWorker(dataplane.WorkerConfig{ID: 2, Core: -1, Lanes: []*dataplane.Lane{a2r, a2s}})
	w1.Start()
	w2.Start()

	// The sink checks order: IDs strictly increasing (FIFO, no duplicate),
	// gaps only where the impairment lost a packet.
	var sunk, disorder atomic.Uint64
	sinkDone := make(chan struct{})
	stopSink := make(chan struct{})
	go func() {
		defer close(sinkDone)
		pk := make([]*dataplane.Packet, 64)
		var last uint64
		idle := 0
		for {
			n := l2.B().RxBurst(pk)
			for _, p := range pk[:n] {
				id, ok := traffic.FrameID(p.Data)
				if !ok || id <= last {
					disorder.Add(1)
				}
				last = id
			}
			if n > 0 {
				sunk.Add(uint64(n))
				l2.B().Free(pk[:n])
				idle = 0
				continue
			}
			select {
			case <-stopSink:
				if idle++; idle > 1000 {
					return
				}
			default:
			}
			time.Sleep(10 * time.Microsecond)
		}
	}()

	// The test plays the control side: it moves the interval clock and
	// pairs each sender copy with the receiver copy of the same interval.
	type copyOut struct {
		k      uint64
		lda    *synopsis.LDA
		merged bool
		stamp  float64 // mean timestamp uncertainty, ns
	}
	var mu sync.Mutex
	sent, recv := map[uint64]copyOut{}, map[uint64]copyOut{}
	ctlStop := make(chan struct{})
	ctlDone := make(chan struct{})
	go func() {
		defer close(ctlDone)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctlStop:
				return
			case <-tick.C:
			}
			if k := uint64(time.Now().UnixNano()) / uint64(interval); k > epoch.Load() {
				epoch.Store(k)
			}
			for _, side := range []struct {
				b   *dataplane.SynBuffer
				out map[uint64]copyOut
			}{{sbuf, sent}, {rbuf, recv}} {
				for {
					s, ok := side.b.Idle()
					if !ok {
						break
					}
					mu.Lock()
					side.out[s.LastK] = copyOut{s.LastK, s.LDA[0].Clone(), s.Merged, float64(s.StampErrNs) / float64(max(s.Frames, 1))}
					mu.Unlock()
					side.b.Release()
				}
			}
			for {
				if _, _, ok := toCtl.Get(); !ok {
					break
				}
				toCtl.Done()
			}
		}
	}()

	// Generator: IDs 1..total in order, as fast as the link takes them.
	gen := traffic.MustGen(traffic.GenConfig{Flows: 1000, Size: 128})
	pk := make([]*dataplane.Packet, 32)
	genStart := time.Now()
	for id, bursts := uint64(1), 0; id <= uint64(total); bursts++ {
		for pace > 0 && time.Since(genStart) < time.Duration(bursts)*pace {
			time.Sleep(50 * time.Microsecond)
		}
		n := l0.A().Alloc(pk)
		for i := 0; i < n; i++ {
			pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], id)
			id++
		}
		m := 0
		for m < n {
			m += l0.A().TxBurst(pk[m:n])
			if m < n {
				time.Sleep(20 * time.Microsecond)
			}
		}
	}
	// Wait until every frame has reached the sink or was lost on the
	// segment (frames still in the delay line are the wire's, not the
	// appliances'), then close the last interval and stop.
	imp := l1.B().Impairer()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if sunk.Load()+truth.lostData() >= uint64(total) {
			break
		}
	}
	w1.EndInterval()
	for !w1.IntervalEnded() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if err := w1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	close(stopSink)
	<-sinkDone
	time.Sleep(5 * time.Millisecond)
	close(ctlStop)
	<-ctlDone

	// The appliances lost, duplicated and reordered nothing themselves.
	impStats := imp.Stats()
	if disorder.Load() != 0 {
		t.Errorf("%d frames out of order or duplicated at the sink", disorder.Load())
	}
	if got, want := sunk.Load(), uint64(total)-truth.lostData(); got != want {
		t.Errorf("sink got %d frames, want %d sent − %d data frames lost by the impairment", got, total, truth.lostData())
	}
	for _, l := range []*dataplane.Lane{a1s, a1r, a2r, a2s} {
		if d := l.Stats.TxDropped.Load(); d != 0 {
			t.Errorf("a lane dropped %d frames", d)
		}
	}
	if got := a1s.Stats.Recorded.Load(); got != uint64(total) {
		t.Errorf("sender recorded %d of %d frames", got, total)
	}

	// Per interval: exact loss, mean within the reported bound.
	valid, inBound := 0, 0
	var lostTotal uint64
	for k, s := range sent {
		r, ok := recv[k]
		if !ok || s.merged || r.merged {
			continue
		}
		e, err := synopsis.EstimateLDA(s.lda, r.lda, 0.98)
		if err != nil {
			t.Fatal(err)
		}
		lost, known := truth.lostIn(k)
		if !known {
			continue
		}
		if e.Lost != lost {
			t.Errorf("interval %d: LDA lost %d (sent %d recv %d), impairment lost %d", k, e.Lost, e.Sent, e.Received, lost)
		}
		lostTotal += e.Lost
		truth.mu.Lock()
		a := truth.delivered[k]
		truth.mu.Unlock()
		if a == nil || !e.Valid {
			continue
		}
		valid++
		trueMean := a.sum / float64(a.n)
		// The reported bound: sampling (Hoeffding) plus the sender's
		// timestamp uncertainty.
		bound := e.MeanCINs + s.stamp
		if math.Abs(e.MeanNs-trueMean) <= bound {
			inBound++
		} else {
			t.Logf("interval %d: mean %.1f ± %.1f (+%.1f stamp) ns, true %.1f (samples %d)", k, e.MeanNs, e.MeanCINs, s.stamp, trueMean, e.Samples)
		}
	}
	t.Logf("sender's widest timestamp gap %d ns", a1s.Stats.MaxTxStampGapNs.Load())
	t.Logf("%d packets, %d intervals paired and valid, mean inside the bound in %d; impairment lost %d (Σ over valid intervals %d)",
		total, valid, inBound, impStats.Lost, lostTotal)
	if valid < 2 {
		t.Fatalf("only %d valid intervals", valid)
	}
	if float64(inBound) < 0.9*float64(valid) {
		t.Errorf("true mean inside the reported bound in %d of %d intervals (< 90 %%)", inBound, valid)
	}
}

// TestLaneZeroAllocs pins the hot path: a forwarding, a sender and a
// receiver poll of a full burst allocate nothing.
func TestLaneZeroAllocs(t *testing.T) {
	// With the RDA and its timestamp cache too: the appliance's sender
	// records into one as the receiver does (the RDA repair exchange).
	rda := synopsis.DefaultRDAConfig()
	rda.CacheBudget = 1 << 20
	// With a trajectory sample small enough that the polls fill it and
	// raise its level in place: that allocates nothing either.
	smp := synopsis.SampleConfig{Capacity: 64}
	for _, syn := range []dataplane.SynConfig{
		{LDA: synopsis.DefaultLDAConfig(), Classes: 1},
		{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, Classes: 1},
		{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, Sample: &smp, Classes: 1},
	} {
		t.Run(fmt.Sprintf("rda=%v/sample=%v", syn.RDA != nil, syn.Sample != nil), func(t *testing.T) { laneZeroAllocs(t, syn, false) })
	}
	// With capture taps on both lanes: the copy into the ring and, once it
	// is full, the count of skipped frames allocate nothing either.
	t.Run("tap", func(t *testing.T) {
		laneZeroAllocs(t, dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1}, true)
	})
}

func laneZeroAllocs(t *testing.T, syn dataplane.SynConfig, tap bool) {
	l0, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096})
	l1, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096})
	cl, _ := classifier.NewClassifier(nil)
	sbuf, _ := dataplane.NewSynBuffer(syn)
	rbuf, _ := dataplane.NewSynBuffer(syn)
	var epoch atomic.Uint64
	epoch.Store(100)
	inj, _ := ring.NewSPSC[[]byte](16)
	endr, _ := control.NewEndReader(nil, true, 1)
	var taps [2]*dataplane.Tap
	var rings [2]*dataplane.TapRing
	if tap {
		for i := range taps {
			var err error
			if taps[i], err = dataplane.CreateTap(t.TempDir()+"/c.pcapng", dataplane.TapConfig{Slots: 1024}); err != nil {
				t.Fatal(err)
			}
			rings[i], _ = taps[i].Ring(32)
		}
	}
	snd, _ := dataplane.NewLane(dataplane.LaneConfig{Rx: l0.B(), Tx: l1.A(), Role: dataplane.RoleSender, Classifier: cl, Buffer: sbuf, Epoch: &epoch, Inject: inj, Tap: rings[0]})
	rcv, _ := dataplane.NewLane(dataplane.LaneConfig{Rx: l1.B(), Tx: l0.A(), Role: dataplane.RoleReceiver, Classifier: cl, Buffer: rbuf, EndReader: endr, Tap: rings[1]})
	gen := traffic.MustGen(traffic.GenConfig{})
	pk := make([]*dataplane.Packet, 32)
	id := uint64(1)
	fill := func() {
		n := l0.A().Alloc(pk)
		for i := 0; i < n; i++ {
			pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], id)
			id++
		}
		l0.A().TxBurst(pk[:n])
	}
	drainA := func() {
		for {
			n := l0.A().RxBurst(pk)
			if n == 0 {
				return
			}
			l0.A().Free(pk[:n])
		}
	}
	allocs := testing.AllocsPerRun(200, func() {
		fill()
		snd.Poll()
		rcv.Poll()
		snd.Drain()
		rcv.Drain()
		drainA()
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per burst through sender and receiver lanes, want 0", allocs)
	}
	if tap {
		// The writer was not running: the rings filled, the rest was
		// counted; Close writes what they hold.
		for i, tp := range taps {
			if err := tp.Close(); err != nil {
				t.Fatal(err)
			}
			st := tp.Stats()
			rx := []*dataplane.Lane{snd, rcv}[i].Stats.RxFrames.Load()
			if st.Captured != 1024 || st.Captured+st.Skipped != rx {
				t.Errorf("tap %d: %+v, want 1024 captured and the rest of %d skipped", i, st, rx)
			}
		}
	}
	if snd.Stats.Recorded.Load() == 0 || rcv.Stats.Recorded.Load() == 0 {
		t.Error("nothing recorded")
	}
}
