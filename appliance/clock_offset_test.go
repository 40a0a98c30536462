package appliance_test

import (
	"math"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
)

// offsetPort is a segment port of an appliance whose clock is off by off
// ns: arrival stamps and transmit times are read on that clock. The
// frames themselves travel on the link's clock, as on a real wire.
type offsetPort struct {
	dataplane.Port
	rp  *dataplane.RingPort
	off uint64
}

func (o *offsetPort) RxBurst(pkts []*dataplane.Packet) int {
	n := o.Port.RxBurst(pkts)
	for _, p := range pkts[:n] {
		if p.TS != 0 {
			p.TS += o.off
		}
	}
	return n
}

func (o *offsetPort) LastTxNs() uint64        { return o.rp.LastTxNs() + o.off }
func (o *offsetPort) TimestampSource() string { return "port" }

// TestClockOffsetTwoDirections: two appliances on a segment with the
// same constant delay (500 µs) both ways, #2's clock off by a known
// offset. Each measures only the direction it receives and ships its
// mean in its clock part; each then reports the offset of its own clock
// over the peer's, within its bound of the truth (+offset at #2, −offset
// at #1). At 300 µs the delays explain the estimate (it is below half
// the round trip); at 800 µs they do not (b→a reads −300 µs), which is
// what the peer watchdog's clock check flags. On simulated time
// (simRun): the host's load decides nothing, so every valid line from
// the third interval on carries an estimate.
func TestClockOffsetTwoDirections(t *testing.T) {
	for _, offset := range []uint64{300_000, 800_000} {
		t.Run(time.Duration(offset).String(), func(t *testing.T) { testClockOffset(t, offset) })
	}
}

func testClockOffset(t *testing.T, offset uint64) {
	const (
		iv    = 100 * time.Millisecond
		delay = 500_000.0 // ns, each way
	)
	d, _ := model.NewConstant(delay)
	clk := appliance.NewSimClock(simPairStart)
	clock2 := func() uint64 { return clk.Clock() + offset }
	p := newPairOpts(t, iv, 4096, pairOpts{delay: d, backDelay: d, clk: clk, clock2: clock2,
		wrapSeg2Rx: func(q dataplane.Port) dataplane.Port {
			return &offsetPort{Port: q, rp: q.(*dataplane.RingPort), off: offset}
		}})
	p.simRun(2500*time.Millisecond, 2000)
	p.mu.Lock()
	defer p.mu.Unlock()
	beyond := float64(offset) > delay // the clocks disagree beyond what the delays explain
	first := int64(simPairStart / uint64(iv))
	check := func(who string, lines []report.Interval, fwd, truth float64) {
		t.Helper()
		n := 0
		for _, r := range lines {
			if r.Synopsis != "lda" || r.Flow != "" || !r.Valid {
				continue
			}
			if math.Abs(r.MeanNs-fwd) > r.MeanCINs+1 {
				t.Errorf("%s interval %d: mean %.0f ± %.0f ns, want %.0f", who, r.Interval, r.MeanNs, r.MeanCINs, fwd)
			}
			th, ok := r.Extra["clock_offset_ns"].(float64)
			if !ok {
				// The peer's first interval is partial, so its first
				// valid mean is its second's: from the third on, every
				// valid line has an estimate.
				if r.Interval >= first+2 {
					t.Errorf("%s interval %d: no offset estimate", who, r.Interval-first)
				}
				continue
			}
			n++
			ci := r.Extra["clock_offset_ci_ns"].(float64)
			rk := r.Extra["clock_offset_interval"].(uint64)
			rev := r.Extra["clock_reverse_mean_ns"].(float64)
			t.Logf("%s interval %d: d_fwd %.0f ns, offset %.1f ± %.1f ns (reverse mean of interval %d: %.0f ns), truth %.0f",
				who, r.Interval-first, r.MeanNs, th, ci, int64(rk)-first, rev, truth)
			if math.Abs(th-truth) > ci {
				t.Errorf("%s interval %d: offset %.1f ± %.1f ns, truth %.0f", who, r.Interval-first, th, ci, truth)
			}
			// The peer's mean of interval k reaches this side with its
			// interval k's synopses, before this side closes k+1.
			if rk+1 < uint64(r.Interval) || rk > uint64(r.Interval) {
				t.Errorf("%s interval %d: reverse mean of interval %d", who, r.Interval-first, int64(rk)-first)
			}
			if got := math.Abs(th)-ci > (r.MeanNs+rev)/2; got != beyond {
				t.Errorf("%s interval %d: beyond half the round trip %v, want %v", who, r.Interval-first, got, beyond)
			}
		}
		if n < 22 {
			t.Errorf("%s: %d lines with an offset estimate, want ≥ 22 of a 25-interval run", who, n)
		}
	}
	check("#2 (a>b)", p.lines, delay+float64(offset), float64(offset))
	check("#1 (b>a)", p.back, delay-float64(offset), -float64(offset))
}
