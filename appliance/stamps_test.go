package appliance_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// pollPort is a receiver's segment port that gives no timestamps (as a
// NIC without rx stamps) and, every gapEvery-th poll, keeps the worker
// away for gap before looking at the ring (a preempted thread, a long
// idle sleep).
type pollPort struct {
	dataplane.Port
	calls    int
	gapEvery int
	gap      time.Duration
}

func (p *pollPort) RxBurst(pkts []*dataplane.Packet) int {
	p.calls++
	if p.gapEvery > 0 && p.calls%p.gapEvery == 0 {
		time.Sleep(p.gap)
	}
	n := p.Port.RxBurst(pkts)
	for _, q := range pkts[:n] {
		q.TS = 0
	}
	return n
}

// TestPollGapsInvalidate: when the receiver stamps at poll time and its
// polls are far apart, the report carries the poll gaps in stamp_err_ns
// (and mean_ci_ns) and marks the interval invalid, naming the stamps;
// every line still marked valid holds the true mean within mean_ci_ns.
func TestPollGapsInvalidate(t *testing.T) {
	if raceEnabled {
		t.Skip("timing of the demo's appliances under -race")
	}
	for _, tc := range []struct {
		name     string
		gapEvery int
		wantAll  bool // every interval with traffic invalid for its stamps
	}{
		{"gaps", 3, true},
		{"idle-sleep", 0, false}, // the demo's 20 µs idle sleep alone: ~100 µs gaps
	} {
		t.Run(tc.name, func(t *testing.T) {
			const iv = 300 * time.Millisecond
			delay, _ := model.NewWeibull(30_000, 0.7)
			loss, _ := model.NewUniformLoss(0)
			cl, _ := classifier.NewClassifier(nil)
			var mu sync.Mutex
			var lines []report.Interval
			_, err := demo.Run(demo.Config{
				Duration: 8 * iv, Interval: iv, Delay: delay, Loss: loss, Rate: 5_000, Seed: 5, Flows: 50,
				Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Classifier: cl, Insecure: true,
				WrapReceiver: func(p dataplane.Port) dataplane.Port {
					return &pollPort{Port: p, gapEvery: tc.gapEvery, gap: 3 * time.Millisecond}
				},
				Reports: func(r *report.Interval) {
					mu.Lock()
					lines = append(lines, *r)
					mu.Unlock()
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			stampInvalid, withTraffic, validN := 0, 0, 0
			for _, r := range lines {
				if r.Synopsis != "lda" || r.Received == 0 || r.Reason == appliance.ReasonWarmup {
					continue // (the interval the receiver started in has no estimate)
				}
				if !r.Valid && r.StampSource == "" {
					// No estimate at all (the sender's LDA never came: a
					// loaded machine stretched a sleep past the control
					// wait): nothing was stamped to report on.
					t.Logf("interval %d without an estimate: %s", r.Interval, r.Reason)
					continue
				}
				withTraffic++
				if r.StampSource != "poll" {
					t.Errorf("interval %d: stamp_source %q, want poll", r.Interval, r.StampSource)
				}
				if r.RxStampErrNs == 0 || r.StampErrNs < r.RxStampErrNs {
					t.Errorf("interval %d: rx stamp error %.0f ns, total %.0f", r.Interval, r.RxStampErrNs, r.StampErrNs)
				}
				if r.Valid {
					validN++
				}
				if strings.Contains(r.Reason, "timestamps uncertain") {
					stampInvalid++
				}
				t.Logf("interval %d valid=%v mean %.1f µs (true %.1f) ± %.1f, stamp err %.1f µs (rx %.1f) %s", r.Interval, r.Valid,
					r.MeanNs/1e3, trueMean(r)/1e3, r.MeanCINs/1e3, r.StampErrNs/1e3, r.RxStampErrNs/1e3, r.Reason)
				if r.Valid && r.TrueMeanNs != nil && abs(r.MeanNs-*r.TrueMeanNs) > r.MeanCINs {
					t.Errorf("interval %d valid with mean %.0f ns, true %.0f, bound %.0f", r.Interval, r.MeanNs, *r.TrueMeanNs, r.MeanCINs)
				}
			}
			if withTraffic < 4 {
				t.Fatalf("%d intervals with traffic", withTraffic)
			}
			// With 3 ms gaps every interval is invalid: for its stamps, or
			// (a loaded machine stretches the sleeps) for delays beyond the
			// encoding's bounds.
			if tc.wantAll && (validN > 0 || 2*stampInvalid < withTraffic) {
				t.Errorf("with 3 ms poll gaps %d of %d intervals valid, %d invalid for their stamps", validN, withTraffic, stampInvalid)
			}
		})
	}
}

func trueMean(r report.Interval) float64 {
	if r.TrueMeanNs == nil {
		return -1
	}
	return *r.TrueMeanNs
}
