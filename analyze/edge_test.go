package analyze_test

import (
	"bytes"
	"encoding/binary"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestIdenticalPairAcrossOverlapEdge: with --interval 0, two bit-identical
// packets are sent, one before the receiver's capture could see it (left
// out: outside the captures' common range) and one inside; the receiver
// captured one copy. First in first out pairs that copy with the packet
// left out, so the one inside looks lost although nothing was: which copy
// arrived cannot be told from the captures. Every line of every synopsis
// (those of --synopsis all: LDA, RDA, the flow's LDS line, the sample) is
// invalid and says why; none reports the loss valid. A lone packet lost
// inside the range (the control) is reported valid with lost 1 by the
// LDA, the RDA and the flow's LDS line.
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
		cl, _ := classifier.NewClassifier(nil)
		lds, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: 10, CellsPerFlow: 1, MaxFlows: 40})
		if err != nil {
			t.Fatal(err)
		}
		var lines []*report.Interval
		st, err := analyze.Run(s, r, analyze.Config{Interval: 0, UseLDA: true, LDA: synopsis.DefaultLDAConfig(), Extra: []analyze.SynopsisFactory{
			analyze.RDAFactory{Config: synopsis.DefaultRDAConfig()}, analyze.LDSFactory{Config: lds, Classifier: cl},
			analyze.SampleFactory{Config: synopsis.SampleConfig{Level: 2, Capacity: 1024}}}},
			func(l *report.Interval) { lines = append(lines, l) })
		if err != nil {
			t.Fatal(err)
		}
		if st.TrimmedSenderBefore == 0 {
			t.Fatalf("nothing left out before the common range: the test shows nothing")
		}
		kinds := map[string]int{}
		for _, l := range lines {
			kinds[l.Synopsis]++
			if twin {
				if l.Valid || l.LossValid || !strings.Contains(l.Reason, "overlap") {
					t.Errorf("twin across the overlap edge: %s line valid %v loss valid %v lost %d reason %q; want invalid naming the edge",
						l.Synopsis, l.Valid, l.LossValid, l.Lost, l.Reason)
				}
			} else if l.Synopsis != "sample" && (!l.Valid || l.Lost != 1) {
				t.Errorf("control: %s line valid %v lost %d (%s); want valid, lost 1", l.Synopsis, l.Valid, l.Lost, l.Reason)
			}
		}
		for _, k := range []string{"lda", "rda", "lds", "sample"} {
			if kinds[k] != 1 {
				t.Errorf("twin %v: %d %s lines, want 1 (%v)", twin, kinds[k], k, kinds)
			}
		}
	}
}

// tunnelFrame wraps an inner Ethernet frame (IPv4 or IPv6) in enc ("gre",
// "vxlan", "geneve", "mpls") as a tunnel endpoint writes it: outer IPv4
// identification always 0, the outer UDP source port the same for the
// whole inner flow. Written byte by byte, apart from the parser.
func tunnelFrame(enc string, inner []byte) []byte {
	eth := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00}
	innerIP := inner[14:]
	innerET := binary.BigEndian.Uint16(inner[12:])
	var proto byte
	var tun []byte
	switch enc {
	case "mpls":
		eth[12], eth[13] = 0x88, 0x47
		return append(append(eth, 0, 1, 0, 64, 0, 2, 1, 64), innerIP...)
	case "gre":
		proto = 47
		tun = append([]byte{0x20, 0, byte(innerET >> 8), byte(innerET), 0, 0, 0, 42}, innerIP...)
	case "vxlan", "geneve":
		proto = 17
		port, hdr := uint16(4789), []byte{0x08, 0, 0, 0, 0, 0, 42, 0}
		if enc == "geneve" {
			port, hdr = 6081, []byte{0, 0, 0x65, 0x58, 0, 0, 42, 0}
		}
		tun = binary.BigEndian.AppendUint16(nil, 50123)
		tun = binary.BigEndian.AppendUint16(tun, port)
		tun = binary.BigEndian.AppendUint16(tun, uint16(8+len(hdr)+len(inner)))
		tun = append(append(append(tun, 0, 0), hdr...), inner...)
	}
	ip := []byte{0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0, 172, 16, 0, 1, 172, 16, 0, 2}
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(tun)))
	return append(append(eth, ip...), tun...)
}

// innerV6 is an IPv6/UDP packet of one flow (no identification field),
// told apart from the flow's other packets only by its payload's i.
func innerV6(i int) []byte {
	f := []byte{2, 0, 0, 0, 0, 4, 2, 0, 0, 0, 0, 3, 0x86, 0xdd}
	ip := make([]byte, 40+8+32)
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], 8+32)
	ip[6], ip[7] = 17, 64
	ip[8], ip[23], ip[24], ip[39] = 0x20, 1, 0x20, 2
	binary.BigEndian.PutUint16(ip[40:], 1000)
	binary.BigEndian.PutUint16(ip[42:], 2000)
	binary.BigEndian.PutUint16(ip[44:], 8+32)
	binary.BigEndian.PutUint32(ip[40+8+20:], uint32(i)) // past the first 20 bytes of the payload
	return append(f, ip...)
}

// TestTunnelAcrossOverlapEdge: one inner IPv6 flow whose packets differ
// only deep in their payload, plain and in each tunnel with outer IP ID
// 0 (where the outer packet's identity alone is the same for every
// packet), captured with the receiver starting 1 ms late and one packet
// lost inside the common range, analysed as one interval: the tunneled
// captures share no more identities than the plain ones (none), and the
// LDA, RDA and LDS lines are valid with the loss exact (1). (With the
// outer identity alone every tunneled packet shared one identity.)
func TestTunnelAcrossOverlapEdge(t *testing.T) {
	for _, enc := range []string{"plain", "gre", "vxlan", "geneve", "mpls"} {
		const t0 = int64(1_700_000_000_500_000_000)
		const delay = 20_000
		rstart := t0 + 1_000_000
		var sb, rb bytes.Buffer
		sw, rw := pcapgo.NewWriterNanos(&sb), pcapgo.NewWriterNanos(&rb)
		sw.WriteFileHeader(65535, layers.LinkTypeEthernet)
		rw.WriteFileHeader(65535, layers.LinkTypeEthernet)
		for i := 0; i < 600; i++ { // every 10 µs
			ts := t0 + int64(i)*10_000
			f := innerV6(i)
			if enc != "plain" {
				f = tunnelFrame(enc, f)
			}
			sw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, ts), CaptureLength: len(f), Length: len(f)}, f)
			if ts+delay >= rstart && i != 300 {
				rw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, ts+delay), CaptureLength: len(f), Length: len(f)}, f)
			}
		}
		s, _ := analyze.NewCapture("s", bytes.NewReader(sb.Bytes()))
		r, _ := analyze.NewCapture("r", bytes.NewReader(rb.Bytes()))
		cl, _ := classifier.NewClassifier(nil)
		lds, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: 10, CellsPerFlow: 1, MaxFlows: 40})
		if err != nil {
			t.Fatal(err)
		}
		var lines []*report.Interval
		st, err := analyze.Run(s, r, analyze.Config{Interval: 0, UseLDA: true, LDA: synopsis.DefaultLDAConfig(), Extra: []analyze.SynopsisFactory{
			analyze.RDAFactory{Config: synopsis.DefaultRDAConfig()}, analyze.LDSFactory{Config: lds, Classifier: cl}}},
			func(l *report.Interval) { lines = append(lines, l) })
		if err != nil {
			t.Fatal(err)
		}
		if st.TrimmedSenderBefore == 0 {
			t.Errorf("%s: nothing left out before the common range", enc)
		}
		if st.SenderAmbiguous != 0 || st.ReceiverAmbiguous != 0 {
			t.Errorf("%s: identities seen more than once: %d sent, %d received; want none, as without the tunnel", enc, st.SenderAmbiguous, st.ReceiverAmbiguous)
		}
		want := 3 // LDA, RDA and the LDS line of the flow (the outer packet's)
		if enc == "mpls" {
			want = 2 // no IP header outside: no flow
		}
		if len(lines) != want {
			t.Errorf("%s: %d lines, want %d", enc, len(lines), want)
		}
		for _, l := range lines {
			if !l.Valid || l.Lost != 1 {
				t.Errorf("%s: %s line valid %v lost %d (%s); want valid, lost 1", enc, l.Synopsis, l.Valid, l.Lost, l.Reason)
			}
		}
	}
}
