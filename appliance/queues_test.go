package appliance_test

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// TestDemoQueues is TestDemo with two queues at every port of both
// appliances (software RSS by flow hash, one lane pair and one worker per
// queue, End markers steered by lane): every interval valid, loss exact,
// the mean inside its bound, no frame lost by the appliances, and no flow
// reordered (the segment does not reorder: any reordering would be the
// queues').
func TestDemoQueues(t *testing.T) {
	delay, _ := model.NewWeibull(50_000, 0.7)
	loss, _ := model.NewUniformLoss(0.001)
	cl, _ := classifier.NewClassifier(nil)
	rda := synopsis.DefaultRDAConfig()
	var lines []report.Interval
	sum, err := appliance.RunDemo(appliance.DemoConfig{
		Duration: 3 * time.Second, Interval: 500 * time.Millisecond, Delay: delay, Loss: loss, Rate: 20_000, Seed: 1, ControlCopies: 2,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda}, Classifier: cl, Insecure: true, Queues: 2,
		Log:     zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel),
		Reports: func(r *report.Interval) { lines = append(lines, *r) },
	})
	if err != nil {
		t.Fatal(err)
	}
	prevMissing := 0
	for _, r := range lines {
		t.Logf("k=%d %s valid=%v %s sent=%d recv=%d lost=%d mean=%.0f±%.0f", r.Interval, r.Synopsis, r.Valid, r.Reason, r.Sent, r.Received, r.Lost, r.MeanNs, r.MeanCINs)
		if r.Synopsis == "lda" && !r.Valid && r.Reason == appliance.ReasonPrevMissing {
			prevMissing++
		}
	}
	t.Logf("%+v", sum)
	if raceEnabled {
		if sum.Valid == 0 {
			t.Errorf("no valid interval under -race")
		}
	} else if sum.Intervals < 3 || sum.Valid+prevMissing != sum.Intervals || prevMissing > 1 {
		t.Errorf("%d of %d intervals valid (%d without a predecessor)", sum.Valid, sum.Intervals, prevMissing)
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
