//go:build budget

// This file measures the control traffic of one interval carrying a real
// compact LDA encoding. It is behind the "budget" build tag so that package
// control (and its fuzz targets) never depends on package synopsis:
//
//	go test -tags budget -run TestControlBudget -v ./control
package control_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/synopsis"
)

// budgetBits is the LDA's control budget: ≤ 36 kbit of control traffic per
// interval for a 1024-counter LDA, all headers and tags included.
// digestBits is what the per-bucket integrity digest adds on top (16 bits
// a bucket in the compact encoding, on by default): the budget of the
// default configuration is the sum.
const (
	budgetBits = 36_000
	digestBits = 1024 * 16 // DefaultCompactBounds().DigestBits per bucket
)

// perFrameWire is what Ethernet adds on the wire beyond the frame bytes
// Overhead counts: FCS (4), preamble + SFD (8), inter-frame gap (12).
const perFrameWire = 4 + 8 + 12

func TestControlBudget(t *testing.T) {
	for _, digest := range []bool{false, true} {
		cfg := synopsis.DefaultLDAConfig()
		cfg.Digest = digest
		budget := budgetBits
		if digest {
			budget += digestBits
		}
		controlBudget(t, cfg, budget)
	}
}

func controlBudget(t *testing.T, cfg synopsis.LDAConfig, budget int) {
	key := make([]byte, control.KeyLen)
	if cfg.TotalRows() != 1024 {
		t.Fatalf("default LDA has %d counters", cfg.TotalRows())
	}
	for _, n := range []int{100_000, 1_000_000, 10_000_000} {
		for _, lanes := range []int{1, 2} {
			lda := synopsis.MustNewLDA(cfg)
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			ts := uint64(1_700_000_000_000_000_000)
			for i := 0; i < n; i++ {
				ts += uint64(rng.IntN(2000)) // ≈ 1 µs apart
				lda.Add(rng.Uint64(), ts)
			}
			// A LAN segment's delays, −10 µs … 1 ms: the default −10 ms … 1 s
			// adds 10 bits per non-empty bucket (docs/lda.md, "Delay ranges").
			payload, err := lda.AppendCompact(nil, synopsis.CompactBounds{MinDelayNs: -10_000, MaxDelayNs: 1_000_000, MeanResolutionNs: 1, DigestBits: 16})
			if err != nil {
				t.Fatal(err)
			}
			parts := []control.PartKey{{MEC: 0, Kind: control.KindLDA}}
			hello := control.Hello{IntervalNs: 1e9, ConfigHash: 1, Lanes: uint16(lanes), Clock: "CLOCK_REALTIME", MECs: []string{"all"}, Parts: parts}
			s, err := control.NewSender(control.SenderConfig{Key: key, Hello: hello})
			if err != nil {
				t.Fatal(err)
			}
			r, err := control.NewReceiver(control.ReceiverConfig{Key: key, ConfigHash: 1})
			if err != nil {
				t.Fatal(err)
			}
			var frames [][]byte
			for l := 0; l < lanes; l++ {
				w, _ := s.NewEndWriter(uint16(l))
				frames = append(frames, w.AppendEnd(nil, 1, &control.End{EndNs: 1}))
			}
			rest, err := s.AppendInterval(nil, 1, 0, []control.Part{{PartKey: parts[0], Payload: payload}})
			if err != nil {
				t.Fatal(err)
			}
			frames = append(frames, rest...)
			bytes := 0
			for _, f := range frames {
				if err := r.Consume(f, 0); err != nil {
					t.Fatal(err)
				}
				bytes += len(f)
			}
			res := r.Results(nil)
			if len(res) != 1 || res[0].Bundle == nil || res[0].Bundle.ControlBytes != bytes {
				t.Fatalf("interval did not arrive whole: %+v", res)
			}
			if want := s.IntervalBytes(lanes, len(payload)); want != bytes {
				t.Fatalf("IntervalBytes %d, measured %d", want, bytes)
			}
			wire := bytes + perFrameWire*len(frames)
			t.Logf("digest %v, %d pkts, %d lane(s): LDA payload %d B (%d bit); %d frames, %d B = %.1f kbit (%.1f kbit with FCS+preamble+IFG); budget %.1f kbit",
				cfg.Digest, n, lanes, len(payload), 8*len(payload), len(frames), bytes, float64(8*bytes)/1000, float64(8*wire)/1000, float64(budget)/1000)
			if 8*bytes > budget {
				t.Errorf("digest %v: %d bits per interval over the %d-bit budget", cfg.Digest, 8*bytes, budget)
			}
		}
	}
}
