package dataplane_test

import (
	"encoding/binary"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"sync/atomic"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// switchFrame is a frame a switch or router speaks on a link: an STP BPDU
// (i%3 == 0), LLDP (1) or an ARP request (2), distinct per i.
func switchFrame(buf []byte, i uint64) []byte {
	b := buf[:64]
	clear(b)
	copy(b[6:], []byte{0x02, 0x5e, 0, 0, 0, 9})
	switch i % 3 {
	case 0:
		copy(b, []byte{0x01, 0x80, 0xC2, 0, 0, 0})
		binary.BigEndian.PutUint16(b[12:], 39)
		copy(b[14:], []byte{0x42, 0x42, 0x03})
	case 1:
		copy(b, []byte{0x01, 0x80, 0xC2, 0, 0, 0x0E})
		binary.BigEndian.PutUint16(b[12:], 0x88CC)
	default:
		copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		binary.BigEndian.PutUint16(b[12:], 0x0806)
	}
	binary.BigEndian.PutUint64(b[40:], i)
	return b
}

// TestLaneLinkLocal: link-local frames mixed into the user's traffic at
// the sender, and more injected on the segment (as a switch there
// originates them), are forwarded end to end but recorded in no synopsis
// and counted as Excluded per lane; with a linklocal:yes rule they are
// recorded in that class at both ends instead.
func TestLaneLinkLocal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []string
	}{
		{"default", nil},
		{"rules", []string{"udp=proto:udp"}},
		{"measured", []string{"ll=linklocal:yes", "udp=proto:udp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := classifier.NewClassifierFromSpecs(tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			syn := dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: cl.NumClasses()}
			c := newLaneChain(t, cl, syn)
			l0, l1, l2, snd, rcv, sbuf, rbuf := c.l0, c.l1, c.l2, c.snd, c.rcv, c.sbuf, c.rbuf
			gen := traffic.MustGen(traffic.GenConfig{Flows: 64})
			pk := make([]*dataplane.Packet, 32)
			var user, local, injected, out uint64
			for burst := uint64(0); burst < 60; burst++ {
				n := l0.A().Alloc(pk)
				for i := 0; i < n; i++ {
					if i%8 == 3 {
						local++
						pk[i].Data = switchFrame(pk[i].Data[:cap(pk[i].Data)], local)
						continue
					}
					user++
					pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], user)
				}
				l0.A().TxBurst(pk[:n])
				snd.Poll()
				snd.Drain()
				// The segment's own BPDU, straight onto the link the
				// receiver reads.
				if burst%4 == 0 && l1.A().Alloc(pk[:1]) == 1 {
					injected++
					pk[0].Data = switchFrame(pk[0].Data[:cap(pk[0].Data)], 1000+3*injected)
					l1.A().TxBurst(pk[:1])
				}
				for rcv.Poll() { // a burst and the injected frame: more than one rx burst
				}
				rcv.Drain()
				for {
					k := l2.B().RxBurst(pk)
					if k == 0 {
						break
					}
					out += uint64(k)
					l2.B().Free(pk[:k])
				}
			}
			if out != user+local+injected {
				t.Fatalf("%d user + %d link-local + %d injected frames, %d came out: measurement must not drop frames", user, local, injected, out)
			}
			measured := cl.MeasuresLinkLocal()
			wantSnd, wantRcv := local, local+injected // excluded
			if measured {
				wantSnd, wantRcv = 0, 0
			}
			if got := snd.Stats.Excluded.Load(); got != wantSnd {
				t.Errorf("sender excluded %d, want %d", got, wantSnd)
			}
			if got := rcv.Stats.Excluded.Load(); got != wantRcv {
				t.Errorf("receiver excluded %d, want %d", got, wantRcv)
			}
			var sTotal, rTotal uint64
			for c := 0; c < cl.NumClasses(); c++ {
				sTotal += sbuf.Active().LDA[c].Count()
				rTotal += rbuf.Active().LDA[c].Count()
			}
			wantS, wantR := user, user
			if measured {
				wantS, wantR = user+local, user+local+injected
				if got := sbuf.Active().LDA[1].Count(); got != local {
					t.Errorf("sender class ll has %d packets, want %d", got, local)
				}
				if got := rbuf.Active().LDA[1].Count(); got != local+injected {
					t.Errorf("receiver class ll has %d packets, want %d", got, local+injected)
				}
			}
			if sTotal != wantS || rTotal != wantR {
				t.Errorf("recorded sender %d receiver %d, want %d and %d", sTotal, rTotal, wantS, wantR)
			}
			if snd.Stats.Recorded.Load() != wantS || rcv.Stats.Recorded.Load() != wantR {
				t.Errorf("Recorded counters %d %d, want %d %d", snd.Stats.Recorded.Load(), rcv.Stats.Recorded.Load(), wantS, wantR)
			}
		})
	}
}

// TestLaneLinkLocalZeroAllocs pins the lanes' link-local branch (excluded
// and claimed alike) at zero allocations.
func TestLaneLinkLocalZeroAllocs(t *testing.T) {
	for _, rules := range [][]string{nil, {"ll=linklocal:yes,proto:udp", "ll2=linklocal:yes"}} {
		cl, _ := classifier.NewClassifierFromSpecs(rules)
		syn := dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: cl.NumClasses()}
		sbuf, _ := dataplane.NewSynBuffer(syn)
		rbuf, _ := dataplane.NewSynBuffer(syn)
		l0, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096})
		l1, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096})
		l2, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096})
		var epoch atomic.Uint64
		epoch.Store(100)
		endr, _ := control.NewEndReader(nil, true, 1)
		snd, _ := dataplane.NewLane(dataplane.LaneConfig{Rx: l0.B(), Tx: l1.A(), Role: dataplane.RoleSender, Classifier: cl, Buffer: sbuf, Epoch: &epoch})
		rcv, _ := dataplane.NewLane(dataplane.LaneConfig{Rx: l1.B(), Tx: l2.A(), Role: dataplane.RoleReceiver, Classifier: cl, Buffer: rbuf, EndReader: endr})
		gen := traffic.MustGen(traffic.GenConfig{})
		pk := make([]*dataplane.Packet, 32)
		id := uint64(1)
		allocs := testing.AllocsPerRun(200, func() {
			n := l0.A().Alloc(pk)
			for i := 0; i < n; i++ {
				if i%4 == 0 {
					pk[i].Data = switchFrame(pk[i].Data[:cap(pk[i].Data)], id)
				} else {
					pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], id)
				}
				id++
			}
			l0.A().TxBurst(pk[:n])
			snd.Poll()
			snd.Drain()
			rcv.Poll()
			rcv.Drain()
			for k := l2.B().RxBurst(pk); k > 0; k = l2.B().RxBurst(pk) {
				l2.B().Free(pk[:k])
			}
		})
		if allocs != 0 {
			t.Errorf("rules %v: %.1f allocations per burst with link-local frames, want 0", rules, allocs)
		}
		if snd.Stats.Recorded.Load() == 0 || (rules == nil) != (snd.Stats.Excluded.Load() > 0) {
			t.Errorf("rules %v: recorded %d, excluded %d", rules, snd.Stats.Recorded.Load(), snd.Stats.Excluded.Load())
		}
	}
}
