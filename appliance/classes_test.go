package appliance_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestQuietClassesLeaveTheBudget: with MEC rules that no traffic matches,
// the busy class keeps what the quiet ones do not need of the default
// control budget (1 % of the data), so its RDA still ships and proves the
// LDA's loss: every one of its lines with traffic is valid, as without
// rules. (Split evenly, ten quiet classes left the busy RDA out and every
// lossy line invalid.) On simulated time: every line is the seed's.
func TestQuietClassesLeaveTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2.5 s demo")
	}
	var specs []string
	for i := 1; i <= 10; i++ {
		specs = append(specs, fmt.Sprintf("m%d=dst:192.0.2.%d/32", i, i))
	}
	cl, err := classifier.NewClassifierFromSpecs(specs)
	if err != nil {
		t.Fatal(err)
	}
	delay, _ := model.NewWeibull(30_000, 0.7)
	loss, _ := model.NewUniformLoss(0.001)
	rda := synopsis.DefaultRDAConfig()
	var mu sync.Mutex
	var lines []report.Interval
	const iv = 500 * time.Millisecond
	start := time.Now()
	_, err = demo.Run(demo.Config{
		Duration: 5 * iv, Interval: iv, Delay: delay, Loss: loss, Rate: 20_000, Seed: 5, Flows: 200,
		Syn: dataplane.SynConfig{LDA: synopsis.RecordLDAConfig(), RDA: &rda}, AdaptLDA: true, AdaptRDA: true,
		BudgetFraction: 0.01, Classifier: cl, Key: []byte("0123456789abcdef0123456789abcdef"), SimulatedTime: true,
		Reports: func(r *report.Interval) {
			mu.Lock()
			lines = append(lines, *r)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*iv {
		t.Errorf("a %v demo with 11 classes took %v", 5*iv, d)
	}
	valid, rdaShipped := 0, 0
	for _, r := range lines {
		if r.MEC != "all" || r.Sent == 0 {
			continue
		}
		t.Logf("%d %s valid=%v sent=%d lost=%d %s", r.Interval, r.Synopsis, r.Valid, r.Sent, r.Lost, r.Reason)
		if r.Synopsis == "rda" && r.Received > 0 && r.Samples > 0 {
			rdaShipped++
		}
		if r.Synopsis == "lda" && !r.Valid {
			t.Errorf("interval %d: the busy class's lda line invalid: %s", r.Interval, r.Reason)
		}
		if r.Synopsis == "lda" && r.Valid {
			valid++
			if r.TrueLost != nil && r.Lost != *r.TrueLost {
				t.Errorf("interval %d: lost %d, true %d", r.Interval, r.Lost, *r.TrueLost)
			}
		}
	}
	if rdaShipped < 4 || rdaShipped != valid {
		t.Errorf("busy class: %d intervals with its RDA shipped, %d valid LDA lines; want its RDA in each of ≥ 4", rdaShipped, valid)
	}
}
