package appliance

import (
	"math"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestRepairAcceptsOneReply holds the requester's side of the exchange to
// the threat model: a reply is accepted only from the sender session it
// asked, addressed to our session, with the pending request's id and
// interval, decoding against the request, and only once — a second copy
// (a replay under a fresh sequence number, or the answer to a retry) is
// stray. The accepted one makes the line exact. On the sender's side a
// request for another session, or for an interval no longer kept, is
// refused; one for a kept interval is answered.
func TestRepairAcceptsOneReply(t *testing.T) {
	a, snd, rcv, remote, sum, n := repairFixture(t, 99)
	c := a.ctl
	e, st, err := synopsis.EstimateRDA(remote, rcv, 0.98)
	if err != nil || len(st.MissingSender) != 50 || st.Exact {
		t.Fatalf("before repair: %v, %d missing, exact %v", err, len(st.MissingSender), st.Exact)
	}
	const k, peer = 77, 0xFEED
	r := &report.Interval{Valid: e.Valid, MeanNs: e.MeanNs, MeanCINs: e.MeanCINs, Extra: st.ReportFields()}
	c.askRepair(k, 0, peer, remote, rcv, &st, r, &e)
	if len(c.rep.repairs) != 1 || len(c.ship.pending) == 0 {
		t.Fatalf("no request sent: %d repairs, %d frames", len(c.rep.repairs), len(c.ship.pending))
	}
	rp := c.rep.repairs[repairKey{k: k}]
	reply := snd.Cache().AppendReply(nil, rp.ids)
	ours := a.sender.Session()
	good := control.Exchange{Type: control.TypeReply, Session: peer, To: ours, ID: rp.id, Interval: k, Kind: control.KindRDA, Body: reply, Frames: 1, Bytes: 300}
	bad := func(mod func(x *control.Exchange)) control.Exchange { x := good; mod(&x); return x }
	for name, x := range map[string]control.Exchange{
		"another sender session": bad(func(x *control.Exchange) { x.Session = peer + 1 }),
		"addressed to another":   bad(func(x *control.Exchange) { x.To = ours + 1 }),
		"another request id":     bad(func(x *control.Exchange) { x.ID++ }),
		"another interval":       bad(func(x *control.Exchange) { x.Interval++ }),
		"another class":          bad(func(x *control.Exchange) { x.MEC = 1 }),
	} {
		if c.onReply(&x) {
			t.Fatalf("%s: accepted", name)
		}
	}
	corrupt := bad(func(x *control.Exchange) { x.Body = append([]byte(nil), reply...); x.Body[3] ^= 1 })
	if c.onReply(&corrupt) {
		t.Fatal("a reply that does not match its request accepted")
	}
	if got := a.RepairCounters(); got.RepliesStray != 5 || got.RepliesBad != 1 || got.RepliesAccepted != 0 {
		t.Fatalf("counters %+v", got)
	}
	if !c.onReply(&good) {
		t.Fatal("the reply was refused")
	}
	if c.onReply(&good) || a.RepairCounters().RepliesStray != 6 {
		t.Fatal("a second copy of the reply was not stray")
	}
	if r.Extra["rda_repair"] != "complete" || r.Extra["rda_exact"] != true || r.MeanCINs != 0 || abs64(r.MeanNs-sum/n) > 1e-6*sum/n {
		t.Fatalf("after repair: %v, mean %.4f ± %.1f, true %.4f", r.Extra["rda_repair"], r.MeanNs, r.MeanCINs, sum/n)
	}

	// The sender's side: interval k's cache kept.
	c.ans.tscaches = map[uint64][]*synopsis.TSCache{k: {snd.Cache()}}
	c.ship.pending = nil
	req := synopsis.AppendTimestampRequest(nil, rp.ids)
	for name, x := range map[string]control.Exchange{
		"another session's request": {Type: control.TypeRequest, Session: peer, To: ours + 1, ID: 1, Interval: k, Kind: control.KindRDA, Body: req},
		"an interval not kept":      {Type: control.TypeRequest, Session: peer, To: ours, ID: 1, Interval: k + 1, Kind: control.KindRDA, Body: req},
		"not a request":             {Type: control.TypeRequest, Session: peer, To: ours, ID: 1, Interval: k, Kind: control.KindRDA, Body: []byte("junk")},
	} {
		c.ans.answer(&x, 0)
		if len(c.ans.paced) != 0 {
			t.Fatalf("%s: answered", name)
		}
	}
	x := control.Exchange{Type: control.TypeRequest, Session: peer, To: ours, ID: 9, Interval: k, Kind: control.KindRDA, Body: req}
	c.ans.answer(&x, 0)
	c.ans.duePaced(math.MaxUint64) // the reply's fragments, paced: all due
	if len(c.ship.replies) == 0 || a.RepairCounters().RequestsAnswered != 1 || a.RepairCounters().RequestsRefused != 3 {
		t.Fatalf("%d frames, counters %+v", len(c.ship.replies), a.RepairCounters())
	}
	var f control.Frame
	if err := control.ParseFrame(c.ship.replies[0].frame, &f); err != nil || f.Type != control.TypeReply || f.Interval != k || f.Direction != a.SendDirection() {
		t.Fatalf("reply frame: %v %+v", err, f.Header)
	}
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestRepairKeepsOtherCausesInvalid: a completed repair lifts only the
// estimator's own invalidity (too few usable cells); a line invalid for
// another cause at the ask — uncertain timestamps here, as a loaded host
// gives — stays invalid with its reason, though the repaired estimate is
// valid. (It did not: a line made valid again this way showed a loss the
// class-change check had ruled out, in the demo property test under CI.)
func TestRepairKeepsOtherCausesInvalid(t *testing.T) {
	a, snd, rcv, remote, _, _ := repairFixture(t, 98)
	c := a.ctl
	e, st, err := synopsis.EstimateRDA(remote, rcv, 0.98)
	if err != nil {
		t.Fatal(err)
	}
	const why = "timestamps uncertain by 68.3 µs on average"
	const k, peer = 78, 0xFEED
	r := &report.Interval{Valid: false, Reason: why, MeanNs: e.MeanNs, MeanCINs: e.MeanCINs, Extra: st.ReportFields()}
	c.askRepair(k, 0, peer, remote, rcv, &st, r, &e)
	rp := c.rep.repairs[repairKey{k: k}]
	if rp == nil {
		t.Fatal("no repair asked")
	}
	reply := snd.Cache().AppendReply(nil, rp.ids)
	x := control.Exchange{Type: control.TypeReply, Session: peer, To: a.sender.Session(), ID: rp.id, Interval: k, Kind: control.KindRDA, Body: reply, Frames: 1, Bytes: 300}
	if !c.onReply(&x) {
		t.Fatal("the reply was refused")
	}
	if r.Extra["rda_repair"] != "complete" {
		t.Fatalf("repair %v", r.Extra["rda_repair"])
	}
	if r.Valid || r.Reason != why {
		t.Fatalf("after the repair: valid %v, reason %q; want invalid for %q", r.Valid, r.Reason, why)
	}
}

// repairFixture is an appliance (its ports a closed-at-cleanup ring link)
// and one interval's RDAs at its two ends: 5000 packets of identities
// Remix(i, salt), every 100th lost, delays 1000 + i%7 ns; remote is the
// sender's RDA as the receiver decodes it from the wire (no cache), sum
// and n the delivered packets' delays.
func repairFixture(t *testing.T, salt uint64) (a *Appliance, snd, rcv, remote *synopsis.RDA, sum, n float64) {
	t.Helper()
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.A().Close(); link.B().Close() })
	cl, _ := classifier.NewClassifier(nil)
	rcfg := synopsis.DefaultRDAConfig()
	rcfg.Cells, rcfg.CacheBudget = 256, 1<<20
	a, err = New(Config{PortA: link.A(), PortB: link.B(), Segment: "b", Interval: 100 * time.Millisecond, Classifier: cl,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rcfg}, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	snd, _ = synopsis.NewRDA(rcfg)
	rcv, _ = synopsis.NewRDA(rcfg)
	for i := uint64(1); i <= 5000; i++ {
		h := synopsis.Remix(i, salt)
		snd.Add(h, 1e9+i*1000)
		if i%100 == 0 {
			continue
		}
		d := 1000 + i%7
		rcv.Add(h, 1e9+i*1000+d)
		sum += float64(d)
		n++
	}
	wire, _ := snd.AppendBinary(nil)
	remote = new(synopsis.RDA)
	if err := remote.UnmarshalBinary(wire); err != nil {
		t.Fatal(err)
	}
	return a, snd, rcv, remote, sum, n
}
