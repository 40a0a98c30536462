package appliance_test

import (
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// TestDemoLDSSparseDefaults: the demo's defaults — 1 000 flows of about
// 20 packets an interval, the LDS recorded for 65 536 flows (4 × 8 704)
// and shipped within a 1 % control budget — under uniform and bursty
// loss, and with a segment that also duplicates (the repair takes each
// copy out: TSCache.LaterCopy), reorders and remarks. Not one row fits, so each interval ships the largest flows' own
// cells (sparse), also while the exchanges of a lossy interval are paid
// back: every top-flow line is valid and holds its flow's true mean
// within its bound and its true loss. (On simulated time no host load
// can make a lossy flow's exchange miss its deadline, which would leave
// its line invalid.) (Folded to the
// budget instead, the LDS was 1 × 136 columns and almost no flow line was
// valid; under bursty loss it was left out while in debt.) The copies of
// each control frame leave about 10 ms apart, so that one burst of loss
// does not take them all.
func TestDemoLDSSparseDefaults(t *testing.T) {
	skipSimSlowUnderRace(t)
	uniform, _ := model.NewUniformLoss(0.001)
	bursty, _ := model.NewBurstyLoss(0.01, 100)
	remark, err := dataplane.ParseRemarks("cs2:0.05")
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []struct {
		name string
		loss model.Loss
		imp  func(*demo.Config)
	}{
		{"uniform 0.1%", uniform, nil},
		{"bursty 1%, bursts of 100", bursty, nil},
		// The segment also duplicates, reorders and remarks, and its
		// switch consumes link-local frames and originates its own: a
		// copy of a packet is not the packet (the truth leaves it out), a
		// remarked one is still its flow's, link-local frames are no
		// flow's.
		{"uniform 0.1%, duplicates, reordering, remarking, link-local", uniform, func(c *demo.Config) {
			c.DupProb, c.ReorderProb, c.Remark, c.DSCP, c.LinkLocalRate = 0.005, 0.002, remark, []uint8{0, 16}, 200
		}},
	} {
		t.Run(sc.name, func(t *testing.T) { demoLDSSparse(t, sc.loss, sc.imp) })
	}
}

func demoLDSSparse(t *testing.T, loss model.Loss, imp func(*demo.Config)) {
	delay, _ := model.NewWeibull(50_000, 0.7)
	cl, err := classifier.NewClassifierFromSpecs(nil)
	if err != nil {
		t.Fatal(err)
	}
	rda := synopsis.DefaultRDAConfig()
	lds := synopsis.LDSConfig{Rows: 4, Cols: 8704, CellsPerFlow: 1, MaxFlows: 1 << 18}
	ft := &flowTruth{ends: map[uint64]uint64{}}
	cp := &copyPort{first: map[copyKey]uint64{}}
	cfg := demo.Config{
		Duration: 4 * time.Second, Interval: time.Second, Delay: delay, Loss: loss, Rate: 20_000, Seed: 1, Flows: 1000,
		Syn:      dataplane.SynConfig{LDA: synopsis.RecordLDAConfig(), RDA: &rda, LDS: &lds, Classes: cl.NumClasses()},
		AdaptLDA: true, AdaptRDA: true, AdaptLDS: true, RDAProblemRate: 0.005, BudgetFraction: 0.01,
		Classifier: cl, Insecure: true, Conf: 0.98, ControlCopies: 2, TopFlows: 25, TruthHook: ft.hook,
		WrapSegment: func(p dataplane.Port) dataplane.Port { cp.Port = p; return cp },
		Log:         zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), SimulatedTime: true,
	}
	if imp != nil {
		imp(&cfg)
	}
	got := demoLines(t, cfg)
	ft.mu.Lock()
	defer ft.mu.Unlock()
	lines, valid, sparse := 0, 0, 0
	for _, r := range got {
		if r.Synopsis != "lds" || r.Flow == "" || r.Direction != "a>b" || r.Reason == appliance.ReasonWarmup || intervalCause(r.Reason) {
			continue
		}
		fh, _ := r.Extra["flow_hash"].(uint64)
		mean, lost, ok := ft.flowMean(uint64(r.Interval), fh)
		if !ok {
			continue
		}
		lines++
		if strings.Contains(r.Config, ",sparse") {
			sparse++
		} else {
			t.Logf("%d %s not sparse: %s valid=%v %s", r.Interval, r.Flow, r.Config, r.Valid, r.Reason)
		}
		if !r.Valid {
			t.Logf("%d %s invalid: %s (repair: %v)", r.Interval, r.Flow, r.Reason, r.Extra["repair"])
			continue
		}
		valid++
		if e := math.Abs(r.MeanNs - mean); e > r.MeanCINs+1e-6*mean {
			t.Errorf("%d %s: mean %.1f, true %.1f, outside its bound ± %.1f", r.Interval, r.Flow, r.MeanNs, mean, r.MeanCINs)
		}
		if int(r.Lost) != lost {
			t.Errorf("%d %s: lost %d, true %d", r.Interval, r.Flow, r.Lost, lost)
		}
	}
	t.Logf("%d top-flow lines with truth, %d shipped sparse, %d valid", lines, sparse, valid)
	// The interval cut short by the stop may have so few flows that whole
	// rows fit: not every line is sparse.
	if lines < 25 || sparse < lines*9/10 || valid != lines {
		t.Errorf("%d lines, %d sparse, %d valid: want ≥ 25, ≥ 90 %% sparse, all valid", lines, sparse, valid)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	// The copies are scheduled 10 ms after the first copy was handed to
	// the lane; the lane's paced injection moves either by a few ms, and
	// at the stop both may wait for the lane together: most pairs, not
	// all, are 5 ms apart or more (back to back they were microseconds).
	t.Logf("%d fragments sent twice, %d of them less than 5 ms apart", cp.pairs, cp.close)
	if cp.pairs == 0 || cp.close*2 > cp.pairs {
		t.Errorf("%d fragments sent twice, %d of them less than 5 ms apart: want most copies 10 ms apart", cp.pairs, cp.close)
	}
}

// copyPort watches appliance #1's control frames on the segment: how far
// apart the copies of each fragment leave.
type copyPort struct {
	dataplane.Port
	mu           sync.Mutex
	f            control.Frame
	first        map[copyKey]uint64 // transmit time, ns
	pairs, close int
}

type copyKey struct {
	interval  uint64
	mec       uint16
	kind      control.Kind
	fragIndex uint16
}

func (p *copyPort) TxBurst(pkts []*dataplane.Packet) int {
	n := p.Port.TxBurst(pkts)
	// The ring port's transmit stamp: the segment's clock, simulated or
	// not.
	now := p.Port.(dataplane.TxStamper).LastTxNs()
	p.mu.Lock()
	for _, q := range pkts[:n] {
		if len(q.Data) < 14 || binary.BigEndian.Uint16(q.Data[12:]) != control.EtherType || control.ParseFrame(q.Data, &p.f) != nil || p.f.Type != control.TypeFragment {
			continue
		}
		k := copyKey{p.f.Interval, p.f.MEC, p.f.Kind, p.f.FragIndex}
		if t0, ok := p.first[k]; !ok {
			p.first[k] = now
		} else {
			p.pairs++
			if time.Duration(now-t0) < 5*time.Millisecond {
				p.close++
			}
		}
	}
	p.mu.Unlock()
	return n
}
