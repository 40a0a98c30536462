package analyze_test

import (
	"bytes"
	"sort"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/pcapgo"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestSegmentsSameReport: the streaming analysis cut into time segments,
// each read from the middle of the files on a goroutine of its own,
// reports what one goroutine reading them whole reports, byte for byte,
// and the statistics; on classic pcap and pcapng files, left to the
// captures' length (four cores asked for) and forced to 2–4 cuts. The
// cuts did run: the count of passes run in segments grows by two (the
// survey and the report) each time.
func TestSegmentsSameReport(t *testing.T) {
	packets := 60_000
	if testing.Short() {
		packets = 30_000
	}
	for _, ng := range []bool{false, true} {
		sc := baseScenario(77, packets)
		sc.Rate, sc.Loss, sc.Reorder, sc.PcapNG, sc.Nano = 10_000, 0.01, 0.01, ng, true
		var sb, rb bytes.Buffer
		if _, err := sc.Write(&sb, &rb); err != nil {
			t.Fatal(err)
		}
		sp, rp := writeCaptures(t, sb.Bytes(), rb.Bytes())
		snd, rcv := openCaptures(t, sp, rp)
		cl := mecClassifier(t, nil)
		cfg := analyze.Config{Interval: 100 * time.Millisecond, UseLDA: true, LDA: synopsis.DefaultLDAConfig(), Classifier: cl,
			Truth: true, MaxDelay: 20 * time.Millisecond, Split: 1}
		want, err := analyze.StreamReport(snd, rcv, cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, split := range []int{0, 2, 3, 4} {
			cfg.Split = split
			before := analyze.SegmentRuns()
			got, err := analyze.StreamReport(snd, rcv, cfg, 4)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("pcapng %v, split %d: the report differs:\n--- one goroutine\n%s\n--- segments\n%s", ng, split, analyze.FirstDiff(want, got), analyze.FirstDiff(got, want))
			}
			if n := analyze.SegmentRuns() - before; n != 2 {
				t.Errorf("pcapng %v, split %d: %d passes ran in segments, want 2", ng, split, n)
			}
		}
	}
}

// TestSegmentsChainedTwins: bit-identical frames every 0.6 windows all
// through the captures, two of them a period apart, chain their groups:
// which copies share a group depends on the first copy ever seen, so a
// segment reading from the middle groups one of the two otherwise than
// one reader from the start. The zone digests tell, the segments do not
// join, and each pass runs on one goroutine: the same report, no pass
// run in segments. The same traffic without the chains is cut.
func TestSegmentsChainedTwins(t *testing.T) {
	const w = 20 * time.Millisecond
	for _, chained := range []bool{false, true} {
		s, r := chainedTwins(3*time.Second, w, chained)
		snd, rcv := capturePair(t, s, r)
		cfg := analyze.Config{Interval: 100 * time.Millisecond, UseLDA: true, LDA: synopsis.DefaultLDAConfig(),
			Classifier: mecClassifier(t, nil), Truth: true, MaxDelay: w, Split: 1}
		want, err := analyze.StreamReport(snd, rcv, cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Split = 3
		before := analyze.SegmentRuns()
		got, err := analyze.StreamReport(snd, rcv, cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("chained %v: the report differs:\n--- one goroutine\n%s\n--- segments\n%s", chained, analyze.FirstDiff(want, got), analyze.FirstDiff(got, want))
		}
		n := analyze.SegmentRuns() - before
		if chained && n != 0 {
			t.Errorf("chained twins: %d passes ran in segments, want none (the segments group the chains otherwise)", n)
		}
		if !chained && n != 2 {
			t.Errorf("no chains: %d passes ran in segments, want 2", n)
		}
	}
}

// chainedTwins is a sender and receiver capture of d of distinct
// packets, one every 100 µs, 30 µs on the way, with (chained) two
// bit-identical frames sent every 0.6 w, the second a period after the
// first.
func chainedTwins(d, w time.Duration, chained bool) (s, r []byte) {
	var sb, rb bytes.Buffer
	sw, rw := pcapgo.NewWriterNanos(&sb), pcapgo.NewWriterNanos(&rb)
	sw.WriteFileHeader(65535, 1)
	rw.WriteFileHeader(65535, 1)
	const t0, delay = int64(1_700_000_001_000_000_000), int64(30_000)
	type pkt struct {
		ts int64
		f  []byte
	}
	var snd []pkt
	for i := 0; int64(i)*100_000 < d.Nanoseconds(); i++ {
		snd = append(snd, pkt{t0 + int64(i)*100_000 + 7_000, twinFrame(uint16(i), byte(i>>16))})
	}
	if chained {
		period := w.Nanoseconds() * 6 / 10
		for k := int64(0); k*period < d.Nanoseconds(); k++ {
			snd = append(snd, pkt{t0 + k*period, twinFrame(0, 200)}, pkt{t0 + (k+1)*period, twinFrame(0, 201)})
		}
	}
	sort.SliceStable(snd, func(i, j int) bool { return snd[i].ts < snd[j].ts })
	for _, p := range snd {
		sw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, p.ts), CaptureLength: len(p.f), Length: len(p.f)}, p.f)
		rw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, p.ts+delay), CaptureLength: len(p.f), Length: len(p.f)}, p.f)
	}
	return sb.Bytes(), rb.Bytes()
}
