package analyze_test

import (
	"bytes"
	"encoding/binary"
	"sort"
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

// fragments is an IPv4 UDP datagram from 10.0.0.src:sport to
// 10.0.0.2:53 with identification id, cut into n fragments of 24
// payload bytes (the first carrying the UDP header): Ethernet frames.
func fragments(src byte, sport, id uint16, n int) [][]byte {
	body := make([]byte, 8+24*n-8) // UDP header + payload: n × 24 bytes
	binary.BigEndian.PutUint16(body[0:], sport)
	binary.BigEndian.PutUint16(body[2:], 53)
	binary.BigEndian.PutUint16(body[4:], uint16(len(body)))
	for i := 8; i < len(body); i++ {
		body[i] = byte(int(id) + i)
	}
	var out [][]byte
	for k := 0; k < n; k++ {
		part := body[24*k : 24*(k+1)]
		f := make([]byte, 14+20, 14+20+len(part))
		f[5], f[11] = 2, 1
		binary.BigEndian.PutUint16(f[12:], 0x0800)
		ip := f[14:]
		ip[0], ip[8], ip[9] = 0x45, 64, 17
		binary.BigEndian.PutUint16(ip[2:], uint16(20+len(part)))
		binary.BigEndian.PutUint16(ip[4:], id)
		fo := uint16(24 * k / 8)
		if k < n-1 {
			fo |= 0x2000 // more fragments
		}
		binary.BigEndian.PutUint16(ip[6:], fo)
		copy(ip[12:], []byte{10, 0, 0, src, 10, 0, 0, 2})
		out = append(out, append(f, part...))
	}
	return out
}

// TestFragmentedFlowLoss: a flow whose datagrams are each cut into three
// fragments loses one later fragment. The later fragments are counted in
// the hosts' ports-0 flow, which reports the loss; the flow's own line
// counts its first fragments, none of them lost, and is therefore
// invalid for loss (ip_fragments) rather than valid with lost 0. A flow
// between other hosts, unfragmented and lossless, stays valid.
func TestFragmentedFlowLoss(t *testing.T) {
	var sb, rb bytes.Buffer
	sw, rw := pcapgo.NewWriterNanos(&sb), pcapgo.NewWriterNanos(&rb)
	sw.WriteFileHeader(65535, layers.LinkTypeEthernet)
	rw.WriteFileHeader(65535, layers.LinkTypeEthernet)
	type pkt struct {
		ts int64
		f  []byte
	}
	var snd, rcv []pkt
	const t0 = int64(1_700_000_000_100_000_000)
	ts := t0
	for i := 0; i < 300; i++ {
		for k, f := range fragments(1, 1000, uint16(i+1), 3) {
			ts += 10_000
			snd = append(snd, pkt{ts, f})
			if i == 150 && k == 2 {
				continue // a later fragment lost
			}
			rcv = append(rcv, pkt{ts + 30_000, f})
		}
		ts += 10_000
		f := fragments(3, 2000, uint16(i+1), 1)[0] // a whole datagram of another pair
		snd = append(snd, pkt{ts, f})
		rcv = append(rcv, pkt{ts + 30_000, f})
	}
	sort.Slice(rcv, func(i, j int) bool { return rcv[i].ts < rcv[j].ts })
	for _, p := range snd {
		sw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, p.ts), CaptureLength: len(p.f), Length: len(p.f)}, p.f)
	}
	for _, p := range rcv {
		rw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, p.ts), CaptureLength: len(p.f), Length: len(p.f)}, p.f)
	}
	cl, _ := classifier.NewClassifier(nil)
	cfg, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: 100, CellsPerFlow: 1, MaxFlows: 400})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := analyze.NewCapture("s", bytes.NewReader(sb.Bytes()))
	r, _ := analyze.NewCapture("r", bytes.NewReader(rb.Bytes()))
	lines := map[string]*report.Interval{}
	if _, err := analyze.Run(s, r, analyze.Config{Interval: 0, Extra: []analyze.SynopsisFactory{analyze.LDSFactory{Config: cfg, Classifier: cl}}},
		func(l *report.Interval) {
			if l.Synopsis == "lds" {
				lines[l.Flow] = l
			}
		}); err != nil {
		t.Fatal(err)
	}
	flow, rest, other := lines["17 10.0.0.1:1000>10.0.0.2:53"], lines["17 10.0.0.1:0>10.0.0.2:0"], lines["17 10.0.0.3:2000>10.0.0.2:53"]
	if flow == nil || rest == nil || other == nil {
		t.Fatalf("flow lines missing: %v", lines)
	}
	if rest.Lost != 1 || !rest.LossValid {
		t.Errorf("fragments flow: lost %d loss valid %v (%s), want 1 and valid", rest.Lost, rest.LossValid, rest.Reason)
	}
	if flow.LossValid || flow.ReasonCode != "ip_fragments" {
		t.Errorf("fragmented flow: sent %d lost %d loss valid %v code %q (%s); want invalid for loss, ip_fragments",
			flow.Sent, flow.Lost, flow.LossValid, flow.ReasonCode, flow.Reason)
	}
	if flow.Sent != 300 {
		t.Errorf("fragmented flow counts %d packets, want its 300 first fragments", flow.Sent)
	}
	if !other.Valid || other.Lost != 0 {
		t.Errorf("unfragmented flow: valid %v lost %d (%s)", other.Valid, other.Lost, other.Reason)
	}
	// Each line says what it counts: the flow its whole packets and first
	// fragments, naming where the rest are; the fragments flow the later
	// fragments; the other pair, with no fragments flow, neither.
	if flow.Extra["fragments"] != "whole_and_first" || flow.Extra["later_fragments_flow"] != "17 10.0.0.1:0>10.0.0.2:0" {
		t.Errorf("fragmented flow's extra: fragments %v, later_fragments_flow %v", flow.Extra["fragments"], flow.Extra["later_fragments_flow"])
	}
	if rest.Extra["fragments"] != "later" {
		t.Errorf("fragments flow's extra: fragments %v, want later", rest.Extra["fragments"])
	}
	if _, ok := other.Extra["fragments"]; ok {
		t.Errorf("unfragmented flow says fragments %v", other.Extra["fragments"])
	}
}
