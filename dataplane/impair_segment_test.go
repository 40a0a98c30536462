package dataplane_test

import (
	"encoding/binary"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
)

// TestImpairRemarkLinkLocal: the stage remarks a share of cs2 packets to
// be (IPv4 header checksum still right, IPv6 traffic class rewritten, the
// identity unchanged), consumes every link-local frame it is sent and
// originates its own on schedule; its counters, its truth records and
// what the receiver sees agree.
func TestImpairRemarkLinkLocal(t *testing.T) {
	clk := &vclock{now: 1_000_000}
	var remarked, consumed, injected, other int
	l, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 4096, Pool: 16384, Clock: clk.read, AtoB: &dataplane.ImpairConfig{
		Delay: constDelay(1000), Seed: 3, Remark: []dataplane.Remark{{From: 16, To: 0, Prob: 0.3}},
		ConsumeLinkLocal: true, InjectEveryNs: 100_000,
		Truth: func(f []byte, r *dataplane.TruthRecord) {
			switch {
			case r.Flags&dataplane.TruthRemarked != 0:
				remarked++
				if r.OrigDSCP != 16 {
					t.Errorf("remarked record with original DSCP %d", r.OrigDSCP)
				}
			case r.Flags&dataplane.TruthConsumed != 0:
				consumed++
			case r.Flags&dataplane.TruthInjected != 0:
				injected++
			default:
				other++
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	gen := traffic.MustGen(traffic.GenConfig{Flows: 64})
	pk := make([]*dataplane.Packet, 32)
	var sent, sentLL, cs2 int
	var seenRemark, seenInjected, seenUser int
	var m classifier.Meta
	ids := map[uint64]uint64{} // generator id -> identity hash as sent
	for round := 0; round < 200; round++ {
		n := l.A().Alloc(pk)
		for i := 0; i < n; i++ {
			if i == 5 {
				sentLL++
				pk[i].Data = dataplane.LinkLocalFrame(pk[i].Data[:cap(pk[i].Data)], uint64(1<<40+sentLL))
				continue
			}
			sent++
			id := uint64(sent)
			pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], id)
			if id%2 == 0 { // cs2, fixing the IPv4 checksum as a sender does
				cs2++
				b := pk[i].Data
				if binary.BigEndian.Uint16(b[12:]) == 0x0800 {
					b[15] = 16 << 2
					b[24], b[25] = 0, 0
					binary.BigEndian.PutUint16(b[24:], ^fold(b[14:34]))
				} else {
					b[14], b[15] = 0x60|(16<<2)>>4, b[15]&0x0f // traffic class 0x40
				}
			}
			classifier.Parse(pk[i].Data, &m)
			ids[id] = m.Hash
		}
		if k := l.A().TxBurst(pk[:n]); k != n {
			t.Fatalf("tx took %d of %d", k, n)
		}
		clk.now += 20_000
		for {
			k := l.B().RxBurst(pk)
			if k == 0 {
				break
			}
			for _, p := range pk[:k] {
				classifier.Parse(p.Data, &m)
				if m.Flags&classifier.FlagLinkLocal != 0 {
					seenInjected++
					continue
				}
				seenUser++
				id, _ := traffic.FrameID(p.Data)
				if ids[id] != m.Hash {
					t.Fatalf("frame %d: identity changed on the segment", id)
				}
				if m.Flags&classifier.FlagIPv4 != 0 && fold(p.Data[14:34]) != 0xffff {
					t.Fatalf("frame %d: IPv4 header checksum wrong after the stage", id)
				}
				if id%2 == 0 && m.DSCP == 0 {
					seenRemark++
				} else if want := uint8(16 * (1 - id%2)); m.DSCP != want {
					t.Fatalf("frame %d: DSCP %d, want %d or a remark to 0", id, m.DSCP, want)
				}
			}
			l.B().Free(pk[:k])
		}
	}
	st := l.B().Impairer().Stats()
	t.Logf("%+v; remarked %d of %d cs2", st, seenRemark, cs2)
	if seenUser != sent || st.Lost != 0 {
		t.Errorf("sent %d user frames, %d came out", sent, seenUser)
	}
	if seenRemark != int(st.Remarked) || remarked != seenRemark || seenRemark < cs2/5 || seenRemark > cs2*2/5 {
		t.Errorf("remarked: seen %d, stats %d, truth %d, of %d cs2 at p=0.3", seenRemark, st.Remarked, remarked, cs2)
	}
	if consumed != sentLL || int(st.Consumed) != sentLL {
		t.Errorf("consumed: truth %d, stats %d, sent %d", consumed, st.Consumed, sentLL)
	}
	// 200 rounds of 20 µs: one injection per 100 µs after the first poll.
	if seenInjected != injected || int(st.Injected) != injected || injected < 35 || injected > 40 {
		t.Errorf("injected: seen %d, truth %d, stats %d, want ~39", seenInjected, injected, st.Injected)
	}
	if other != sent-seenRemark {
		t.Errorf("plain delivery records %d, want %d", other, sent-seenRemark)
	}
}

// fold is the one's-complement sum of b as 16-bit words.
func fold(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// TestImpairSegmentZeroAllocs pins the stage's remark, consumption and
// injection, and IntervalTruth's per-class Record, at zero allocations
// per burst.
func TestImpairSegmentZeroAllocs(t *testing.T) {
	clk := &vclock{now: 1}
	cl, _ := classifier.NewClassifierFromSpecs([]string{"c2=dscp:cs2"})
	tr, err := dataplane.NewIntervalTruthClasses(1, cl, 1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 256, Clock: clk.read, AtoB: &dataplane.ImpairConfig{
		Delay: constDelay(1000), Loss: uniformLoss(0.05), DupProb: 0.05, ReorderProb: 0.05, Seed: 1,
		Remark: []dataplane.Remark{{From: 0, To: 16, Prob: 0.2}}, ConsumeLinkLocal: true, InjectEveryNs: 5000, Truth: tr.Record}})
	if err != nil {
		t.Fatal(err)
	}
	g := traffic.MustGen(traffic.GenConfig{})
	out := make([]*dataplane.Packet, 32)
	id := uint64(0)
	a := testing.AllocsPerRun(300, func() {
		k := l.A().Alloc(out)
		for i, q := range out[:k] {
			if i == 3 {
				q.Data = dataplane.LinkLocalFrame(q.Data[:cap(q.Data)], id)
			} else {
				q.Data = g.Frame(q.Data[:cap(q.Data)], id+uint64(i))
			}
		}
		id += uint64(k)
		took := l.A().TxBurst(out[:k])
		l.A().Free(out[took:k])
		clk.now += 3000
		for m := l.B().RxBurst(out); m > 0; m = l.B().RxBurst(out) {
			l.B().Free(out[:m])
		}
	})
	if a != 0 {
		t.Errorf("%.1f allocations per burst, want 0", a)
	}
	if st := l.B().Impairer().Stats(); st.Remarked == 0 || st.Consumed == 0 || st.Injected == 0 {
		t.Errorf("the stage did not remark, consume and inject: %+v", st)
	}
}
