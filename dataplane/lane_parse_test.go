package dataplane_test

import (
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"sync/atomic"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestLaneParseModes holds each parse a measuring lane may choose —
// ParseLean (default MEC, no LDS), ParseNoFlowHash (MEC rules, no LDS),
// Parse (LDS) — to what Parse + Classify say of every frame: a sender and
// a receiver lane record each MEC's packets exactly as the reference
// classifies them, and the LDS every IP packet.
func TestLaneParseModes(t *testing.T) {
	ldsCfg, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		rules []string
		lds   bool
	}{
		{"lean", nil, false},
		{"rules", []string{"udp4=proto:udp,dst:0.0.0.0/0", "web=sport:1024-1050", "v6=dst:::/0"}, false},
		{"rules+lds", []string{"udp4=proto:udp,dst:0.0.0.0/0", "web=sport:1024-1050"}, true},
		{"lds", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := classifier.NewClassifierFromSpecs(tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			syn := dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: cl.NumClasses()}
			if tc.lds {
				syn.LDS = &ldsCfg
			}
			c := newLaneChain(t, cl, syn)
			l0, l2, snd, rcv, sbuf, rbuf := c.l0, c.l2, c.snd, c.rcv, c.sbuf, c.rbuf
			gen := traffic.MustGen(traffic.GenConfig{Flows: 64})
			want := make([]uint64, cl.NumClasses())
			var ip uint64
			var m classifier.Meta
			pk := make([]*dataplane.Packet, 32)
			id, out := uint64(1), uint64(0)
			for burst := 0; burst < 100; burst++ {
				n := l0.A().Alloc(pk)
				for i := 0; i < n; i++ {
					pk[i].Data = gen.Frame(pk[i].Data[:cap(pk[i].Data)], id)
					id++
					classifier.Parse(pk[i].Data, &m)
					want[cl.Classify(&m)]++
					if m.FlowHash != 0 {
						ip++
					}
				}
				l0.A().TxBurst(pk[:n])
				snd.Poll()
				snd.Drain()
				rcv.Poll()
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
			total := id - 1
			if total < 3000 || out != total {
				t.Fatalf("%d frames sent, %d came out", total, out)
			}
			for side, set := range map[string]*dataplane.SynSet{"sender": sbuf.Active(), "receiver": rbuf.Active()} {
				for c := range want {
					if got := set.LDA[c].Count(); got != want[c] {
						t.Errorf("%s: MEC %d recorded %d packets, Parse+Classify say %d", side, c, got, want[c])
					}
				}
				if tc.lds && set.LDS.Count() != ip {
					t.Errorf("%s: LDS recorded %d packets, want the %d IP ones", side, set.LDS.Count(), ip)
				}
			}
			if len(tc.rules) > 0 {
				for c, w := range want {
					if w == 0 {
						t.Errorf("MEC %d matched nothing: the rules do not exercise the classifier", c)
					}
				}
			}
		})
	}
}

// laneChain is a sender lane (l0 → l1) and a receiver lane (l1 → l2) over
// ring links, recording into their own double buffers: the path the lane
// tests push frames through.
type laneChain struct {
	l0, l1, l2 *dataplane.RingLink
	snd, rcv   *dataplane.Lane
	sbuf, rbuf *dataplane.SynBuffer
}

func newLaneChain(t *testing.T, cl *classifier.Classifier, syn dataplane.SynConfig) laneChain {
	t.Helper()
	var c laneChain
	var err error
	if c.sbuf, err = dataplane.NewSynBuffer(syn); err != nil {
		t.Fatal(err)
	}
	if c.rbuf, err = dataplane.NewSynBuffer(syn); err != nil {
		t.Fatal(err)
	}
	for _, l := range []**dataplane.RingLink{&c.l0, &c.l1, &c.l2} {
		if *l, err = dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096}); err != nil {
			t.Fatal(err)
		}
	}
	epoch := new(atomic.Uint64)
	epoch.Store(100)
	endr, err := control.NewEndReader(nil, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.snd, err = dataplane.NewLane(dataplane.LaneConfig{Rx: c.l0.B(), Tx: c.l1.A(), Role: dataplane.RoleSender, Classifier: cl, Buffer: c.sbuf, Epoch: epoch}); err != nil {
		t.Fatal(err)
	}
	if c.rcv, err = dataplane.NewLane(dataplane.LaneConfig{Rx: c.l1.B(), Tx: c.l2.A(), Role: dataplane.RoleReceiver, Classifier: cl, Buffer: c.rbuf, EndReader: endr}); err != nil {
		t.Fatal(err)
	}
	return c
}
