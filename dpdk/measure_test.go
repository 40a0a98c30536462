//go:build dpdk

package dpdk

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"github.com/ldafwd/ldafwd/synopsis"
)

// measureRun is one sender lane between two net_ring loopback ports (what
// a port transmits it receives again): frames loaded into a's ring go
// through the lane to b's ring, where the test reads them back.
type measureRun struct {
	a, b    *Port
	lane    *dataplane.Lane
	buf     *dataplane.SynBuffer
	epoch   atomic.Uint64
	clock   uint64
	out     [][]byte // frames out of b's ring, in order
	scratch []*dataplane.Packet
}

// measurePorts opens the two net_ring ports, with small pools: closed
// ports' pools last until Cleanup, and the package's tests share EAL's
// memory.
func measurePorts(t testing.TB, name int) (a, b *Port) {
	t.Helper()
	cfg := Config{RxDesc: 512, TxDesc: 512, Mbufs: 2048}
	var err error
	cfg.Index = 0
	if a, err = Open(fmt.Sprintf("dpdk:net_ring%d", name), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	cfg.Index = 1
	if b, err = Open(fmt.Sprintf("dpdk:net_ring%d", name+1), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// newMeasureRun is a run on ports a and b, empty, whose transmit stamps
// start over.
func newMeasureRun(t *testing.T, a, b *Port, lda synopsis.LDAConfig, fast bool) *measureRun {
	return newMeasureRunRole(t, a, b, lda, fast, dataplane.RoleSender, false)
}

// newMeasureRunRole is newMeasureRun for a lane of role (a receiver's
// End markers come in its frames, unauthenticated, direction 1), whose
// clock is dataplane.RealtimeClock with realClock.
func newMeasureRunRole(t *testing.T, a, b *Port, lda synopsis.LDAConfig, fast bool, role dataplane.Role, realClock bool) *measureRun {
	t.Helper()
	r := &measureRun{a: a, b: b, scratch: newPackets(32)}
	var err error
	r.b.queues[0].fakeTxClock(5_000_000_000, 7)
	cl, err := classifier.NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.buf, err = dataplane.NewSynBuffer(dataplane.SynConfig{LDA: lda, Classes: 1}); err != nil {
		t.Fatal(err)
	}
	r.epoch.Store(1)
	r.clock = 1_000_000_000
	var endr *control.EndReader
	if role == dataplane.RoleReceiver {
		if endr, err = control.NewEndReader(nil, true, 1); err != nil {
			t.Fatal(err)
		}
	}
	clock := func() uint64 { r.clock += 1000; return r.clock }
	if realClock {
		clock = dataplane.RealtimeClock
	}
	r.lane, err = dataplane.NewLane(dataplane.LaneConfig{Rx: r.a, Tx: r.b, Role: role, EndReader: endr,
		Classifier: cl, Buffer: r.buf, Epoch: &r.epoch, NoFastPath: !fast, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if r.lane.FastPath() != fast {
		t.Fatalf("lane fast path %v, want %v", r.lane.FastPath(), fast)
	}
	return r
}

// load puts frames into p's loopback ring.
func (r *measureRun) load(t *testing.T, p *Port, frames [][]byte) {
	t.Helper()
	for len(frames) > 0 {
		n := p.Alloc(r.scratch[:min(len(frames), 32)])
		if n == 0 {
			t.Fatal("no mbufs")
		}
		for i, q := range r.scratch[:n] {
			q.Data = q.Data[:copy(q.Data[:cap(q.Data)], frames[i])]
		}
		if m := p.TxBurst(r.scratch[:n]); m != n {
			t.Fatalf("loading %s: ring took %d of %d", p.Name(), m, n)
		}
		frames = frames[n:]
	}
}

// drain reads up to max frames out of b's ring into out (all: max < 0).
func (r *measureRun) drain(max int) {
	for max != 0 {
		want := 32
		if max > 0 {
			want = min(want, max)
		}
		n := r.b.RxBurst(r.scratch[:want])
		if n == 0 {
			return
		}
		for _, p := range r.scratch[:n] {
			r.out = append(r.out, append([]byte(nil), p.Data...))
		}
		r.b.Free(r.scratch[:n])
		if max > 0 {
			max -= n
		}
	}
}

func (r *measureRun) poll(n int) {
	for i := 0; i < n; i++ {
		r.lane.Poll()
	}
}

// script runs the same frame sequence through a run: full bursts of
// frames the fast path takes, bursts with frames it must hand back, a
// partial burst, interval ends between them, and a tx port that refuses
// part of a burst.
func (r *measureRun) script(t *testing.T, plain, mixed [][]byte) {
	r.load(t, r.a, plain[:320])
	r.poll(20)
	r.drain(-1)
	r.epoch.Store(2) // frames before here in interval 1, after in 2
	r.load(t, r.a, mixed)
	r.poll(40)
	r.drain(-1)
	r.load(t, r.a, plain[320:340]) // a partial burst: waits DrainNs
	r.poll(200)
	r.drain(-1)
	r.epoch.Store(3)
	r.fillTx(t, 40)
	tail := plain[340:404]
	if len(mixed) > 0 {
		// Odd frames behind the refused ones: the prefix's refused
		// frames and the rest of its burst wait in the tx buffer together.
		tail = append(append([][]byte(nil), plain[340:372]...), mixed[:32]...)
	}
	r.load(t, r.a, tail)
	r.poll(3)
	r.drain(-1)
	r.poll(10)
	r.drain(-1)
	r.epoch.Store(4)
	r.poll(2)
	r.drain(-1)
}

// fillTx fills b's ring but for free slots: the lane's next bursts are
// taken in part.
func (r *measureRun) fillTx(t *testing.T, free int) {
	junk := make([][]byte, 0, 2048)
	for i := 0; i < 2048; i++ {
		junk = append(junk, []byte{0xee, byte(i), byte(i >> 8), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0})
	}
	for {
		n := r.b.Alloc(r.scratch[:1])
		if n != 1 {
			t.Fatal("no mbufs")
		}
		p := r.scratch[0]
		p.Data = p.Data[:copy(p.Data[:cap(p.Data)], junk[len(r.out)%len(junk)])]
		if r.b.TxBurst(r.scratch[:1]) != 1 {
			r.b.Free(r.scratch[:1])
			break
		}
	}
	r.drain(free)
}

// TestFastPathIsGoLane runs one frame sequence through a sender lane
// on the Go path and through one on the C fast path (ldaf_measure): the
// LDA of every interval (see checkFastIsGo), the copies' counters, the
// lane's counters and the frames out of the tx port, in order, must be
// the same. Two LDA shapes: the default (digests, a bank sampling every
// frame) and one without digests whose banks sample 2^-1 and 2^-3, so
// that most frames land in the cover bank; then receiver lanes
// (checkReceiverFastIsGo), and the RDA, LDS and sample updates
// (checkFastSynIsGo).
func TestFastPathIsGoLane(t *testing.T) {
	needEAL(t)
	g := traffic.MustGen(traffic.GenConfig{Size: 100, Flows: 64})
	var plain [][]byte
	for i := uint64(0); i < 404; i++ {
		plain = append(plain, g.Frame(make([]byte, 100), i))
	}
	var mixed [][]byte
	seeds := identSeeds()
	for i := 0; i < 200; i++ {
		mixed = append(mixed, g.Frame(make([]byte, 100), 1000+uint64(i)))
		if i%5 == 0 {
			s := seeds[(i/5)%len(seeds)]
			if len(s) > 0 {
				mixed = append(mixed, s)
			}
		}
	}
	a, b := measurePorts(t, 40)
	sparse := synopsis.LDAConfig{Banks: []synopsis.BankConfig{{Rows: 64, SampleLog2: 1}, {Rows: 32, SampleLog2: 3}}}
	for _, c := range []struct {
		name  string
		lda   synopsis.LDAConfig
		mixed [][]byte
	}{
		{"default", synopsis.DefaultLDAConfig(), nil},
		{"sparse-nodigest", sparse, nil},
		{"default-mixed", synopsis.DefaultLDAConfig(), mixed},
		{"sparse-nodigest-mixed", sparse, mixed},
	} {
		t.Run(c.name, func(t *testing.T) { checkFastIsGo(t, a, b, c.lda, plain, c.mixed) })
	}
	// The same ports (their pools last as long as EAL's memory).
	t.Run("receiver", func(t *testing.T) { checkReceiverFastIsGo(t, a, b, false) })
	t.Run("receiver-pollstamp", func(t *testing.T) { checkReceiverFastIsGo(t, a, b, true) })
	t.Run("synopses", func(t *testing.T) { checkFastSynIsGo(t, a, b) })
	// A receiver on a port without stamps records its burst at one time;
	// the same with each frame stamped on its own, as a port with
	// hardware stamps is recorded.
	t.Run("stamp-each", func(t *testing.T) {
		defer setStampEach(setStampEach(true))
		checkReceiverFastIsGo(t, a, b, false)
		checkReceiverFastIsGo(t, a, b, true)
		checkFastSynIsGo(t, a, b)
	})
	t.Run("sender-stamp-err", func(t *testing.T) { checkFastTxStampErr(t, a, b, plain) })
	t.Run("sender-tx-now", func(t *testing.T) { checkFastTxNow(t, a, b, plain) })
	t.Run("polls", func(t *testing.T) { checkFastPolls(t, a, b, plain) })
}

// checkFastPolls: with three full bursts and a partial one waiting, one
// SendMeasured call polls four times: the three full bursts measured
// and transmitted whole are summed in r.Before (frames, bytes, the
// sender's stamp errors, the receiver's poll stamps), the partial
// burst comes back as the last poll's, and every frame of the three is
// out of the tx port, in order, and in the LDA once.
func checkFastPolls(t *testing.T, a, b *Port, plain [][]byte) {
	b.queues[0].fakeTxClock(0, 0) // the real clock
	scratch, pkts := newPackets(32), make([]*dataplane.Packet, 32)
	soft := a.clk.soft
	defer func() { a.clk.soft = soft }()
	// A sender; a receiver whose port stamps in software; one poll-stamped.
	for mode := range 3 {
		receiver, polled := mode > 0, mode == 2
		a.clk.soft = soft
		if polled {
			a.clk.soft = 0
		}
		cs, err := dataplane.NewSynSet(dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1})
		if err != nil {
			t.Fatal(err)
		}
		fs := dataplane.FastSynopses{LDA: cs.LDA[0], Weight: 1}
		var wantBytes uint64
		for i := 0; i < 106; i += 32 {
			n := min(32, 106-i)
			if a.Alloc(scratch[:n]) != n {
				t.Fatal("no mbufs")
			}
			for j, q := range scratch[:n] {
				q.Data = q.Data[:copy(q.Data[:cap(q.Data)], plain[i+j])]
				if i < 96 {
					wantBytes += uint64(len(q.Data))
				}
			}
			if a.TxBurst(scratch[:n]) != n {
				t.Fatal("ring full")
			}
		}
		before := uint64(time.Now().UnixNano())
		r, ok := a.SendMeasured(b, fs, 32, 4, dataplane.RxStamp{On: receiver, PollStart: before}, pkts)
		after := uint64(time.Now().UnixNano())
		p := r.Before
		if !ok || r.Done || r.Rx != 10 || p.Polls != 3 || p.Frames != 96 || p.Bytes != wantBytes {
			t.Fatalf("receiver %v: %+v (ok %v), want 3 polls of 96 frames, %d bytes, then 10 handed back", receiver, r, ok, wantBytes)
		}
		if got := cs.LDA[0].Count(); got != 96 {
			t.Errorf("receiver %v: the LDA counts %d frames, want 96", receiver, got)
		}
		if receiver && !polled {
			if p.Polled != 0 || p.PollNow != 0 || p.TxErrSum != 0 {
				t.Errorf("receiver, software stamps: %+v", p)
			}
		} else if receiver {
			if p.Polled != 96 || p.PollTS < before || p.PollNow > after || p.PollNow < p.PollTS ||
				p.PollErrMax < p.PollNow-p.PollTS || p.PollErrSum > 96*p.PollErrMax || p.PollErrSum < 32*(p.PollNow-p.PollTS) ||
				p.TxErrSum != 0 {
				t.Errorf("receiver: %+v, call from %d to %d", p, before, after)
			}
		} else if p.Polled != 0 || p.TxErrMax == 0 || p.TxErrSum < 96 || p.TxErrSum > 96*p.TxErrMax || p.TxErrMax > after-before {
			t.Errorf("sender: %+v, call of %d ns", p, after-before)
		}
		a.Free(pkts[:r.Rx])
		var out int
		for n := b.RxBurst(scratch); n > 0; n = b.RxBurst(scratch) {
			for j, q := range scratch[:n] {
				if !bytes.Equal(q.Data, plain[out+j]) {
					t.Errorf("receiver %v: frame %d out is not frame %d in", receiver, out+j, out+j)
				}
			}
			out += n
			b.Free(scratch[:n])
		}
		if out != 96 {
			t.Errorf("receiver %v: %d frames out, want 96", receiver, out)
		}
	}
}

// checkFastIsGo runs the script on the Go lane and on the fast path and
// compares them. Without mixed bursts every frame goes in the same
// transmit call, with the same stamp, on both: the LDAs are equal byte
// for byte. With them, the fast path transmits a burst's prefix in C and
// the rest from Go, in two calls where the Go lane makes one, and the
// stamps differ: every bucket must then hold the same frames (count and
// digest).
func checkFastIsGo(t *testing.T, a, b *Port, lda synopsis.LDAConfig, plain, mixed [][]byte) {
	goRun := newMeasureRun(t, a, b, lda, false)
	ga0, gb0 := a.Stats(), b.Stats()
	goRun.script(t, plain, mixed)
	for _, l := range []*dataplane.Lane{goRun.lane} {
		l.Drain()
	}
	goRun.drain(-1)
	ga, gb := a.Stats(), b.Stats()
	cRun := newMeasureRun(t, a, b, lda, true)
	cRun.script(t, plain, mixed)
	cRun.lane.Drain()
	cRun.drain(-1)
	ca, cb := a.Stats(), b.Stats()

	if n := cRun.lane.Stats.FastBursts.Load(); n < 10 {
		t.Errorf("the fast path took %d bursts, want at least 10", n)
	}
	if n := goRun.lane.Stats.FastBursts.Load(); n != 0 {
		t.Errorf("the Go lane took %d fast bursts", n)
	}
	for i := range goRun.buf.Sets {
		gs, cs := goRun.buf.Sets[i], cRun.buf.Sets[i]
		if mixed == nil {
			ge, _ := gs.LDA[0].MarshalBinary()
			ce, _ := cs.LDA[0].MarshalBinary()
			if !bytes.Equal(ge, ce) {
				t.Errorf("copy %d: LDA encodings differ (Go %d frames, C %d)", i, gs.LDA[0].Count(), cs.LDA[0].Count())
			}
		} else if !sameFrames(gs.LDA[0], cs.LDA[0]) {
			t.Errorf("copy %d: LDAs hold different frames (Go %d frames, C %d)", i, gs.LDA[0].Count(), cs.LDA[0].Count())
		}
		// The interval's start and end are the lane's clock readings:
		// the fast path polls several full bursts in one call, so it reads
		// the test's counting clock less often than the Go lane. They
		// must still be in order and meet, as the Go lane's.
		if gs.Frames != cs.Frames || gs.Bytes != cs.Bytes || gs.StampErrNs != cs.StampErrNs ||
			gs.FirstK != cs.FirstK || gs.LastK != cs.LastK || (gs.EndNs > gs.StartNs) != (cs.EndNs > cs.StartNs) {
			t.Errorf("copy %d: Go %+v, C %+v", i, *gs, *cs)
		}
		if i > 0 && (goRun.buf.Sets[i-1].EndNs == gs.StartNs) != (cRun.buf.Sets[i-1].EndNs == cs.StartNs) {
			t.Errorf("copy %d: Go's interval starts where the last ended: %v, C's: %v", i,
				goRun.buf.Sets[i-1].EndNs == gs.StartNs, cRun.buf.Sets[i-1].EndNs == cs.StartNs)
		}
		t.Logf("copy %d: %d frames recorded, k %d..%d", i, gs.Frames, gs.FirstK, gs.LastK)
	}
	type counters struct {
		rx, tx, rxb, rec, mal, passed, excl, flips, dropped uint64
	}
	get := func(l *dataplane.Lane) counters {
		s := &l.Stats
		return counters{s.RxFrames.Load(), s.TxFrames.Load(), s.RxBytes.Load(), s.Recorded.Load(), s.Malformed.Load(),
			s.ControlPassed.Load(), s.Excluded.Load(), s.Flips.Load(), s.TxDropped.Load()}
	}
	if a, b := get(goRun.lane), get(cRun.lane); a != b {
		t.Errorf("lane counters: Go %+v, C %+v", a, b)
	} else {
		t.Logf("lane counters %+v, fast bursts %d", a, cRun.lane.Stats.FastBursts.Load())
	}
	// The ports' counters over each run.
	if ga.RxPackets-ga0.RxPackets != ca.RxPackets-ga.RxPackets || ga.RxBytes-ga0.RxBytes != ca.RxBytes-ga.RxBytes {
		t.Errorf("rx port: Go %+v, C %+v (before: %+v)", ga, ca, ga0)
	}
	if gb.TxPackets-gb0.TxPackets != cb.TxPackets-gb.TxPackets || gb.TxBytes-gb0.TxBytes != cb.TxBytes-gb.TxBytes {
		t.Errorf("tx port: Go %+v, C %+v (before: %+v)", gb, cb, gb0)
	}
	if len(goRun.out) != len(cRun.out) {
		t.Fatalf("%d frames out of the Go lane, %d out of the C path", len(goRun.out), len(cRun.out))
	}
	for i := range goRun.out {
		if !bytes.Equal(goRun.out[i], cRun.out[i]) {
			t.Fatalf("frame %d out: Go %x, C %x", i, goRun.out[i], cRun.out[i])
		}
	}
}

// sameFrames reports whether x and y (one configuration) saw the same
// frames: the same count and, in every bucket, the same count and digest.
func sameFrames(x, y *synopsis.LDA) bool {
	if x.Count() != y.Count() {
		return false
	}
	for bank, bc := range x.Config().Banks {
		for row := 0; row < bc.Rows; row++ {
			_, xc, xd := x.Bucket(bank, row)
			_, yc, yd := y.Bucket(bank, row)
			if xc != yc || xd != yd {
				return false
			}
		}
	}
	return true
}

// checkReceiverFastIsGo runs one frame sequence, End markers of a peer
// among the frames, through a receiver lane on the Go path and through
// one on the C fast path: every copy must hold the same frames
// (counts and digests: the receive stamps are the ports' software
// stamps, read as each run receives), the lanes' counters must agree and
// the frames out (End markers stripped) must be the same, in order. With
// pollStamp the rx port does not stamp (as `ldafwd run`'s ports) and the
// lanes' clock is RealtimeClock: the fast path poll-stamps in C.
func checkReceiverFastIsGo(t *testing.T, a, b *Port, pollStamp bool) {
	if pollStamp {
		soft := a.clk.soft
		a.clk.soft = 0
		defer func() { a.clk.soft = soft }()
	}
	g := traffic.MustGen(traffic.GenConfig{Size: 100, Flows: 64})
	s, err := control.NewSender(control.SenderConfig{Insecure: true, Direction: 1,
		Hello: control.Hello{IntervalNs: 1e9, Lanes: 1, MECs: []string{"all"}}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.NewEndWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UnixNano() // End markers are admitted within the clock skew of the receive stamp
	end := func(k uint64) []byte {
		return w.AppendEnd(nil, k, &control.End{StartNs: t0 + int64(k)*1e6, EndNs: t0 + int64(k+1)*1e6})
	}
	seeds := identSeeds()
	var in [][]byte
	for i := uint64(0); i < 400; i++ {
		switch i {
		case 100:
			in = append(in, end(1))
		case 230:
			in = append(in, end(2))
		}
		in = append(in, g.Frame(make([]byte, 100), i))
		if i >= 150 && i%7 == 0 {
			if s := seeds[int(i)%len(seeds)]; len(s) > 0 {
				in = append(in, s)
			}
		}
	}
	run := func(fast bool) *measureRun {
		r := newMeasureRunRole(t, a, b, synopsis.DefaultLDAConfig(), fast, dataplane.RoleReceiver, pollStamp)
		r.load(t, r.a, in[:300])
		r.poll(60)
		r.drain(-1)
		r.fillTx(t, 40) // the next bursts are taken in part
		r.load(t, r.a, in[300:])
		r.poll(3)
		r.drain(-1)
		r.poll(400)
		r.drain(-1)
		r.lane.Drain()
		r.drain(-1)
		return r
	}
	goRun := run(false)
	before := uint64(time.Now().UnixNano())
	cRun := run(true)
	after := uint64(time.Now().UnixNano())
	if n := cRun.lane.Stats.FastBursts.Load(); n < 5 {
		t.Errorf("the fast path took %d bursts, want at least 5", n)
	}
	for i := range goRun.buf.Sets {
		gs, cs := goRun.buf.Sets[i], cRun.buf.Sets[i]
		if !sameFrames(gs.LDA[0], cs.LDA[0]) || gs.Frames != cs.Frames || gs.Bytes != cs.Bytes {
			t.Errorf("copy %d: Go %d frames (%d recorded, %d bytes), C %d (%d, %d)", i,
				gs.LDA[0].Count(), gs.Frames, gs.Bytes, cs.LDA[0].Count(), cs.Frames, cs.Bytes)
		}
		if gs.PollStamped != cs.PollStamped || (gs.PollStamped > 0) != (cs.StampErrNs > 0) {
			t.Errorf("copy %d: poll-stamped Go %d (error sum %d ns), C %d (%d ns)", i, gs.PollStamped, gs.StampErrNs, cs.PollStamped, cs.StampErrNs)
		}
		// The C path's stamps are receive times of this run.
		for bank, bc := range cs.LDA[0].Config().Banks {
			for row := 0; row < bc.Rows; row++ {
				if sum, n, _ := cs.LDA[0].Bucket(bank, row); n > 0 && (sum/n < before || sum/n > after) {
					t.Fatalf("copy %d bank %d row %d: mean stamp %d outside the run [%d, %d]", i, bank, row, sum/n, before, after)
				}
			}
		}
	}
	type counters struct {
		rx, tx, rxb, rec, mal, passed, excl, flips, stripped, ends, dropped, polled uint64
	}
	get := func(l *dataplane.Lane) counters {
		s := &l.Stats
		return counters{s.RxFrames.Load(), s.TxFrames.Load(), s.RxBytes.Load(), s.Recorded.Load(), s.Malformed.Load(),
			s.ControlPassed.Load(), s.Excluded.Load(), s.Flips.Load(), s.ControlStripped.Load(), s.EndsSeen.Load(),
			s.TxDropped.Load(), s.PollStamped.Load()}
	}
	if x, y := get(goRun.lane), get(cRun.lane); x != y {
		t.Errorf("lane counters: Go %+v, C %+v", x, y)
	} else if pollStamp != (x.polled > 0) {
		t.Errorf("lane counters %+v: %d frames poll-stamped", x, x.polled)
	} else if x.flips != 2 || x.rec == 0 {
		t.Errorf("lane counters %+v: want 2 flips and frames recorded", x)
	} else {
		t.Logf("lane counters %+v, fast bursts %d", x, cRun.lane.Stats.FastBursts.Load())
	}
	if len(goRun.out) != len(cRun.out) {
		t.Fatalf("%d frames out of the Go lane, %d out of the C path", len(goRun.out), len(cRun.out))
	}
	for i := range goRun.out {
		if !bytes.Equal(goRun.out[i], cRun.out[i]) {
			t.Fatalf("frame %d out: Go %x, C %x", i, goRun.out[i], cRun.out[i])
		}
	}
}

// checkFastTxStampErr: a sender lane on the fast path with the real
// clock stamps each transmit call with the midpoint of clock reads
// around it and records half their gap per frame: the copy's StampErrNs
// is more than 0 (two clock reads are never the same nanosecond around
// a transmit) and no frame's share exceeds the whole run's time.
func checkFastTxStampErr(t *testing.T, a, b *Port, plain [][]byte) {
	r := newMeasureRunRole(t, a, b, synopsis.DefaultLDAConfig(), true, dataplane.RoleSender, true)
	r.b.queues[0].fakeTxClock(0, 0)
	start := time.Now()
	r.load(t, r.a, plain[:320])
	r.poll(20)
	r.lane.Drain()
	r.drain(-1)
	elapsed := uint64(time.Since(start).Nanoseconds())
	set := r.buf.Active()
	if r.lane.Stats.FastBursts.Load() == 0 || set.Frames != 320 {
		t.Fatalf("%d fast bursts, %d frames recorded", r.lane.Stats.FastBursts.Load(), set.Frames)
	}
	gap := r.lane.Stats.MaxTxStampGapNs.Load()
	if set.StampErrNs == 0 || set.StampErrNs > set.Frames*elapsed || gap == 0 || gap > elapsed {
		t.Fatalf("stamp error Σ %d ns over %d frames, widest gap %d ns, in a run of %d ns", set.StampErrNs, set.Frames, gap, elapsed)
	}
	t.Logf("mean stamp error %d ns, widest gap %d ns", set.StampErrNs/set.Frames, gap)
}

// checkFastTxNow: a sender's fast path hands back its clock reading after
// the last transmit that took frames (FastResult.TxNow, which the lane
// takes as the poll's time): CLOCK_REALTIME, no earlier than the burst's
// stamp and within the call; none for a receiver.
func checkFastTxNow(t *testing.T, a, b *Port, plain [][]byte) {
	cs, err := dataplane.NewSynSet(dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1})
	if err != nil {
		t.Fatal(err)
	}
	fs := dataplane.FastSynopses{LDA: cs.LDA[0], Weight: 1}
	b.queues[0].fakeTxClock(0, 0) // the real clock
	a.queues[0].polls = 1
	defer func() { a.queues[0].polls = 0 }()
	scratch, pkts := newPackets(32), make([]*dataplane.Packet, 32)
	for _, receiver := range []bool{false, true} {
		if n := a.Alloc(scratch); n != 32 {
			t.Fatal("no mbufs")
		}
		for i, q := range scratch {
			q.Data = q.Data[:copy(q.Data[:cap(q.Data)], plain[i])]
		}
		if a.TxBurst(scratch) != 32 {
			t.Fatal("ring full")
		}
		before := uint64(time.Now().UnixNano())
		r, ok := a.SendMeasured(b, fs, 32, 4, dataplane.RxStamp{On: receiver, PollStart: before}, pkts)
		after := uint64(time.Now().UnixNano())
		if !ok || !r.Done || r.Sent != 32 {
			t.Fatalf("receiver %v: %+v (ok %v)", receiver, r, ok)
		}
		stamp := uint64(b.queues[0].c.tx_ns)
		switch {
		case receiver && r.TxNow != 0:
			t.Errorf("receiver: a transmit clock reading %d", r.TxNow)
		case !receiver && (r.TxNow < before || r.TxNow > after || r.TxNow < stamp):
			t.Errorf("sender: clock reading %d, call from %d to %d, stamp %d", r.TxNow, before, after, stamp)
		}
		for n := b.RxBurst(scratch); n > 0; n = b.RxBurst(scratch) {
			b.Free(scratch[:n])
		}
	}
}
