package dataplane_test

import (
	"math"
	"math/rand/v2"
	"sync/atomic"

	"testing"

	"github.com/ldafwd/ldafwd/dataplane/traffic"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// stepClock is a clock that moves only when read, by a random step that
// is now and then huge (a preempted thread, an idle sleep).
type stepClock struct {
	now uint64
	rng *rand.Rand
}

func (c *stepClock) read() uint64 {
	t := c.now
	switch r := c.rng.IntN(100); {
	case r < 5:
		c.now += 200_000 + c.rng.Uint64N(2_000_000) // 0.2–2.2 ms gap
	default:
		c.now += 50 + c.rng.Uint64N(2_000)
	}
	return t
}

// arrivals is an rx port without timestamps of its own (as DPDK without rx
// timestamp offload): frames arrive at set clock times, and RxBurst,
// called between two clock reads, returns those that had arrived by then.
type arrivals struct {
	dataplane.Port // the ring port the frames come from; only RxBurst is ours
	clk            *stepClock
	at             []uint64 // arrival time of the next frames, ascending
	arrived        map[*dataplane.Packet]uint64
	pending        []*dataplane.Packet
}

func (a *arrivals) RxBurst(pkts []*dataplane.Packet) int {
	n := 0
	for n < len(pkts) && len(a.pending) > 0 && a.at[0] < a.clk.now {
		p := a.pending[0]
		a.arrived[p] = a.at[0]
		a.pending, a.at = a.pending[1:], a.at[1:]
		p.TS = 0
		pkts[n] = p
		n++
	}
	return n
}

// stampTap records the TS of every packet the lane transmits.
type stampTap struct {
	dataplane.Port
	ts map[*dataplane.Packet]uint64
}

func (s *stampTap) TxBurst(pkts []*dataplane.Packet) int {
	for _, p := range pkts {
		s.ts[p] = p.TS
	}
	return s.Port.TxBurst(pkts)
}

// TestPollStampBound: a receiver lane on a port that does not stamp
// stamps each burst at poll time, and the uncertainty it records covers
// the real arrival of every frame however long the gaps between polls:
// Σ|stamp − arrival| ≤ the set's StampErrNs, and no frame is further
// from its stamp than MaxRxStampErrNs. Per flow too: the LDS, given each
// frame's uncertainty, bounds what the stamps move each flow's mean
// (FlowEstimate.StampErrNs, checked against an LDS of the true arrivals).
func TestPollStampBound(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		clk := &stepClock{now: 1_000_000_000, rng: rand.New(rand.NewPCG(seed, 7))}
		cl, _ := classifier.NewClassifierFromSpecs(nil)
		lds := synopsis.LDSConfig{Rows: 2, Cols: 1024, MaxFlows: 64}
		syn := dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), LDS: &lds, Classes: 1}
		rbuf, _ := dataplane.NewSynBuffer(syn)
		l1, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 4096, Pool: 8192})
		l2, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 4096, Pool: 8192})
		endr, _ := control.NewEndReader(nil, true, 1)
		src := &arrivals{Port: l1.B(), clk: clk, arrived: map[*dataplane.Packet]uint64{}}
		tap := &stampTap{Port: l2.A(), ts: map[*dataplane.Packet]uint64{}}
		rcv, err := dataplane.NewLane(dataplane.LaneConfig{Rx: src, Tx: tap, Role: dataplane.RoleReceiver, Classifier: cl,
			Buffer: rbuf, EndReader: endr, Clock: clk.read, DrainNs: 1})
		if err != nil {
			t.Fatal(err)
		}
		// 3000 frames, arriving in clumps and trickles.
		gen := traffic.MustGen(traffic.GenConfig{Flows: 16})
		pk := make([]*dataplane.Packet, 1)
		at := clk.now
		for id := uint64(1); id <= 3000; id++ {
			if l1.A().Alloc(pk) != 1 {
				t.Fatal("pool empty")
			}
			pk[0].Data = gen.Frame(pk[0].Data[:cap(pk[0].Data)], id)
			src.pending = append(src.pending, pk[0])
			if clk.rng.IntN(10) == 0 {
				at += clk.rng.Uint64N(1_000_000)
			} else {
				at += clk.rng.Uint64N(3_000)
			}
			src.at = append(src.at, at)
		}
		var sumErr, maxErr uint64
		for polls := 0; len(src.pending) > 0 && polls < 10_000_000; polls++ {
			rcv.Poll()
		}
		rcv.Drain()
		if len(tap.ts) != 3000 {
			t.Fatalf("seed %d: %d frames forwarded", seed, len(tap.ts))
		}
		for p, ts := range tap.ts {
			arr, ok := src.arrived[p]
			if !ok {
				t.Fatal("a frame that never arrived")
			}
			d := max(ts, arr) - min(ts, arr)
			sumErr += d
			maxErr = max(maxErr, d)
		}
		set := rbuf.Active()
		if set.PollStamped != 3000 || set.Frames != 3000 {
			t.Fatalf("seed %d: %d of %d frames poll-stamped, want 3000", seed, set.PollStamped, set.Frames)
		}
		if sumErr > set.StampErrNs || maxErr > rcv.Stats.MaxRxStampErrNs.Load() {
			t.Fatalf("seed %d: stamps off by Σ %d ns (max %d), the lane's bound says Σ %d (max %d)",
				seed, sumErr, maxErr, set.StampErrNs, rcv.Stats.MaxRxStampErrNs.Load())
		}
		// The "sender" here is an LDS of the true arrival times: each
		// flow's estimated mean delay is then its mean stamp error.
		truth, _ := synopsis.NewLDS(lds)
		var m classifier.Meta
		for p := range tap.ts {
			classifier.Parse(p.Data, &m)
			truth.AddFlowKey(m.FlowHash, m.Hash, src.arrived[p], 0, 1)
		}
		flows, err := synopsis.EstimateLDSFlows(truth, set.LDS)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for _, f := range flows {
			if f.UsableBuckets == 0 || f.StampErrNs <= 0 {
				t.Fatalf("seed %d: flow %x: %d usable cells, stamp bound %.0f ns", seed, f.FlowHash, f.UsableBuckets, f.StampErrNs)
			}
			if math.Abs(f.MeanNs) > f.StampErrNs {
				t.Errorf("seed %d: flow %x's stamps off by %.0f ns on average, its bound says %.0f", seed, f.FlowHash, f.MeanNs, f.StampErrNs)
			}
			worst = max(worst, math.Abs(f.MeanNs)/f.StampErrNs)
		}
		t.Logf("seed %d: %d flows, worst |mean stamp error| / bound %.2f", seed, len(flows), worst)
		t.Logf("seed %d: mean |stamp − arrival| %.0f ns, mean bound %.0f ns, max %d ≤ %d", seed,
			float64(sumErr)/3000, float64(set.StampErrNs)/3000, maxErr, rcv.Stats.MaxRxStampErrNs.Load())
	}
}

// uncertainTx is a tx port that stamps its own transmissions as a DPDK
// port does (dataplane.TxStamper with TxStampErr): each burst's stamp is
// the midpoint of a window that is now and then a long stall.
type uncertainTx struct {
	dataplane.Port
	rng     *rand.Rand
	now     uint64
	ts, err uint64
}

func (u *uncertainTx) TxBurst(pkts []*dataplane.Packet) int {
	gap := uint64(100)
	if u.rng.IntN(10) == 0 {
		gap = 5_000_000 // a thread preempted around the PMD's call
	}
	u.now += 1000 + gap
	u.ts, u.err = u.now-gap/2, gap/2
	return u.Port.TxBurst(pkts)
}
func (u *uncertainTx) LastTxNs() uint64    { return u.ts }
func (u *uncertainTx) LastTxErrNs() uint64 { return u.err }

// TestTxStampErrRecorded: a sender lane on a port that reports how far
// its transmit stamps may be off records exactly that uncertainty for
// every frame (the set's StampErrNs, which the sender ships as its mean
// stamp error) and the widest window in MaxTxStampGapNs.
func TestTxStampErrRecorded(t *testing.T) {
	cl, _ := classifier.NewClassifierFromSpecs(nil)
	buf, _ := dataplane.NewSynBuffer(dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1})
	l1, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 4096, Pool: 8192})
	l2, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 4096, Pool: 8192})
	tx := &uncertainTx{Port: l2.A(), rng: rand.New(rand.NewPCG(3, 4)), now: 1_000_000_000}
	var epoch atomic.Uint64
	epoch.Store(1)
	clock := uint64(1_000_000_000)
	snd, err := dataplane.NewLane(dataplane.LaneConfig{Rx: l1.B(), Tx: tx, Role: dataplane.RoleSender, Classifier: cl,
		Buffer: buf, Epoch: &epoch, NoFastPath: true, Clock: func() uint64 { clock += 1000; return clock }, DrainNs: 1})
	if err != nil {
		t.Fatal(err)
	}
	gen := traffic.MustGen(traffic.GenConfig{Flows: 16})
	pk := make([]*dataplane.Packet, 16)
	var want, widest uint64
	for round := 0; round < 50; round++ {
		n := l1.A().Alloc(pk)
		for i, p := range pk[:n] {
			p.Data = gen.Frame(p.Data[:cap(p.Data)], uint64(round*16+i+1))
		}
		if m := l1.A().TxBurst(pk[:n]); m != n {
			t.Fatalf("loading: %d of %d", m, n)
		}
		before := tx.now
		for i := 0; i < 100 && tx.now == before; i++ {
			snd.Poll()
		}
		snd.Drain()
		if tx.now == before {
			t.Fatal("the lane transmitted nothing")
		}
		want += tx.err * uint64(n)
		widest = max(widest, 2*tx.err)
	}
	set := buf.Active()
	if set.Frames != 800 || set.StampErrNs != want {
		t.Fatalf("%d frames, stamp error Σ %d ns, want 800 and Σ %d", set.Frames, set.StampErrNs, want)
	}
	if g := snd.Stats.MaxTxStampGapNs.Load(); g != widest || widest < 5_000_000 {
		t.Fatalf("MaxTxStampGapNs %d, widest window %d", g, widest)
	}
}
