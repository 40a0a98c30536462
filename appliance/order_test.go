package appliance_test

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestLinesInIntervalOrder: every control frame of one interval (its End
// marker and its synopses) is lost in the segment, so nothing claims that
// interval until the liveness check declares it silent, a pairing timeout
// and two intervals after it ended — by then the intervals after it have
// paired. Its line still comes out before theirs: each direction's lines
// are in interval order (docs/run.md, "Order"). On simulated time.
func TestLinesInIntervalOrder(t *testing.T) {
	const iv = 200 * time.Millisecond
	delay, _ := model.NewWeibull(40_000, 0.7)
	cl, _ := classifier.NewClassifier(nil)
	fp := &faultPort{decide: func(f *control.Frame, first uint64) fault {
		if f.Interval == first+3 {
			return drop
		}
		return pass
	}}
	lines := demoLines(t, demo.Config{
		Duration: 30 * iv, Interval: iv, Delay: delay, Rate: 5_000, Seed: 5,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Classifier: cl, Insecure: true, SimulatedTime: true,
		WrapSegment: func(p dataplane.Port) dataplane.Port { fp.Port = p; return fp },
	})
	if len(fp.faulted) == 0 {
		t.Fatal("no control frame was dropped: the fault went untested")
	}
	last := map[string]int64{}
	var silent int
	for _, r := range lines {
		key := r.Direction + "/" + r.MEC
		if k, ok := last[key]; ok && r.Interval <= k {
			t.Errorf("%s: interval %d (%s) after interval %d", key, r.Interval, r.ReasonCode, k)
		}
		last[key] = r.Interval
		if r.ReasonCode == report.Silent.String() || r.ReasonCode == report.ControlLost.String() {
			silent++
			t.Logf("interval %d: %s: %s", r.Interval, r.ReasonCode, r.Reason)
		}
	}
	if silent == 0 {
		t.Errorf("no line for the interval whose control frames were all lost:\n%v", lines)
	}
}
