package appliance_test

import (
	"testing"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestCountsAroundLostEndMarker: a congested segment loses 30 % of the
// data, every control frame of one interval x (each copy of its End
// marker, its synopses) and half the synopsis fragments of the intervals
// around it. The receiver cannot cut x from x+1 (its copy spans both), so
// neither has its loss; every other interval has its loss measured and
// exact: the End markers' counts stand for the lines whose synopses were
// lost, and the lines whose neighbour is x or x+1 lean on the order
// checks as they would on a neighbour whose loss hides a crossed packet.
// A merged copy's extra packets are the other interval's, no sign that the
// segment reorders. Every line that says its loss is exact is.
func TestCountsAroundLostEndMarker(t *testing.T) {
	const calm = 26 // > 18 intervals checked in order before the losses
	x := uint64(calm + 4)
	fp := &faultPort{decide: func(f *control.Frame, first uint64) fault {
		k := f.Interval - first
		if k == x {
			return drop
		}
		if k >= x-1 && k <= x+3 && (f.Type == control.TypeFragment || f.Type == control.TypeParity) && f.FragIndex%2 == 0 {
			return drop
		}
		return pass
	}}
	delay, _ := model.NewWeibull(30_000, 0.7)
	loss, _ := model.NewUniformLoss(0.3)
	cl, _ := classifier.NewClassifier(nil)
	rda := synopsis.DefaultRDAConfig()
	lines, _ := demoLinesSum(t, demo.Config{
		Duration: (calm + 10) * faultInterval, Interval: faultInterval, Delay: delay, Loss: loss, Rate: 5_000, Seed: 3, Flows: 20,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda}, Classifier: cl, Insecure: true, SimulatedTime: true,
		WrapSegment: func(p dataplane.Port) dataplane.Port { fp.Port = p; return fp },
	})
	if !fp.faulted[fp.first+x] {
		t.Fatal("interval x's control frames were not dropped: the test shows nothing")
	}
	measured := map[uint64]bool{}
	for _, r := range lines {
		if r.Flow != "" || r.Synopsis == "lds" || r.Synopsis == "sample" {
			continue
		}
		k := uint64(r.Interval) - fp.first
		tl := "?"
		if r.TrueLost != nil {
			tl = fmtU(*r.TrueLost)
		}
		t.Logf("%d %s: valid %v loss_valid %v sent %d lost %d (true %s) %s: %s", k, r.Synopsis, r.Valid, r.LossValid, r.Sent, r.Lost, tl, r.ReasonCode, r.Reason)
		if (r.Valid || r.LossValid) && (r.TrueLost == nil || r.Lost != *r.TrueLost) {
			t.Errorf("%d %s: loss marked exact, lost %d, true %s", k, r.Synopsis, r.Lost, tl)
		}
		if r.Synopsis == "lda" && r.LossValid {
			measured[k] = true
		}
	}
	for k := x - 4; k <= x+5; k++ {
		if k != x && k != x+1 && !measured[k] {
			t.Errorf("interval %d (x%+d): the LDA line's loss is not measured", k, int(k)-int(x))
		}
	}
}
