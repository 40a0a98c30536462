package analyze_test

import (
	"bytes"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestIdenticalPairAcrossOverlapEdge: with --interval 0, two bit-identical
// packets are sent, one before the receiver's capture could see it (left
// out: outside the captures' common range) and one inside; the receiver
// captured one copy. First in first out pairs that copy with the packet
// left out, so the one inside looks lost although nothing was: which copy
// arrived cannot be told from the captures. Every line is invalid and says
// why; none reports the loss valid. A lone packet lost inside the range
// (the control) is reported valid with lost 1.
func TestIdenticalPairAcrossOverlapEdge(t *testing.T) {
	frame := twinFrame
	for _, twin := range []bool{true, false} {
		type pkt struct {
			ts int64
			f  []byte
		}
		const t0 = int64(1_700_000_000_500_000_000)
		const delay = 20_000
		rstart := t0 + 1_000_000 // the receiver's capture starts 1 ms after the sender's
		var snd, rcv []pkt
		for i := 0; i < 600; i++ { // unique packets every 10 µs
			ts := t0 + int64(i)*10_000
			f := frame(uint16(i+1), byte(i))
			snd = append(snd, pkt{ts, f})
			if ts+delay >= rstart && (twin || i != 300) {
				rcv = append(rcv, pkt{ts + delay, f})
			}
		}
		if twin {
			tw := frame(0, 0xee)
			a, b := rstart-delay-300_000, rstart+2_000_000 // before the range, inside it
			snd = append(snd, pkt{a, tw}, pkt{b, tw})
			rcv = append(rcv, pkt{b + delay, tw}) // the copy inside arrived
		}
		for _, l := range [][]pkt{snd, rcv} {
			sort.Slice(l, func(i, j int) bool { return l[i].ts < l[j].ts })
		}
		var sb, rb bytes.Buffer
		sw, rw := pcapgo.NewWriterNanos(&sb), pcapgo.NewWriterNanos(&rb)
		sw.WriteFileHeader(65535, layers.LinkTypeEthernet)
		rw.WriteFileHeader(65535, layers.LinkTypeEthernet)
		for _, p := range snd {
			sw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, p.ts), CaptureLength: len(p.f), Length: len(p.f)}, p.f)
		}
		for _, p := range rcv {
			rw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, p.ts), CaptureLength: len(p.f), Length: len(p.f)}, p.f)
		}
		s, _ := analyze.NewCapture("s", bytes.NewReader(sb.Bytes()))
		r, _ := analyze.NewCapture("r", bytes.NewReader(rb.Bytes()))
		var lines []*report.Interval
		st, err := analyze.Run(s, r, analyze.Config{Interval: 0, UseLDA: true, LDA: synopsis.DefaultLDAConfig(), Extra: []analyze.SynopsisFactory{analyze.RDAFactory{Config: synopsis.DefaultRDAConfig()}}},
			func(l *report.Interval) { lines = append(lines, l) })
		if err != nil {
			t.Fatal(err)
		}
		if st.TrimmedSenderBefore == 0 {
			t.Fatalf("nothing left out before the common range: the test shows nothing")
		}
		if len(lines) == 0 {
			t.Fatal("no lines")
		}
		for _, l := range lines {
			if twin {
				if l.LossValid || !strings.Contains(l.Reason, "overlap") {
					t.Errorf("twin across the overlap edge: %s line valid %v loss valid %v lost %d reason %q; want invalid naming the edge",
						l.Synopsis, l.Valid, l.LossValid, l.Lost, l.Reason)
				}
			} else if !l.Valid || l.Lost != 1 {
				t.Errorf("control: %s line valid %v lost %d (%s); want valid, lost 1", l.Synopsis, l.Valid, l.Lost, l.Reason)
			}
		}
	}
}
