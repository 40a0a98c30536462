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
	"github.com/rs/zerolog"
)

// edgeDemo runs a segment that loses a quarter of the packets, delays
// them 20–22 ms and holds one in 50 back behind the next 30 (up to
// 5 ms), at 10 000 packets a second, so that packets cross End markers,
// with a control budget that leaves the RDA out
// (it would need ~86 bytes per lost packet), so that an interval's loss
// can only stand on its End markers' counts. requests, when not nil,
// wraps #2's segment port (its requests).
func edgeDemo(t *testing.T, seed uint64, copies int, requests *exchangeDropper) []report.Interval {
	return edgeDemoWrapped(t, seed, copies, requests, nil, nil)
}

// edgeDemoWrapped is edgeDemo with #1's segment port wrapped by fp (nil:
// not wrapped) and the configuration changed by tweak (nil: none).
func edgeDemoWrapped(t *testing.T, seed uint64, copies int, requests *exchangeDropper, fp *faultPort, tweak func(*demo.Config)) []report.Interval {
	t.Helper()
	delay, _ := model.NewUniform(20e6, 22e6)
	loss, _ := model.NewUniformLoss(0.25)
	cl, err := classifier.NewClassifierFromSpecs(nil)
	if err != nil {
		t.Fatal(err)
	}
	rda := synopsis.DefaultRDAConfig()
	cfg := demo.Config{
		Duration: 4 * time.Second, Interval: 250 * time.Millisecond, Delay: delay, Loss: loss, ReorderProb: 0.02, ReorderDepth: 30, ReorderHold: 5 * time.Millisecond, Rate: 10_000, Seed: seed, Flows: 50,
		Syn:        dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, Classes: cl.NumClasses()},
		Classifier: cl, Insecure: true, Conf: 0.98, ControlCopies: copies, BudgetBytes: 16 << 10, AdaptLDA: true, AdaptRDA: true, SimulatedTime: true,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(edgeLogLevel),
	}
	if fp != nil {
		cfg.WrapSegment = func(p dataplane.Port) dataplane.Port { fp.Port = p; return fp }
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return runExchangeDemo(t, cfg, "lda", requests)
}

// TestEdgeCheck: with the RDA left out, a segment that reorders across
// every End marker had no LDA line whose loss stood (its crossing checks
// see the next interval's losses in the buckets of this one's, and the
// counts wait for the segment to keep order). The edge check counts the
// packets that crossed each cut against the sender's timestamp caches:
// the lines' loss is exact from the second interval on, every one against
// the simulation's per-packet truth.
func TestEdgeCheck(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		lines := edgeDemo(t, seed, 2-int(seed/3), nil)
		edged, crossed, early, lossy := 0, 0, 0, 0 // packets early: TestEdgeCount
		for _, r := range lines {
			t.Logf("seed %d %d: valid %v loss_valid %v sent %d lost %d (true %v) crossed %v early %v edge %v by %v %s: %s", seed, r.Interval, r.Valid, r.LossValid, r.Sent, r.Lost, deref(r.TrueLost),
				r.Extra["crossed"], r.Extra["early"], r.Extra["edge_check"], r.Extra["loss_verified_by"], r.ReasonCode, r.Reason)
			if r.LossValid && (r.TrueLost == nil || r.Lost != *r.TrueLost) {
				t.Errorf("seed %d interval %d: lost %d marked exact, true %v", seed, r.Interval, r.Lost, deref(r.TrueLost))
			}
			if r.Sent == 0 || r.Lost == 0 {
				continue
			}
			lossy++
			if r.Extra["loss_verified_by"] == "edges" {
				edged++
				if !r.LossValid {
					t.Errorf("seed %d interval %d: verified by the edges, loss_valid false (%s)", seed, r.Interval, r.Reason)
				}
				n, _ := r.Extra["crossed"].(int)
				e, _ := r.Extra["early"].(int)
				crossed, early = crossed+n, early+e
			}
		}
		t.Logf("seed %d: %d lossy lines, %d verified by the edges (%d packets found late, %d early)", seed, lossy, edged, crossed, early)
		// The first interval has no checked start (the receiver's
		// warm-up before it); a cut where a held packet arrived late in
		// the window is refused (the window may be too short).
		if 3*edged < 2*lossy || crossed == 0 {
			t.Errorf("seed %d: %d of %d lossy lines verified by the edges, %d late packets found: the check did not run", seed, edged, lossy, crossed)
		}
	}
}

// TestEdgeCheckRefused: without the check's replies (every RDA-kind
// request dropped: an older peer, a reverse path that loses them) the
// lines are checked as before, no line claims a loss it cannot show, and
// the checks back off.
func TestEdgeCheckRefused(t *testing.T) {
	requests := &exchangeDropper{drop: func(f *control.Frame) bool { return f.Type == control.TypeRequest && f.Kind == control.KindRDA }}
	lines := edgeDemo(t, 1, 2, requests)
	for _, r := range lines {
		if r.LossValid && (r.TrueLost == nil || r.Lost != *r.TrueLost) {
			t.Errorf("interval %d: lost %d marked exact, true %v", r.Interval, r.Lost, deref(r.TrueLost))
		}
		if r.Extra["loss_verified_by"] == "edges" {
			t.Errorf("interval %d: verified by the edges without a reply", r.Interval)
		}
		if r.Lost > 0 && r.LossValid {
			t.Logf("interval %d: loss valid without the edges (%v)", r.Interval, r.Extra["loss_verified_by"])
		}
	}
	// After three checks without a reply only every 16th cut is asked
	// (an older peer answers none, and each check holds its interval's
	// pairing until its deadline): the first three checks' tries (2
	// queries, up to 16 tries each) and a probe, not ~32 frames for each
	// of the run's 15 cuts.
	n := requests.n.Load()
	t.Logf("%d request frames dropped", n)
	if n == 0 {
		t.Fatal("no request dropped: the test shows nothing")
	}
	if n > 200 {
		t.Errorf("%d request frames sent to a peer that answers none: the checks did not back off", n)
	}
}

// TestEdgeCheckAroundLostEndMarker: every copy of one End marker is lost,
// so the receiver's next copy spans two intervals and the interval
// before it and the one after it have a neighbour no sender side
// matches. The edge check of their cuts needs only what each side of a
// cut holds: both lines' losses are exact, verified by the edges.
func TestEdgeCheckAroundLostEndMarker(t *testing.T) {
	const x = 6
	fp := &faultPort{decide: func(f *control.Frame, first uint64) fault {
		if f.Type == control.TypeEnd && f.Interval-first == x {
			return drop
		}
		return pass
	}}
	lines := edgeDemoWrapped(t, 1, 2, nil, fp, nil)
	if !fp.faulted[fp.first+x] {
		t.Fatal("interval x's End markers were not dropped: the test shows nothing")
	}
	verified := map[uint64]bool{}
	for _, r := range lines {
		k := uint64(r.Interval) - fp.first
		t.Logf("x%+d: valid %v loss_valid %v sent %d lost %d (true %v) edge %v by %v %s: %s", int(k)-x, r.Valid, r.LossValid, r.Sent, r.Lost, deref(r.TrueLost),
			r.Extra["edge_check"], r.Extra["loss_verified_by"], r.ReasonCode, r.Reason)
		if r.LossValid && (r.TrueLost == nil || r.Lost != *r.TrueLost) {
			t.Errorf("x%+d: lost %d marked exact, true %v", int(k)-x, r.Lost, deref(r.TrueLost))
		}
		verified[k] = r.Extra["loss_verified_by"] == "edges"
	}
	for _, k := range []uint64{x - 1, x + 2} {
		if !verified[k] {
			t.Errorf("x%+d: the loss next to the lost End marker is not verified by the edges", int(k)-x)
		}
	}
}

var edgeLogLevel = zerolog.WarnLevel

// TestEdgeCheckTrafficOnset: the traffic starts after two idle
// intervals. The cut before its first interval needs no list and no
// round trip (the sender recorded nothing before it, the receiver
// nothing before it either), whatever the window would be (the demo's
// assumed range is 110 ms wide), so that interval is checked by the edges
// too (verified, or agreeing with the RDA that verified it), however late
// its own pairing comes.
func TestEdgeCheckTrafficOnset(t *testing.T) {
	const idle = 600 * time.Millisecond
	lines := edgeDemoWrapped(t, 1, 2, nil, nil, func(c *demo.Config) {
		c.Traffic = func(elapsed time.Duration) (pause, malformed bool) { return elapsed < idle, false }
	})
	first := int64(-1)
	for _, r := range lines {
		if r.Sent == 0 || first >= 0 && r.Interval != first {
			continue
		}
		first = r.Interval
		t.Logf("first interval with traffic: valid %v sent %d lost %d (true %v) edge %v by %v: %s", r.Valid, r.Sent, r.Lost, deref(r.TrueLost), r.Extra["edge_check"], r.Extra["loss_verified_by"], r.Reason)
		if ec := r.Extra["edge_check"]; (ec != "complete" && ec != "agrees") || !r.LossValid || r.TrueLost == nil || r.Lost != *r.TrueLost {
			t.Errorf("the first interval with traffic: loss %d (true %v, loss_valid %v), edge check %v: want the check done and the loss exact", r.Lost, deref(r.TrueLost), r.LossValid, ec)
		}
	}
	if first < 0 {
		t.Fatal("no interval with traffic")
	}
}

// TestEdgeCheckAfterQuietSpell: traffic that begins after a quiet spell
// longer than the start's sizings (cacheRoom's startSizings), heavier
// than the caches' floor holds, under 25 % loss. Sized to the quiet
// spell, the copies of its first two intervals sampled (the sizing
// follows the traffic an interval behind) and the edge check refused
// them, so their loss was not verified; sized to the starting room
// (quietShare), each interval's loss is checked at its cuts and exact
// from the first.
func TestEdgeCheckAfterQuietSpell(t *testing.T) {
	const quiet = 2125 * time.Millisecond // 8½ intervals of 250 ms
	lines := edgeDemoWrapped(t, 4, 2, nil, nil, func(c *demo.Config) {
		c.Duration, c.Rate = 4*time.Second, 40_000 // 10 000 packets an interval (5 000 in the first), over the floor's 3 072
		c.Traffic = func(elapsed time.Duration) (pause, malformed bool) { return elapsed < quiet, false }
	})
	seen := 0
	for _, r := range lines {
		if r.Sent == 0 {
			continue
		}
		seen++
		t.Logf("%d: valid %v sent %d lost %d (true %v) edge %v by %v: %s", r.Interval, r.Valid, r.Sent, r.Lost, deref(r.TrueLost), r.Extra["edge_check"], r.Extra["loss_verified_by"], r.Reason)
		if r.LossValid && (r.TrueLost == nil || r.Lost != *r.TrueLost) {
			t.Errorf("interval %d: lost %d marked exact, true %v", r.Interval, r.Lost, deref(r.TrueLost))
		}
		if seen > 3 {
			continue
		}
		if ec := r.Extra["edge_check"]; (ec != "complete" && ec != "agrees") || !r.LossValid {
			t.Errorf("interval %d, the %d. with traffic: loss_valid %v, edge check %v (%s): want the loss checked at its cuts", r.Interval, seen, r.LossValid, ec, r.Reason)
		}
	}
	if seen < 4 {
		t.Fatalf("%d intervals with traffic, want at least 4", seen)
	}
}
