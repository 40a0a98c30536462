package appliance

import (
	"testing"

	"github.com/ldafwd/ldafwd/synopsis"
)

// TestDelayRange: the confidence range is the assumed one widened to the
// bucket means seen over every class, rounded outwards (the assumed range
// clamped into the wire range first); without a usable bucket it is the assumed range and says
// so; and the controller then keeps the latest range that was seen.
func TestDelayRange(t *testing.T) {
	wireB := synopsis.DefaultCompactBounds()
	if got := DefaultAssumedDelay.Within(wireB); got != DefaultAssumedDelay {
		t.Errorf("default assumed range within the default wire range: %v", got)
	}
	narrow := synopsis.CompactBounds{MinDelayNs: 0, MaxDelayNs: 500_000}
	if got := DefaultAssumedDelay.Within(narrow); got != (DelayRange{MinNs: 0, MaxNs: 500_000}) {
		t.Errorf("assumed range clamped into [0, 500µs]: %v", got)
	}
	var seen delaysSeen
	if r, ok := seen.rangeOf(DefaultAssumedDelay, wireB); ok || r != DefaultAssumedDelay {
		t.Errorf("nothing seen: %v, %v", r, ok)
	}
	seen.add(&synopsis.LDADiagnostics{MinMeanNs: 1e9, MaxMeanNs: 2e9}, 0) // no usable bucket: ignored
	seen.add(&synopsis.LDADiagnostics{MinMeanNs: 20e6 + 0.5, MaxMeanNs: 48e6 + 0.25}, 12)
	seen.add(&synopsis.LDADiagnostics{MinMeanNs: 30e6, MaxMeanNs: 52e6 - 0.5}, 3)
	r, ok := seen.rangeOf(DefaultAssumedDelay, wireB)
	if want := (DelayRange{MinNs: -10_000, MaxNs: 52_000_000}); !ok || r != want {
		t.Errorf("congested: %v, %v; want %v", r, ok, want)
	}
	// Beyond our wire range (a peer whose --max-delay is wider: its
	// buckets decoded within its own): what was seen stands.
	seen.add(&synopsis.LDADiagnostics{MinMeanNs: -30e6 - 0.5, MaxMeanNs: 3e9}, 1)
	if r, _ := seen.rangeOf(DefaultAssumedDelay, wireB); r != (DelayRange{MinNs: -30_000_001, MaxNs: 3_000_000_000}) {
		t.Errorf("beyond the wire range: %v", r)
	}
	if w := (DelayRange{MinNs: -10_000, MaxNs: 1_000_000}).WidthNs(); w != 1_010_000 {
		t.Errorf("width %d", w)
	}

	c := &controller{a: &Appliance{cfg: Config{Bounds: wireB, Assumed: DefaultAssumedDelay}}}
	var busy delaysSeen
	busy.add(&synopsis.LDADiagnostics{MinMeanNs: 5e6, MaxMeanNs: 80e6}, 4)
	got := c.confidenceRange(busy)
	if again := c.confidenceRange(delaysSeen{}); again != got || got.MaxNs != 80_000_000 {
		t.Errorf("an interval without usable buckets took %v, want the latest %v", again, got)
	}
	ev := evidence{}
	if ev.windowNs(wireB) != wire(wireB).WidthNs() {
		t.Errorf("crossing window without a range: %d", ev.windowNs(wireB))
	}
	ev.delay = got
	if ev.windowNs(wireB) != 80_010_000 {
		t.Errorf("crossing window %d, want 80.01 ms", ev.windowNs(wireB))
	}
}
