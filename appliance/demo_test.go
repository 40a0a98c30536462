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

func TestDemo(t *testing.T) {
	d := 3 * time.Second
	delay, _ := model.NewWeibull(50_000, 0.7)
	loss, _ := model.NewUniformLoss(0.001)
	cl, _ := classifier.NewClassifier(nil)
	var lines []report.Interval
	sum, err := appliance.RunDemo(appliance.DemoConfig{
		Duration: d, Interval: 500 * time.Millisecond, Delay: delay, Loss: loss, Rate: 20_000, Seed: 1,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Classifier: cl, Insecure: true, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel),
		Reports: func(r *report.Interval) { lines = append(lines, *r) },
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range lines {
		tl := "-"
		if r.TrueLost != nil {
			tl = "ok"
		}
		t.Logf("k=%d valid=%v %s sent=%d recv=%d lost=%d mean=%.0f±%.0f truth=%s", r.Interval, r.Valid, r.Reason, r.Sent, r.Received, r.Lost, r.MeanNs, r.MeanCINs, tl)
	}
	t.Logf("%+v", sum)
	if sum.Intervals < 3 || sum.Valid != sum.Intervals {
		t.Errorf("%d of %d intervals valid", sum.Valid, sum.Intervals)
	}
	if sum.LossExact != sum.Valid {
		t.Errorf("loss exact in %d of %d valid intervals", sum.LossExact, sum.Valid)
	}
	if sum.Sunk+sum.ImpairLost != sum.Generated || sum.ApplianceTxDropped != 0 {
		t.Errorf("generated %d, sunk %d, lost on the segment %d, dropped by appliances %d", sum.Generated, sum.Sunk, sum.ImpairLost, sum.ApplianceTxDropped)
	}
}
