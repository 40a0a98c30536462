//go:build dpdk

package dpdk

import (
	"encoding/binary"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"github.com/ldafwd/ldafwd/synopsis"
)

// fastSynConfigs are synopsis shapes the C fast path must record exactly
// as SynSet.Record does: small, so that cells collide, the RDA's
// timestamp cache fills (the Go lane raises its level, C goes on at the
// new one), the LDS flow table refuses flows and samples them in and its
// rows sample packets, the trajectory sample fills (its level rises in
// Go); then RDA banks chosen by one Remix per bank (chunk 0), no cache,
// no flow table; each synopsis alone; every row taking every packet
// beside a flow table too small for the traffic (held flows' packets in
// their slots, the refused ones' in their cells), in shapes other than
// the default; `ldafwd run`'s default shapes, and the same with RDA
// banks of another power of two cells (its loop, the indexing not fixed).
func fastSynConfigs() map[string]dataplane.SynConfig {
	rda := synopsis.RDAConfig{Banks: 3, Cells: 61, CacheBudget: 1 << 14}
	lds := synopsis.LDSConfig{Rows: 4, Cols: 37, CellsPerFlow: 3, RowRates: []float64{1, 0.5, 0.25, 0.125}, MaxFlows: 24, HoldRate: 0.5}
	rda1 := synopsis.RDAConfig{Banks: 1, Cells: 1000}
	lds1 := synopsis.LDSConfig{Rows: 2, Cols: 1000}
	def := synopsis.DefaultRDAConfig()
	pow2 := synopsis.DefaultRDAConfig()
	pow2.Cells = 1024 // the default shapes' loop with the RDA's indexing held in its shape
	ldsHeld := synopsis.LDSConfig{Rows: 3, Cols: 101, MaxFlows: 200}
	defLDS := synopsis.LDSConfig{Cols: 8192, MaxFlows: 1 << 16, FlowsGrow: true}
	smp := synopsis.SampleConfig{Level: 1, Capacity: 200}
	defSmp := synopsis.DefaultSampleConfig()
	return map[string]dataplane.SynConfig{
		"small":   {LDA: synopsis.DefaultLDAConfig(), RDA: &rda, LDS: &lds, Sample: &smp, Classes: 1, Weights: []uint32{3}},
		"plain":   {LDA: synopsis.DefaultLDAConfig(), RDA: &rda1, LDS: &lds1, Classes: 1},
		"rda":     {LDA: synopsis.DefaultLDAConfig(), RDA: &rda, Classes: 1},
		"lds":     {LDA: synopsis.DefaultLDAConfig(), LDS: &lds, Classes: 1},
		"sample":  {LDA: synopsis.DefaultLDAConfig(), Sample: &smp, Classes: 1},
		"held":    {LDA: synopsis.DefaultLDAConfig(), RDA: &rda1, LDS: &ldsHeld, Classes: 1, Weights: []uint32{3}},
		"default": {LDA: synopsis.DefaultLDAConfig(), RDA: &def, LDS: &defLDS, Sample: &defSmp, Classes: 1},
		"pow2":    {LDA: synopsis.DefaultLDAConfig(), RDA: &pow2, LDS: &defLDS, Sample: &defSmp, Classes: 1},
	}
}

// fastSynRun feeds frames, in bursts of 32, through SendMeasured on a's
// queue (to b) recording in one SynSet, and records what the Go lane
// would in another: each frame C measured with the stamp C gave it (the
// transmit stamp of a fake clock, or a receiver's poll stamp and its
// error), SynSet.Record after classifier.ParseLevel. Frames C hands back
// (a burst it did not take, the rest behind a prefix, a burst C leaves to
// Go because the timestamp cache could fill) go through Record in both.
// It returns both sets and the bursts C measured.
func fastSynRun(t *testing.T, a, b *Port, cfg dataplane.SynConfig, frames [][]byte, receiver bool) (cs, gs *dataplane.SynSet, done int) {
	t.Helper()
	var err error
	if cs, err = dataplane.NewSynSet(cfg); err != nil {
		t.Fatal(err)
	}
	if gs, err = dataplane.NewSynSet(cfg); err != nil {
		t.Fatal(err)
	}
	// One poll a call: each call's frames are compared with the Go
	// path's burst by burst (the multi-poll sums: checkFastPolls).
	a.queues[0].polls = 1
	defer func() { a.queues[0].polls = 0 }()
	weight := uint32(1)
	if cfg.Weights != nil {
		weight = cfg.Weights[0]
	}
	fs := dataplane.FastSynopses{LDA: cs.LDA[0], LDS: cs.LDS, Weight: weight}
	if cs.RDA != nil {
		fs.RDA = cs.RDA[0]
	}
	if cs.Sample != nil {
		fs.Sample = cs.Sample[0]
	}
	if receiver {
		soft := a.clk.soft
		a.clk.soft = 0 // no port stamps: C poll-stamps every frame
		defer func() { a.clk.soft = soft }()
	}
	tq := b.queues[0]
	tq.fakeTxClock(5_000_000_000, 7)
	var m classifier.Meta
	record := func(set *dataplane.SynSet, f []byte, ts, errNs uint64) {
		classifier.ParseLevel(f, &m, classifier.LevelFull)
		if m.Flags&identSpecial == 0 {
			set.Record(&m, 0, ts, errNs)
		}
	}
	goTS := uint64(9_000_000_000)
	both := func(pkts []*dataplane.Packet) {
		for _, p := range pkts {
			goTS += 13
			record(cs, p.Data, goTS, 0)
			record(gs, p.Data, goTS, 0)
		}
		a.Free(pkts)
	}
	scratch := newPackets(32)
	pkts := make([]*dataplane.Packet, 32)
	load := func(fr [][]byte) {
		n := a.Alloc(scratch[:len(fr)])
		if n != len(fr) {
			t.Fatal("no mbufs")
		}
		for i, q := range scratch[:n] {
			q.Data = q.Data[:copy(q.Data[:cap(q.Data)], fr[i])]
		}
		if a.TxBurst(scratch[:n]) != n {
			t.Fatal("ring full")
		}
	}
	drainB := func() {
		for {
			n := b.RxBurst(scratch)
			if n == 0 {
				return
			}
			b.Free(scratch[:n])
		}
	}
	for idx := 0; idx < len(frames); {
		load(frames[idx:min(idx+32, len(frames))])
		rx := dataplane.RxStamp{On: receiver}
		if receiver {
			rx.PollStart = uint64(time.Now().UnixNano()) - 1000
		}
		r, ok := a.SendMeasured(b, fs, 32, 4, rx, pkts)
		switch {
		case !ok:
			n := a.RxBurst(pkts)
			both(pkts[:n])
			idx += n
		case !r.Done:
			both(pkts[:r.Rx])
			idx += r.Rx
		default:
			done++
			measured := r.Rx - r.Rest
			if !receiver && r.Sent != measured || receiver && r.Polled != measured {
				t.Fatalf("burst of %d: %d measured, %d sent, %d poll-stamped", r.Rx, measured, r.Sent, r.Polled)
			}
			if r.TxNow != 0 { // the test clock is no lane's clock
				t.Fatalf("burst of %d: a clock reading %d on the test clock", r.Rx, r.TxNow)
			}
			for _, f := range frames[idx : idx+measured] {
				if receiver {
					record(gs, f, r.PollTS, r.PollNow-r.PollTS)
				} else {
					record(gs, f, uint64(tq.c.tx_ns), 0) // one transmit call: one stamp
				}
			}
			both(pkts[r.Kept : r.Kept+r.Rest])
			idx += r.Rx
		}
		drainB()
	}
	return cs, gs, done
}

// fastSynPorts opens FuzzFastSynC's net_ring pair, once: ports' pools
// last until EAL's cleanup, and the package's tests share EAL's memory.
func fastSynPorts(t testing.TB) (a, b *Port) {
	fastSynOnce.Do(func() {
		cfg := Config{RxDesc: 128, TxDesc: 128, Mbufs: 512} // bursts of 32, drained after each
		if fastSynA, fastSynErr = Open("dpdk:net_ring60", cfg); fastSynErr != nil {
			return
		}
		cfg.Index = 1
		fastSynB, fastSynErr = Open("dpdk:net_ring61", cfg)
	})
	if fastSynErr != nil {
		t.Fatal(fastSynErr)
	}
	return fastSynA, fastSynB
}

var (
	fastSynOnce        sync.Once
	fastSynA, fastSynB *Port
	fastSynErr         error
)

// sameSyn reports the first synopsis in which cs and gs differ, "" if
// none: the LDA, the RDA (cells, timestamp cache and its flows, sampling
// level, duplicates), the LDS (cells, counters, flow table and its keys,
// once the packets C held back in the flow table are settled into the
// cells, as the control side settles them), the trajectory sample
// (entries, flows, threshold, stamp error).
func sameSyn(cs, gs *dataplane.SynSet) string {
	if cs.LDS != nil {
		cs.LDS.SettleFlows()
		gs.LDS.SettleFlows()
	}
	switch {
	case !reflect.DeepEqual(cs.LDA[0], gs.LDA[0]):
		return "LDA"
	case cs.RDA != nil && !reflect.DeepEqual(cs.RDA[0], gs.RDA[0]):
		return "RDA"
	case !reflect.DeepEqual(cs.LDS, gs.LDS):
		return "LDS"
	case cs.Sample != nil && !reflect.DeepEqual(cs.Sample[0], gs.Sample[0]):
		return "sample"
	}
	return ""
}

// fastSynFrames is traffic for checkFastSynIsGo: generated flows of every
// stack and of several sizes (minimum-size frames' short L4 windows),
// some 802.1Q-tagged, some sent two and three times (the timestamp
// cache's duplicates), identSeeds' odd frames among them.
func fastSynFrames(n int) [][]byte {
	var out [][]byte
	gens := []*traffic.Gen{
		traffic.MustGen(traffic.GenConfig{Size: 82, Flows: 300}),
		traffic.MustGen(traffic.GenConfig{Size: 100, Flows: 50}),
		traffic.MustGen(traffic.GenConfig{Size: 594, Flows: 700}),
	}
	seeds := identSeeds()
	for i := 0; len(out) < n; i++ {
		g := gens[i%len(gens)]
		f := g.Frame(make([]byte, g.Size()), uint64(i*7919))
		switch {
		case i%11 == 3:
			// An 802.1Q tag.
			t := make([]byte, 0, len(f)+4)
			t = append(t, f[:12]...)
			t = binary.BigEndian.AppendUint16(t, 0x8100)
			t = binary.BigEndian.AppendUint16(t, uint16(i&0xfff))
			f = append(t, f[12:]...)
		case i%13 == 5 && len(out) > 40:
			f = out[len(out)-37] // seen before: a duplicate
		case i%19 == 2:
			// A minimum-size frame: 10 bytes of L4, padded to 60.
			switch binary.BigEndian.Uint16(f[12:]) {
			case 0x0800:
				binary.BigEndian.PutUint16(f[16:], 30)
				f = f[:60]
			case 0x86DD:
				binary.BigEndian.PutUint16(f[18:], 10)
				f = f[:64]
			}
		case i%17 == 0:
			if s := seeds[(i/17)%len(seeds)]; len(s) > 0 {
				f = s
			}
		}
		out = append(out, f)
		if i%29 == 7 {
			out = append(out, f, f) // three copies in a row
		}
	}
	return out
}

// checkFastSynIsGo is the differential test of the C fast path's RDA and
// LDS and trajectory sample (measure.h's ldaf_syn_add), a subtest of TestFastPathIsGoLane on
// its ports: the same frames through C and through SynSet.Record must
// leave every synopsis identical, every cell, counter, cache slot and
// flow-table entry, sender and receiver, in every shape of
// fastSynConfigs.
func checkFastSynIsGo(t *testing.T, a, b *Port) {
	frames := fastSynFrames(6000)
	for name, cfg := range fastSynConfigs() {
		for _, receiver := range []bool{false, true} {
			cs, gs, done := fastSynRun(t, a, b, cfg, frames, receiver)
			// In the default shape C holds a held flow's packets back in
			// its flow-table slot: before SettleFlows the LDS differs.
			if held := !reflect.DeepEqual(cs.LDS, gs.LDS); held != (name == "default" || name == "pow2" || name == "held") {
				t.Errorf("%s, receiver %v: LDS differs before settling: %v", name, receiver, held)
			}
			// The control side takes the copy through SynBuffer.Idle,
			// which settles it.
			if handOver(t, cfg, cs); !reflect.DeepEqual(cs.LDS, gs.LDS) {
				t.Errorf("%s, receiver %v: the LDS SynBuffer.Idle hands over differs", name, receiver)
			}
			if d := sameSyn(cs, gs); d != "" {
				t.Errorf("%s, receiver %v: the %s differs", name, receiver, d)
			}
			if done < 50 {
				t.Errorf("%s, receiver %v: C measured %d bursts, want at least 50", name, receiver, done)
			}
			if name == "held" {
				if ft := cs.LDS.Flows(); ft.Refused() == 0 || ft.Len() == 0 {
					t.Errorf("held, receiver %v: flows %d held, %d refused: want both (slot sums and cells)", receiver, ft.Len(), ft.Refused())
				}
			}
			if name != "small" {
				continue
			}
			// The shapes' corners were reached.
			c, ft, smp := cs.RDA[0].Cache(), cs.LDS.Flows(), cs.Sample[0]
			if smp.Raised() < 2 || smp.Len() == 0 || receiver && smp.StampErrNs() == 0 {
				t.Errorf("%s, receiver %v: sample raised %d times, %d held, stamp error %d ns", name, receiver, smp.Raised(), smp.Len(), smp.StampErrNs())
			}
			if c.Level() < 2 || c.Dups() == 0 || c.LaterLost() == 0 || ft.Refused() == 0 || ft.Len() == 0 || ft.Missed() == 0 {
				t.Errorf("%s, receiver %v: cache level %d, %d dups, %d later lost; flows %d held, %d refused, %d missed",
					name, receiver, c.Level(), c.Dups(), c.LaterLost(), ft.Len(), ft.Refused(), ft.Missed())
			}
			t.Logf("%s, receiver %v: %d of %d bursts in C; cache level %d, %d dups; flows %d held, %d refused",
				name, receiver, done, len(frames)/32, c.Level(), c.Dups(), ft.Len(), ft.Refused())
		}
	}
}

// handOver passes cs through a SynBuffer as the worker hands a copy to
// the control side: cs is the active copy, flipped, taken with Idle.
func handOver(t *testing.T, cfg dataplane.SynConfig, cs *dataplane.SynSet) {
	t.Helper()
	var buf dataplane.SynBuffer
	buf.Sets[0] = cs
	for i := 1; i < len(buf.Sets); i++ {
		s, err := dataplane.NewSynSet(cfg)
		if err != nil {
			t.Fatal(err)
		}
		buf.Sets[i] = s
	}
	if !buf.Flip(cs.LastK, cs.EndNs) {
		t.Fatal("no flip")
	}
	if idle, ok := buf.Idle(); !ok || idle != cs {
		t.Fatal("Idle did not hand over the flipped copy")
	}
}

// FuzzFastSynC is checkFastSynIsGo's comparison on generated traffic with
// the fuzzer's frame among it, two copies in a row and cut short, in two
// shapes: what C records of it (the flow, its key, the cells it lands
// in, its flow's held-back sums once settled) must be what SynSet.Record
// does.
func FuzzFastSynC(f *testing.F) {
	for _, s := range identSeeds() {
		f.Add(s, false)
		f.Add(s, true)
	}
	needEAL(f)
	a, b := fastSynPorts(f)
	base := fastSynFrames(96)
	cfgs := fastSynConfigs()
	f.Fuzz(func(t *testing.T, frame []byte, receiver bool) {
		if len(frame) > 1500 {
			frame = frame[:1500]
		}
		frames := append([][]byte(nil), base...)
		if len(frame) > 0 {
			frames[5], frames[40], frames[41], frames[70] = frame, frame, frame, frame[:len(frame)/2+1]
		}
		// "small" samples rows and cells; "held" sums held flows in
		// their flow-table slots.
		for _, name := range []string{"small", "held"} {
			cs, gs, _ := fastSynRun(t, a, b, cfgs[name], frames, receiver)
			if d := sameSyn(cs, gs); d != "" {
				t.Fatalf("%s, frame %x, receiver %v: the %s differs", name, frame, receiver, d)
			}
		}
	})
}
