package appliance_test

import (
	"encoding/binary"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// TestDemoQueues is TestDemo with two queues at every port of both
// appliances (software RSS by flow hash, one lane pair and one worker per
// queue, End markers steered by lane): every interval valid (but at the
// run's two ends, see below), loss exact,
// the mean inside its bound, no frame lost by the appliances, and no flow
// reordered (the segment does not reorder: any reordering would be the
// queues').
func TestDemoQueues(t *testing.T) {
	delay, _ := model.NewWeibull(50_000, 0.7)
	loss, _ := model.NewUniformLoss(0.001)
	cl, _ := classifier.NewClassifier(nil)
	rda := synopsis.DefaultRDAConfig()
	var lines []report.Interval
	sum, err := demo.Run(demo.Config{
		Duration: 3 * time.Second, Interval: 500 * time.Millisecond, Delay: delay, Loss: loss, Rate: 20_000, Seed: 1, ControlCopies: 2,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda}, Classifier: cl, Insecure: true, Queues: 2,
		Log:     zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel),
		Reports: func(r *report.Interval) { lines = append(lines, *r) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Queues run on the wall clock only. Besides the first interval's
	// predecessor, the last one's successor (the interval the stop cuts)
	// may honestly be missing when its control frames come late on a
	// loaded machine; every other interval must be valid.
	prevMissing, nextMissing, last := 0, 0, int64(0)
	for _, r := range lines {
		if r.Synopsis == "lda" && r.Sent > 0 {
			last = max(last, r.Interval)
		}
	}
	for _, r := range lines {
		t.Logf("k=%d %s valid=%v %s sent=%d recv=%d lost=%d mean=%.0f±%.0f", r.Interval, r.Synopsis, r.Valid, r.Reason, r.Sent, r.Received, r.Lost, r.MeanNs, r.MeanCINs)
		if r.Synopsis != "lda" || r.Valid {
			continue
		}
		if r.Reason == appliance.ReasonPrevMissing {
			prevMissing++
		}
		if r.Interval == last && strings.HasPrefix(r.Reason, appliance.ReasonNextMissing) {
			nextMissing++
		}
	}
	t.Logf("%+v", sum)
	if raceEnabled {
		if sum.Valid == 0 {
			t.Errorf("no valid interval under -race")
		}
	} else if sum.Intervals < 3 || sum.Valid+prevMissing+nextMissing != sum.Intervals || prevMissing > 1 {
		t.Errorf("%d of %d intervals valid (%d without a predecessor, %d the last without its successor)", sum.Valid, sum.Intervals, prevMissing, nextMissing)
	}
	if sum.LossExact != sum.Valid || sum.MeanInBound != sum.Valid {
		t.Errorf("of %d valid intervals, loss exact in %d, mean in bound in %d", sum.Valid, sum.LossExact, sum.MeanInBound)
	}
	if sum.Sunk+sum.ImpairLost != sum.Generated || sum.ApplianceTxDropped != 0 {
		t.Errorf("generated %d, sunk %d, lost on the segment %d, dropped by appliances %d", sum.Generated, sum.Sunk, sum.ImpairLost, sum.ApplianceTxDropped)
	}
	// Both queues carried traffic and cut every interval at their own
	// lane's End marker.
	if len(sum.QueueRecorded) != 2 || sum.QueueRecorded[0] == 0 || sum.QueueRecorded[1] == 0 || sum.QueueFlips[0] < 4 || sum.QueueFlips[1] < 4 || sum.EndsMisrouted != 0 {
		t.Errorf("receiver queues: recorded %v, flips %v, misrouted End markers %d", sum.QueueRecorded, sum.QueueFlips, sum.EndsMisrouted)
	}
	if sum.FlowReordered != 0 {
		t.Errorf("%d frames overtaken within their flow", sum.FlowReordered)
	}
}

// endFrame reports whether b is an End marker, and its interval and lane.
func endFrame(b []byte) (k uint64, lane uint16, ok bool) {
	var f control.Frame
	var e control.End
	if len(b) < 14 || binary.BigEndian.Uint16(b[12:]) != control.EtherType || control.ParseFrame(b, &f) != nil ||
		f.Type != control.TypeEnd || e.UnmarshalBinary(f.Payload) != nil {
		return 0, 0, false
	}
	return f.Interval, e.Lane, true
}

// endDropPort drops what its drop function picks from what it receives.
type endDropPort struct {
	dataplane.Port
	drop    func(b []byte) bool
	dropped int
}

func (p *endDropPort) RxBurst(pkts []*dataplane.Packet) int {
	n := p.Port.RxBurst(pkts)
	j := 0
	for _, q := range pkts[:n] {
		if p.drop(q.Data) {
			p.Port.Free([]*dataplane.Packet{q})
			p.dropped++
			continue
		}
		pkts[j] = q
		j++
	}
	return j
}

// TestDemoQueuesFaults breaks the per-lane cut of a two-queue pair of
// appliances on purpose: one lane's End markers of one interval lost, or
// steered to the other lane's queue, or a share of the data steered to
// the wrong queue for the whole run. Whatever the receiver cannot cut
// exactly is reported invalid, never wrong: every valid line's loss is
// the truth and its mean inside its bound; the intervals a lost or
// misrouted End marker spoils are invalid; and the appliances forward
// every frame.
func TestDemoQueuesFaults(t *testing.T) {
	if raceEnabled {
		t.Skip("timing: intervals merge under -race; TestDemoQueues covers the code")
	}
	const iv = 400 * time.Millisecond
	type tc struct {
		name  string
		steer func(k0 *uint64) func([]byte, int) int // SteerReceiver
		drop  func(k0 *uint64) func([]byte) bool     // what ldafwd#2's segment port loses
		// spoiled: intervals (relative to the faulted one) that must be
		// invalid; -1: none known in advance.
		spoiled []int64
	}
	// The fault hits the lane-1 End markers of the fourth interval the
	// receiver sees one of: k0 records it.
	pick := func(k0 *uint64, b []byte) bool {
		k, lane, ok := endFrame(b)
		if !ok || lane != 1 {
			return false
		}
		if *k0 == 0 {
			*k0 = k + 3
		}
		return k == *k0
	}
	cases := []tc{
		{name: "end-misrouted", spoiled: []int64{0, 1},
			steer: func(k0 *uint64) func([]byte, int) int {
				return func(b []byte, n int) int {
					if pick(k0, b) {
						return 0
					}
					return dataplane.SteerQueue(b, n)
				}
			}},
		{name: "end-lost", spoiled: []int64{0, 1},
			drop: func(k0 *uint64) func([]byte) bool { return func(b []byte) bool { return pick(k0, b) } }},
		{name: "data-misrouted",
			steer: func(k0 *uint64) func([]byte, int) int {
				return func(b []byte, n int) int {
					if _, _, end := endFrame(b); end {
						return dataplane.SteerQueue(b, n)
					}
					if id, ok := traffic.FrameID(b); ok && id%5 == 0 {
						return 1 - dataplane.SteerQueue(b, n)
					}
					return dataplane.SteerQueue(b, n)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var k0 uint64
			delay, _ := model.NewWeibull(50_000, 0.7)
			loss, _ := model.NewUniformLoss(0.001)
			cl, _ := classifier.NewClassifier(nil)
			rda := synopsis.DefaultRDAConfig()
			var mu sync.Mutex
			var lines []report.Interval
			cfg := demo.Config{
				// Two copies of each control frame, as in TestDemoQueues: at
				// ~100 fragments an interval the segment's 0.1 % loss would
				// otherwise take one in a tenth of the intervals and spoil
				// more than the fault under test.
				Duration: 8 * iv, Interval: iv, Delay: delay, Loss: loss, Rate: 20_000, Seed: 5, ControlCopies: 2,
				Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda}, Classifier: cl, Insecure: true, Queues: 2,
				Reports: func(r *report.Interval) { mu.Lock(); lines = append(lines, *r); mu.Unlock() },
			}
			if c.steer != nil {
				cfg.SteerReceiver = c.steer(&k0)
			}
			var dp *endDropPort
			if c.drop != nil {
				cfg.WrapReceiver = func(p dataplane.Port) dataplane.Port {
					dp = &endDropPort{Port: p, drop: c.drop(&k0)}
					return dp
				}
			}
			sum, err := demo.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			valid := 0
			for _, r := range lines {
				t.Logf("k=%d (X%+d) %s valid=%v %s sent=%d recv=%d lost=%d true_lost=%v mean=%.0f±%.0f", r.Interval, r.Interval-int64(k0), r.Synopsis, r.Valid, r.Reason,
					r.Sent, r.Received, r.Lost, deref(r.TrueLost), r.MeanNs, r.MeanCINs)
				if !r.Valid {
					continue
				}
				valid++
				if r.TrueLost == nil || r.Lost != *r.TrueLost {
					t.Errorf("interval %d %s valid with lost %d, true %v", r.Interval, r.Synopsis, r.Lost, deref(r.TrueLost))
				}
				if r.TrueMeanNs != nil && abs(r.MeanNs-*r.TrueMeanNs) > r.MeanCINs+1 {
					t.Errorf("interval %d %s valid with mean %.0f ± %.0f, true %.0f", r.Interval, r.Synopsis, r.MeanNs, r.MeanCINs, *r.TrueMeanNs)
				}
				for _, d := range c.spoiled {
					if r.Interval == int64(k0)+d {
						t.Errorf("interval X%+d valid despite its lost or misrouted End marker", d)
					}
				}
			}
			t.Logf("%+v", sum)
			if c.spoiled != nil && k0 == 0 {
				t.Fatal("the fault never struck")
			}
			if dp != nil && dp.dropped == 0 {
				t.Error("no End marker dropped")
			}
			if c.name == "end-misrouted" && sum.EndsMisrouted == 0 {
				t.Error("no End marker counted as misrouted")
			}
			if c.name == "data-misrouted" {
				// Steering that differs at the two ends is systematic:
				// the sampled check finds it and no line is valid.
				named := 0
				for _, r := range lines {
					if strings.Contains(r.Reason, "reached a queue their flow hash does not steer to") {
						named++
					}
				}
				if valid != 0 || named == 0 {
					t.Errorf("data steered wrongly: %d valid lines, %d naming the steering", valid, named)
				}
			} else if valid < 4 {
				t.Errorf("only %d valid lines: the fault spoiled more than its intervals", valid)
			}
			if sum.Sunk+sum.ImpairLost != sum.Generated+sum.LinkLocalSent || sum.ApplianceTxDropped != 0 {
				t.Errorf("generated %d, sunk %d, lost on the segment %d, dropped by appliances %d", sum.Generated, sum.Sunk, sum.ImpairLost, sum.ApplianceTxDropped)
			}
		})
	}
}
