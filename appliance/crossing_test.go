package appliance_test

import (
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
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestCrossingNextMissing: an interval whose next one has no synopses
// (every synopsis fragment of every third interval, and every reply that
// would bring its LDA part on demand, is dropped in the
// segment, which also reorders) cannot be checked for packets reordered
// past its End marker by the synopses; the next interval's End marker
// counts can, alone, only while no reordering across End markers has been
// seen. Its
// lines with loss must be invalid, naming the missing next interval, or
// valid with their loss proven by the End markers' counts (and exact);
// lines without loss may stay valid.
// Every valid or loss_valid line holds the stage's exact loss, and the
// lines come out in interval order. On simulated time: where the
// fragments and the replies fall is the scenario's, not the host's.
func TestCrossingNextMissing(t *testing.T) {
	const iv = 300 * time.Millisecond
	delay, _ := model.NewWeibull(40_000, 0.7)
	loss, _ := model.NewUniformLoss(0.001)
	cl, _ := classifier.NewClassifier(nil)
	fp := &faultPort{decide: func(f *control.Frame, first uint64) fault {
		if (f.Type == control.TypeFragment || f.Type == control.TypeReply || f.Type == control.TypeParity) && f.Interval > first && (f.Interval-first)%3 == 0 {
			// (The replies that would bring the LDA part on demand too.)
			return drop
		}
		return pass
	}}
	var mu sync.Mutex
	var lines []report.Interval
	_, err := demo.Run(demo.Config{
		Duration: 12 * iv, Interval: iv, Delay: delay, Loss: loss, Rate: 20_000, Seed: 21, ReorderProb: 0.05,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Classifier: cl, Insecure: true, ControlCopies: 2, SimulatedTime: true,
		WrapSegment: func(p dataplane.Port) dataplane.Port { fp.Port = p; return fp },
		Reports: func(r *report.Interval) {
			mu.Lock()
			lines = append(lines, *r)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	failed := map[int64]bool{}
	for _, r := range lines {
		if r.Reason == control.ReasonFragmentLost.String() || r.ReasonCode == report.SynopsisLost.String() {
			failed[r.Interval] = true
		}
	}
	var prev int64
	checked, lossy, named := 0, 0, 0
	for _, r := range lines {
		t.Logf("%d valid=%v lost=%d true_lost=%v %s sent=%d recv=%d extra=%v", r.Interval, r.Valid, r.Lost, deref(r.TrueLost), r.Reason, r.Sent, r.Received, r.Extra)
		if r.Interval < prev && r.Reason != appliance.ReasonRecut {
			t.Errorf("interval %d reported after %d", r.Interval, prev)
		}
		prev = max(prev, r.Interval)
		if (r.Valid || r.LossValid) && r.TrueLost != nil && r.Lost != *r.TrueLost {
			t.Errorf("interval %d valid (loss_valid %v) with lost %d, true %d", r.Interval, r.LossValid, r.Lost, *r.TrueLost)
		}
		if !failed[r.Interval+1] || failed[r.Interval] || r.Sent == 0 {
			continue
		}
		checked++
		if r.Lost > 0 {
			lossy++
			// Invalid, naming the missing next interval — unless the
			// line was already invalid for a cause of its own (packets
			// reordered into it from the interval before, say).
			// Or valid, its loss proven by the End markers' counts of
			// both intervals (no crossing seen in the segment: checked
			// exact above).
			switch {
			case r.Valid && r.Extra["loss_verified_by"] == "end_markers":
				named++
			case r.Valid || r.Reason == "":
				t.Errorf("interval %d before a failed one: lost %d, valid %v, reason %q; want invalid, %q", r.Interval, r.Lost, r.Valid, r.Reason, appliance.ReasonNextMissing)
			case strings.HasPrefix(r.Reason, appliance.ReasonNextMissing):
				named++
			}
		}
	}
	if len(failed) == 0 || checked == 0 || lossy == 0 || named == 0 {
		t.Errorf("%d failed intervals, %d before them checked, %d with loss, %d naming the missing next interval: the scenario did not happen", len(failed), checked, lossy, named)
	}
}
