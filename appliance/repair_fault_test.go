package appliance_test

import (
	"encoding/binary"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// isTimestampRequest says whether f is a timestamp repair request
// (after the 12-byte exchange header, magic 'Q'): one fragment, its
// lost packets' identities.
func isTimestampRequest(f *control.Frame) bool {
	b := f.Payload
	return f.Type == control.TypeRequest && f.FragIndex == 0 && len(b) > control.ExchangeHeaderLen && b[control.ExchangeHeaderLen] == 'Q'
}

// exchangeDropper wraps a segment port and drops the request or reply
// frames (only those) that drop picks as the appliance transmits them.
type exchangeDropper struct {
	dataplane.Port
	drop    func(f *control.Frame) bool
	f       control.Frame
	out     []*dataplane.Packet
	mu      sync.Mutex
	dropped map[uint64]int // interval → frames dropped
	n       atomic.Uint64
}

func (p *exchangeDropper) TxBurst(pkts []*dataplane.Packet) int {
	out := p.out[:0]
	var gone []*dataplane.Packet
	for _, q := range pkts {
		if len(q.Data) >= 14 && binary.BigEndian.Uint16(q.Data[12:]) == control.EtherType && control.ParseFrame(q.Data, &p.f) == nil &&
			(p.f.Type == control.TypeRequest || p.f.Type == control.TypeReply) && p.drop(&p.f) {
			p.mu.Lock()
			if p.dropped == nil {
				p.dropped = map[uint64]int{}
			}
			p.dropped[p.f.Interval]++
			p.mu.Unlock()
			p.n.Add(1)
			gone = append(gone, q)
			continue
		}
		out = append(out, q)
	}
	if gone == nil {
		// Untouched: the port's own semantics (and transmit stamp).
		return p.Port.TxBurst(pkts)
	}
	p.Port.Free(gone)
	p.out = out
	// One burst normally takes all: LastTxNs is then every frame's
	// transmit time, as the lane assumes. (A full ring splits it; the
	// exchange frames are rare enough for that not to matter here.)
	for sent := 0; sent < len(out); {
		sent += p.Port.TxBurst(out[sent:])
	}
	return len(pkts)
}

// LastTxNs passes the wrapped port's transmit stamp on: the sender lane
// records the time the port read in TxBurst, as the truth does.
func (p *exchangeDropper) LastTxNs() uint64 { return p.Port.(dataplane.TxStamper).LastTxNs() }

// runRepairDemo runs the demo with uniform loss and the RDA, wrapping #1's
// segment port (its replies) with replies and #2's (its requests) with
// requests (nil: untouched), on simulated time: which interval's exchange
// a dropper hits, and whether its retries fit the deadline, is the
// scenario's, not the host's load's. It returns #2's a>b RDA lines.
func runRepairDemo(t *testing.T, seed uint64, replies, requests *exchangeDropper) (lines []report.Interval, sum demo.Summary) {
	t.Helper()
	return runRepairDemoLDS(t, seed, replies, requests, nil, nil)
}

// runRepairDemoLDS is runRepairDemo with an LDS of 16 flows, each with
// cells of its own, when lds is not nil: its a>b lines go to lds, the
// link's per-flow truth to ft.
func runRepairDemoLDS(t *testing.T, seed uint64, replies, requests *exchangeDropper, ft *flowTruth, lds *[]report.Interval) (lines []report.Interval, sum demo.Summary) {
	t.Helper()
	delay, _ := model.NewWeibull(40_000, 0.7)
	loss, _ := model.NewUniformLoss(0.002)
	cl, err := classifier.NewClassifierFromSpecs(nil)
	if err != nil {
		t.Fatal(err)
	}
	rda := synopsis.DefaultRDAConfig()
	cfg := demo.Config{
		Duration: 2 * time.Second, Interval: 400 * time.Millisecond, Delay: delay, Loss: loss, Rate: 20_000, Seed: seed,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, Classes: cl.NumClasses()},
		// Two copies of the interval frames: the segment's loss rarely
		// fails an interval (which would leave its neighbours unchecked).
		Classifier: cl, Insecure: true, Conf: 0.98, ControlCopies: 2, SimulatedTime: true,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	}
	if lds != nil {
		cfg.Syn.LDS = &synopsis.LDSConfig{Rows: 2, Cols: 1 << 12, CellsPerFlow: 1, MaxFlows: 64}
		cfg.Flows, cfg.TopFlows, cfg.TruthHook = 16, 16, ft.hook
	}
	if replies != nil {
		cfg.WrapSegment = func(p dataplane.Port) dataplane.Port { replies.Port = p; return replies }
	}
	if requests != nil {
		cfg.WrapReceiver = func(p dataplane.Port) dataplane.Port { requests.Port = p; return requests }
	}
	cfg.Reports = func(r *report.Interval) {
		if r.Synopsis == "rda" {
			lines = append(lines, *r)
		} else if r.Synopsis == "lds" && lds != nil && r.Direction == "a>b" {
			*lds = append(*lds, *r)
		} else if r.Synopsis == "lda" {
			t.Logf("%d %s valid=%v lost=%d mean=%.1f±%.1f sent=%d received=%d %s", r.Interval, r.Synopsis, r.Valid, r.Lost, r.MeanNs, r.MeanCINs, r.Sent, r.Received, r.Reason)
		}
	}
	sum, err = demo.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The dataplane is unaffected: every frame the segment did not lose
	// reached the sink, and the appliances dropped none.
	if sum.Sunk+sum.ImpairLost != sum.Generated || sum.ApplianceTxDropped != 0 {
		t.Errorf("dataplane: generated %d, sunk %d, segment lost %d, appliances dropped %d", sum.Generated, sum.Sunk, sum.ImpairLost, sum.ApplianceTxDropped)
	}
	for _, r := range lines {
		t.Logf("%d valid=%v sent=%d received=%d lost=%d truelost=%v mean=%.1f±%.1f true=%s repair=%v tries=%v exact=%v %s", r.Interval, r.Valid, r.Sent, r.Received, r.Lost, deref(r.TrueLost), r.MeanNs, r.MeanCINs,
			derefF(r.TrueMeanNs), r.Extra["rda_repair"], r.Extra["rda_repair_tries"], r.Extra["rda_exact"], r.Reason)
		if r.Valid && r.Extra["rda_decode_complete"] == true && r.Extra["rda_repair"] == "complete" && r.TrueMeanNs != nil {
			if rel := abs(r.MeanNs-*r.TrueMeanNs) / *r.TrueMeanNs; rel > 1e-6 || r.MeanCINs != 0 {
				t.Errorf("%d: repaired mean %.3f ± %.1f, true %.3f (rel. error %.2g)", r.Interval, r.MeanNs, r.MeanCINs, *r.TrueMeanNs, rel)
			}
		}
	}
	return lines, sum
}

// checkUnrepaired: a victim line whose repair got no reply is as without
// the exchange — valid with its bound (the truth inside it), never
// claiming a complete repair. It returns how many such valid lines there
// were.
func checkUnrepaired(t *testing.T, lines []report.Interval, victim func(k int64) bool) (n int) {
	t.Helper()
	for _, r := range lines {
		if !victim(r.Interval) || r.Extra["rda_repair"] == nil {
			continue
		}
		if r.Extra["rda_repair"] != "no reply" {
			t.Errorf("%d: repair %v, want no reply", r.Interval, r.Extra["rda_repair"])
			continue
		}
		if !r.Valid {
			// The edges of the run (the interval after the receiver's
			// warm-up, the last before stop) may be invalid for the
			// crossing checks' reasons; never for the exchange's.
			if strings.Contains(r.Reason, "repair") || strings.Contains(r.Reason, "timestamp") {
				t.Errorf("%d: invalid for the exchange: %s", r.Interval, r.Reason)
			}
			continue
		}
		n++
		if r.Extra["rda_exact"] == true {
			t.Errorf("%d: claims a complete repair without the sender's timestamps", r.Interval)
		}
		if r.MeanCINs == 0 && (r.Extra["rda_mean_exact"] != true || r.TrueMeanNs != nil && abs(r.MeanNs-*r.TrueMeanNs) > 1e-6**r.TrueMeanNs) {
			// One bank's usable cells may hold every matched packet (a
			// lost packet alone in its cell there): that mean is exact
			// without a repair, and must be.
			t.Errorf("%d: mean %.3f claimed exact, true %s", r.Interval, r.MeanNs, derefF(r.TrueMeanNs))
		}
		if r.TrueMeanNs != nil && abs(r.MeanNs-*r.TrueMeanNs) > 3*r.MeanCINs {
			t.Errorf("%d: mean %.1f ± %.1f, true %.1f", r.Interval, r.MeanNs, r.MeanCINs, *r.TrueMeanNs)
		}
	}
	return n
}

// TestRDARepairLostRequest: every request (all retries) of one interval
// is lost: that interval's line stays valid with its bound ("no reply"),
// the others are repaired; a request lost once is retried and repaired.
func TestRDARepairLostRequest(t *testing.T) {
	// The first interval asked about is next to the receiver's warm-up
	// (its line may be invalid for that): the second loses every request,
	// the third its first attempt only.
	var first, victim, once atomic.Uint64
	d := &exchangeDropper{drop: func(f *control.Frame) bool {
		if !isTimestampRequest(f) {
			return false
		}
		k := f.Interval
		if first.CompareAndSwap(0, k) || k == first.Load() {
			return false
		}
		if victim.CompareAndSwap(0, k) || k == victim.Load() {
			return true
		}
		return once.CompareAndSwap(0, k)
	}}
	lines, _ := runRepairDemo(t, 41, nil, d)
	if checkUnrepaired(t, lines, func(k int64) bool { return uint64(k) == victim.Load() }) != 1 {
		t.Errorf("interval %d: no valid unrepaired line", victim.Load())
	}
	retried := false
	for _, r := range lines {
		if uint64(r.Interval) == once.Load() {
			tries, _ := r.Extra["rda_repair_tries"].(int)
			retried = tries >= 2 && r.Extra["rda_repair"] != "no reply"
		}
	}
	if !retried {
		t.Errorf("interval %d: the request lost once was not retried and answered", once.Load())
	}
}

// TestRDARepairLostReply: every reply of one interval is lost (the sender
// answers each retry; all answers are lost): that line stays valid with
// its bound, later ones are repaired.
func TestRDARepairLostReply(t *testing.T) {
	var victim atomic.Uint64
	d := replyDropper(&victim)
	lines, _ := runRepairDemo(t, 42, d, nil)
	if checkUnrepaired(t, lines, func(k int64) bool { return uint64(k) == victim.Load() }) != 1 {
		t.Errorf("interval %d: no valid unrepaired line", victim.Load())
	}
	for _, r := range lines {
		if uint64(r.Interval) == victim.Load() {
			if tries, _ := r.Extra["rda_repair_tries"].(int); tries < 2 {
				t.Errorf("interval %d: %d tries before giving up", r.Interval, tries)
			}
		}
	}
	repaired := 0
	for _, r := range lines {
		if r.Extra["rda_repair"] != nil && r.Extra["rda_repair"] != "no reply" {
			repaired++
		}
	}
	if repaired == 0 {
		t.Error("no line repaired after the lost reply")
	}
}

// TestRDARepairPeerNeverAnswers: the sender's replies never arrive (a
// peer that does not answer): every line that asked says "no reply" and
// stays valid with its bound, and no line is held past its deadline
// (the reports come out in order, one per interval).
func TestRDARepairPeerNeverAnswers(t *testing.T) {
	d := &exchangeDropper{drop: func(f *control.Frame) bool { return f.Type == control.TypeReply }}
	lines, _ := runRepairDemo(t, 43, d, nil)
	if n := checkUnrepaired(t, lines, func(int64) bool { return true }); n == 0 {
		t.Error("no line asked for timestamps: the fault went untested")
	}
	for i := 1; i < len(lines); i++ {
		if lines[i].Interval <= lines[i-1].Interval {
			t.Errorf("lines out of order: %d after %d", lines[i].Interval, lines[i-1].Interval)
		}
	}
	if d.n.Load() == 0 {
		t.Error("no reply was dropped")
	}
}

// TestLDSRepairLostReply: every reply of one interval is lost: its RDA
// line stays valid with its bound, and its LDS lines say the repair is
// partial for want of a reply — a lossy flow's line is invalid as
// without the repair, never repaired by guess — while every valid flow
// line holds its flow's true mean within its bound; other intervals are
// repaired.
func TestLDSRepairLostReply(t *testing.T) {
	var victim atomic.Uint64
	d := replyDropper(&victim)
	ft := &flowTruth{ends: map[uint64]uint64{}}
	var lds []report.Interval
	lines, _ := runRepairDemoLDS(t, 44, d, nil, ft, &lds)
	if checkUnrepaired(t, lines, func(k int64) bool { return uint64(k) == victim.Load() }) != 1 {
		t.Errorf("interval %d: no valid unrepaired RDA line", victim.Load())
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	victimLines, complete := 0, 0
	for _, r := range lds {
		if r.Reason == appliance.ReasonWarmup {
			continue
		}
		fh, _ := r.Extra["flow_hash"].(uint64)
		mean, _, ok := ft.flowMean(uint64(r.Interval), fh)
		rep, _ := r.Extra["repair"].(string)
		t.Logf("%d %s valid=%v lost=%d mean=%.1f±%.1f true=%.1f repair=%s %s", r.Interval, r.Flow, r.Valid, r.Lost, r.MeanNs, r.MeanCINs, mean, rep, r.Reason)
		if uint64(r.Interval) == victim.Load() {
			victimLines++
			if r.Extra["repair_complete"] != false || !strings.Contains(rep, "no reply") {
				t.Errorf("%d %s: repair %q after every reply was lost", r.Interval, r.Flow, rep)
			}
			if r.Lost > 0 && r.Valid {
				t.Errorf("%d %s: lossy flow valid without its lost packets' timestamps", r.Interval, r.Flow)
			}
		} else if r.Extra["repair_complete"] == true && r.Lost > 0 {
			complete++
		}
		if r.Valid && ok && abs(r.MeanNs-mean) > r.MeanCINs+1e-6*mean {
			t.Errorf("%d %s: mean %.1f ± %.1f, true %.1f", r.Interval, r.Flow, r.MeanNs, r.MeanCINs, mean)
		}
	}
	if victimLines == 0 || complete == 0 {
		t.Errorf("%d LDS lines in the interval whose replies were lost, %d lossy flow lines repaired completely elsewhere: want both > 0", victimLines, complete)
	}
}

// replyDropper loses every reply of one interval, the second one the
// sender answers (the first may be the partial interval of the start);
// victim records which.
func replyDropper(victim *atomic.Uint64) *exchangeDropper {
	var first atomic.Uint64
	return &exchangeDropper{drop: func(f *control.Frame) bool {
		if f.Type != control.TypeReply {
			return false
		}
		k := f.Interval
		if first.CompareAndSwap(0, k) || k == first.Load() {
			return false
		}
		victim.CompareAndSwap(0, k)
		return k == victim.Load()
	}}
}
