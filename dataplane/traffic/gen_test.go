package traffic_test

import (
	"bytes"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/ldafwd/ldafwd/classifier"
)

// TestGenFrames decodes generated frames with gopacket, re-serialises the
// decoded layers with gopacket computing lengths and checksums, and expects
// the very same bytes: headers, lengths and checksums are all valid.
func TestGenFrames(t *testing.T) {
	for _, size := range []int{traffic.MinFrameLen, 99, 128, 1514} {
		g := traffic.MustGen(traffic.GenConfig{Flows: 8, Size: size})
		buf := make([]byte, size)
		stacks := map[string]int{}
		for id := range uint64(64) {
			f := g.Frame(buf, id)
			if len(f) != size {
				t.Fatalf("frame length %d, want %d", len(f), size)
			}
			pkt := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
			if el := pkt.ErrorLayer(); el != nil {
				t.Fatalf("size %d id %d: %v", size, id, el.Error())
			}
			var ls []gopacket.SerializableLayer
			name := ""
			for _, l := range pkt.Layers() {
				name += l.LayerType().String() + "/"
				if s, ok := l.(gopacket.SerializableLayer); ok {
					ls = append(ls, s)
				}
			}
			stacks[name]++
			if tcp, ok := pkt.TransportLayer().(*layers.TCP); ok {
				tcp.SetNetworkLayerForChecksum(pkt.NetworkLayer())
			}
			if udp, ok := pkt.TransportLayer().(*layers.UDP); ok {
				udp.SetNetworkLayerForChecksum(pkt.NetworkLayer())
			}
			sb := gopacket.NewSerializeBuffer()
			if err := gopacket.SerializeLayers(sb, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sb.Bytes(), f) {
				t.Fatalf("size %d id %d (%s): gopacket re-serialises differently:\n% x\n% x", size, id, name, f, sb.Bytes())
			}
			if got, ok := traffic.FrameID(f); !ok || got != id {
				t.Fatalf("traffic.FrameID = %d, %v; want %d", got, ok, id)
			}
		}
		if len(stacks) != 4 {
			t.Errorf("size %d: stacks %v, want all four", size, stacks)
		}
	}
}

// TestGenIdentity: the classifier sees a distinct packet identity per ID
// and the configured number of flows — what the synopses need.
func TestGenIdentity(t *testing.T) {
	g := traffic.MustGen(traffic.GenConfig{Flows: 10})
	buf := make([]byte, g.Size())
	hashes := map[uint64]bool{}
	flows := map[uint64]bool{}
	var m classifier.Meta
	for id := range uint64(10000) {
		classifier.Parse(g.Frame(buf, id), &m)
		if m.Flags&(classifier.FlagMalformed|classifier.FlagTruncated) != 0 {
			t.Fatalf("id %d: classifier flags %b", id, m.Flags)
		}
		hashes[m.Hash] = true
		flows[m.FlowHash] = true
	}
	if len(hashes) != 10000 || len(flows) != 10 {
		t.Errorf("%d distinct identities (want 10000), %d flows (want 10)", len(hashes), len(flows))
	}
}

func TestGenConfig(t *testing.T) {
	for _, c := range []traffic.GenConfig{{Flows: -1}, {Size: traffic.MinFrameLen - 1}, {Size: 9001}, {Mix: []traffic.Stack{7}}} {
		if _, err := traffic.NewGen(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
	g := traffic.MustGen(traffic.GenConfig{})
	if g.Frame(make([]byte, 10), 1) != nil {
		t.Error("Frame wrote into a too-short buffer")
	}
	buf := make([]byte, g.Size())
	if a := testing.AllocsPerRun(100, func() { g.Frame(buf, 7) }); a != 0 {
		t.Errorf("Frame: %v allocations", a)
	}
}
