package analyze

import (
	"bytes"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// BenchmarkStream is the streaming analysis (both passes) of a capture
// pair of 300 000 packets a side at 100 000 per second, 1 % loss, at
// `ldafwd analyze`'s default flags (LDA, 1 s intervals, a 1 s window),
// read from memory. GOMAXPROCS sets the shards, so
//
//	go test -run '^$' -bench BenchmarkStream -cpu 1,2 -count 5 ./analyze/
//
// compares one core with two.
func BenchmarkStream(b *testing.B) {
	const packets = 300_000
	var sb, rb bytes.Buffer
	if _, err := analyzetest.Write(analyzetest.Config{Packets: packets, Rate: 100_000, Start: time.Unix(1_700_000_000, 0),
		MeanDelay: 60 * time.Microsecond, Loss: 0.01, Seed: 1, NanoPcap: true}, &sb, &rb); err != nil {
		b.Fatal(err)
	}
	cfg := Config{Interval: time.Second, UseLDA: true, LDA: synopsis.DefaultLDAConfig()}
	keepFlows, err := cfg.defaults()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len() + rb.Len()))
	for b.Loop() {
		s, r := memPair(b, sb.Bytes(), rb.Bytes())
		var prog Progress
		if _, err := runStream(s, r, cfg, keepFlows, func(*report.Interval) {}, &prog); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*packets), "ns/packet")
}

// memPair opens a sender's and a receiver's capture held in memory.
func memPair(tb testing.TB, snd, rcv []byte) (s, r *Capture) {
	tb.Helper()
	s, err := NewCapture("s.pcap", bytes.NewReader(snd))
	if err != nil {
		tb.Fatal(err)
	}
	if r, err = NewCapture("r.pcap", bytes.NewReader(rcv)); err != nil {
		tb.Fatal(err)
	}
	return s, r
}
