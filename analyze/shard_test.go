package analyze_test

import (
	"bytes"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestShardsSameReport: the streaming analysis pairing on 2, 3 or 4
// shards reports what it reports pairing on its own goroutine (1), byte
// for byte: every line as JSON and as a table row, the statistics, the
// error. The capture pairs are every situation of the property test and
// bit-identical packets lost across interval boundaries and the overlap
// edges (so that the shards' marks count); every synopsis with its truth;
// intervals of 10 ms with a window of 20 ms (so that groups close, and
// batches go to the shards, throughout the captures), and the whole
// capture as one interval with the default window. The package's other
// tests hold the shards to the whole-capture analysis too: each streaming
// run pairs on 1 to 4 shards in turn.
func TestShardsSameReport(t *testing.T) {
	packets, maxShards := 10_000, 4
	if testing.Short() {
		packets = 5_000
	}
	if raceEnabled {
		// The race detector checks the shards' hand-overs; two shards on
		// smaller captures have every one of them.
		packets, maxShards = 2_000, 2
	}
	type pair struct {
		name   string
		s, r   []byte
		mec    []string
		widths []time.Duration
	}
	var pairs []pair
	for i, sit := range situations {
		sc := baseScenario(uint64(500+i), packets)
		var mec []string
		sit.apply(&sc, &mec)
		sc.PcapNG, sc.Nano = i%3 == 0, i%2 == 0
		var sb, rb bytes.Buffer
		if _, err := sc.Write(&sb, &rb); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, pair{sit.name, sb.Bytes(), rb.Bytes(), mec, []time.Duration{10 * time.Millisecond, 0}})
	}
	s, r := twinsAcrossBoundaries()
	pairs = append(pairs, pair{"bit-identical-across-boundaries", s, r, nil, []time.Duration{time.Millisecond, 0}})

	runs := 0
	for _, p := range pairs {
		snd, rcv := capturePair(t, p.s, p.r)
		cl := mecClassifier(t, p.mec)
		for _, c := range []struct{ width, maxDelay time.Duration }{{p.widths[0], 20 * time.Millisecond}, {p.widths[1], 0}} {
			cfg := analyze.Config{Interval: c.width, UseLDA: true, LDA: synopsis.DefaultLDAConfig(), Classifier: cl, Truth: true,
				MaxDelay: c.maxDelay, Extra: []analyze.SynopsisFactory{
					analyze.RDAFactory{Config: synopsis.DefaultRDAConfig()},
					analyze.LDSFactory{Auto: true, Classifier: cl},
					analyze.SampleFactory{Config: synopsis.SampleConfig{Level: 1, Capacity: 512}},
				}}
			name := fmt.Sprintf("%s/interval=%v/max-delay=%v", p.name, c.width, c.maxDelay)
			one, err := analyze.StreamReport(snd, rcv, cfg, 1)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for shards := 2; shards <= maxShards; shards++ {
				got, err := analyze.StreamReport(snd, rcv, cfg, shards)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				runs++
				if got != one {
					t.Errorf("%s: %d shards report differently from 1:\n--- %d shards\n%s\n--- 1\n%s", name, shards, shards,
						analyze.FirstDiff(got, one), analyze.FirstDiff(one, got))
				}
			}
		}
	}
	t.Logf("%d sharded runs, each the same as on one goroutine", runs)
}

// twinsAcrossBoundaries is a capture pair of unique packets every 10 µs
// for 60 ms, and around each 1 ms boundary two bit-identical packets 1 µs
// apart, one of which is lost every other boundary; the receiver's
// capture starts 5 ms late and stops 5 ms early, so that twins fall
// across the overlap's edges too.
func twinsAcrossBoundaries() (s, r []byte) {
	var sb, rb bytes.Buffer
	sw, rw := pcapgo.NewWriterNanos(&sb), pcapgo.NewWriterNanos(&rb)
	sw.WriteFileHeader(65535, layers.LinkTypeEthernet)
	rw.WriteFileHeader(65535, layers.LinkTypeEthernet)
	const t0 = int64(1_700_000_001_000_000_000)
	const delay = 30_000
	type pkt struct {
		ts int64
		f  []byte
	}
	var snd, rcv []pkt
	add := func(ts int64, f []byte, lost bool) {
		snd = append(snd, pkt{ts, f})
		if !lost && ts+delay >= t0+5_000_000 && ts+delay < t0+55_000_000 {
			rcv = append(rcv, pkt{ts + delay, f})
		}
	}
	for i := 0; i < 6000; i++ {
		add(t0+int64(i)*10_000+3_000, twinFrame(uint16(i+1), byte(i)), false)
	}
	for b := 1; b < 60; b++ {
		twin := twinFrame(0, byte(b))
		at := t0 + int64(b)*1_000_000
		add(at-500, twin, false)
		add(at+500, twin, b%2 == 0)
	}
	for _, l := range [][]pkt{snd, rcv} {
		sort.SliceStable(l, func(i, j int) bool { return l[i].ts < l[j].ts })
	}
	write := func(w *pcapgo.Writer, ps []pkt) {
		for _, p := range ps {
			w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, p.ts), CaptureLength: len(p.f), Length: len(p.f)}, p.f)
		}
	}
	write(sw, snd)
	write(rw, rcv)
	return sb.Bytes(), rb.Bytes()
}
