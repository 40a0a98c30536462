package appliance_test

import (
	"encoding/binary"
	"math"
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

// slowFlowPort is the sender's segment port with no transmit stamp of its
// own (the lane stamps each TxBurst by clock reads around it, as with a
// port that gives none) and a slow transmit call for one flow: a burst
// holding a frame of that flow is handed to the wire only after spinning
// for spin. The wire's truth stamps the frames at the end of the call,
// where the lane's midpoint stamp is furthest off: the worst case its
// uncertainty must cover. Other bursts go out at once.
type slowFlowPort struct {
	dataplane.Port
	spin time.Duration
	slow uint64 // flow hash of the slow flow, the first data flow seen
	m    classifier.Meta
}

func (p *slowFlowPort) TxBurst(pkts []*dataplane.Packet) int {
	hit := false
	for _, q := range pkts {
		if len(q.Data) >= 14 && binary.BigEndian.Uint16(q.Data[12:]) == control.EtherType {
			continue
		}
		classifier.Parse(q.Data, &p.m)
		if p.m.FlowHash == 0 {
			continue
		}
		if p.slow == 0 {
			p.slow = p.m.FlowHash
		}
		if p.m.FlowHash == p.slow {
			hit = true
			break
		}
	}
	if hit {
		for t0 := time.Now(); time.Since(t0) < p.spin; {
		}
	}
	return p.Port.TxBurst(pkts)
}

// TestDemoLDSFlowStamps: one flow's frames go out in slow transmit calls,
// so its stamps are worse than the interval's average. Every valid LDS
// flow line holds its flow's true mean within mean_ci_ns, the slow flow's
// line included: its stamp_err_ns is its own (larger than the interval's),
// not the interval's average. The log shows how many of the slow flow's
// lines twice the average (the allowance this bound replaced) would have
// missed.
func TestDemoLDSFlowStamps(t *testing.T) {
	if raceEnabled {
		t.Skip("timing of the demo's appliances under -race")
	}
	delay, _ := model.NewWeibull(40_000, 0.7)
	loss, _ := model.NewUniformLoss(0)
	cl, err := classifier.NewClassifierFromSpecs(nil)
	if err != nil {
		t.Fatal(err)
	}
	// A cell of its own for each of the 16 flows: a flow's stamp figure is
	// then its own frames' (collisions would share it with others').
	lds := synopsis.LDSConfig{Rows: 2, Cols: 1 << 12, CellsPerFlow: 1, MaxFlows: 64}
	ft := &flowTruth{ends: map[uint64]uint64{}}
	slow := &slowFlowPort{spin: 30 * time.Microsecond}
	cfg := demo.Config{
		Duration: 3 * time.Second, Interval: 400 * time.Millisecond, Delay: delay, Loss: loss, Rate: 10_000, Seed: 9, Flows: 16,
		Syn:        dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), LDS: &lds, Classes: cl.NumClasses()},
		Classifier: cl, Insecure: true, Conf: 0.98, TopFlows: 16, TruthHook: ft.hook,
		WrapSegment: func(p dataplane.Port) dataplane.Port { slow.Port = p; return slow },
		Log:         zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	}
	got := demoLines(t, cfg)
	ft.mu.Lock()
	defer ft.mu.Unlock()
	avg := map[int64]float64{} // interval → the LDA line's stamp_err_ns (the average)
	for _, r := range got {
		if r.Synopsis == "lda" && r.Direction == "a>b" {
			avg[r.Interval] = r.StampErrNs
		}
	}
	valid, slowValid, slowLines, slowOwn, oldMiss := 0, 0, 0, 0, 0
	for _, r := range got {
		if r.Synopsis != "lds" || r.Direction != "a>b" || r.Reason == appliance.ReasonWarmup {
			continue
		}
		fh, _ := r.Extra["flow_hash"].(uint64)
		mean, _, ok := ft.flowMean(uint64(r.Interval), fh)
		if !ok {
			continue
		}
		isSlow := fh == slow.slow
		e := math.Abs(r.MeanNs - mean)
		if isSlow {
			slowLines++
			if r.StampErrNs > avg[r.Interval] {
				slowOwn++
			}
			t.Logf("%d slow flow valid=%v mean %.1f µs, true %.1f (off %.1f) ± %.1f, its stamp_err %.1f µs (tx %.1f), interval average %.1f %s",
				r.Interval, r.Valid, r.MeanNs/1e3, mean/1e3, e/1e3, r.MeanCINs/1e3, r.StampErrNs/1e3, r.TxStampErrNs/1e3, avg[r.Interval]/1e3, r.Reason)
		}
		if r.StampErrNs != r.TxStampErrNs+r.RxStampErrNs {
			t.Errorf("%d %s: stamp_err_ns %.1f is not tx %.1f + rx %.1f", r.Interval, r.Flow, r.StampErrNs, r.TxStampErrNs, r.RxStampErrNs)
		}
		if !r.Valid {
			continue
		}
		valid++
		if e > r.MeanCINs {
			t.Errorf("%d %s: mean %.1f ns, true %.1f, outside its bound ± %.1f (stamp_err %.1f)", r.Interval, r.Flow, r.MeanNs, mean, r.MeanCINs, r.StampErrNs)
		}
		if isSlow {
			slowValid++
			if e > r.MeanCINs-r.StampErrNs+2*avg[r.Interval] {
				oldMiss++
			}
		}
	}
	t.Logf("valid flow lines %d; slow flow: %d lines, %d valid, %d with a stamp figure above the interval's average, %d valid ones twice the average would have missed",
		valid, slowLines, slowValid, slowOwn, oldMiss)
	if slowLines < 4 || valid < 20 {
		t.Fatalf("%d slow flow lines, %d valid flow lines: the test measures nothing", slowLines, valid)
	}
	// The slow flow's figure is its own: its frames' calls were slower
	// than the interval's average call.
	if 2*slowOwn < slowLines {
		t.Errorf("only %d of %d slow flow lines carry a stamp figure above the interval's average", slowOwn, slowLines)
	}
	if slowValid == 0 {
		t.Errorf("no valid line for the slow flow: its bound was not exercised")
	}
}
