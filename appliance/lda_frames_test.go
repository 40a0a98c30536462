package appliance

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestLDAFramesPerInterval measures the frames one interval's LDA ships
// in at the default configuration (recorded at synopsis.RecordLDAConfig,
// folded per interval as ship does, 1 % budget, default compact bounds,
// MTU 1500), at 1 000, 10 000 and 100 000 packets per interval of 128 and
// 1 500 bytes, and how many of the buckets shipped are empty (what a
// sparse form could save: an empty bucket costs its count width, about
// 1–3 bits, against 40 or so for a bucket with packets). Run with -v for
// the table (docs/protocol.md, "3.5 Parity (type 6)"):
//
//	go test -run TestLDAFramesPerInterval -v ./appliance/
func TestLDAFramesPerInterval(t *testing.T) {
	fs := control.FragmentPayload(control.DefaultMTU)
	bounds := synopsis.DefaultCompactBounds()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{128, 1500} {
		for _, n := range []int{1_000, 10_000, 100_000} {
			l, err := synopsis.NewLDA(synopsis.RecordLDAConfig())
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				l.Add(rng.Uint64(), uint64(i)*1000)
			}
			// ship's LDA share: a quarter of one copy's budget (less
			// the Hello and End), in payload bytes; then growLDA gives
			// it what the others leave (with the LDA alone: the rest).
			budget := max(int(math.Ceil(0.01*float64(n*size))), MinControlBudget)
			perCopy := float64(budget - 300)
			limit := int(perCopy * float64(fs) / float64(fs+control.Overhead))
			f, err := l.Fold(l.Config().WithRows(l.ShipRows(synopsis.LDAShipFloorRows, limit, bounds)))
			if err != nil {
				t.Fatal(err)
			}
			p, err := f.AppendCompact(nil, bounds)
			if err != nil {
				t.Fatal(err)
			}
			buckets, empty := 0, 0
			cfg := f.Config()
			for j, b := range cfg.Banks {
				for r := 0; r < b.Rows; r++ {
					buckets++
					if _, c, _ := f.Bucket(j, r); c == 0 {
						empty++
					}
				}
			}
			frames := (len(p) + fs - 1) / fs
			t.Logf("%d packets of %d B: budget %d B, LDA %s: %d buckets (%d empty, %.0f %%), %d B, %d frames", n, size, budget, cfg.Shape(), buckets, empty, 100*float64(empty)/float64(buckets), len(p), frames)
			if len(p) > limit {
				t.Errorf("%d packets: the LDA's %d bytes are over its limit %d", n, len(p), limit)
			}
			// Rows follow the packets: bank 0 ships the smallest power
			// of two of rows ≥ its packets (at most the 1024 recorded).
			if want := min(1024, 1<<int(math.Ceil(math.Log2(float64(n))))); cfg.Banks[0].Rows != want {
				t.Errorf("%d packets: bank 0 ships %d rows, want %d", n, cfg.Banks[0].Rows, want)
			}
		}
	}
}
