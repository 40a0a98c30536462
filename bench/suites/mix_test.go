package suites

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// TestGenMix checks that the suite's capture holds what it claims:
// decoded back from the pcap file (by gopacket, not by the generator's
// counters), every frame is valid Ethernet/[802.1Q]/IPv4|IPv6/TCP|UDP with
// correct checksums, the flows, families, protocols and VLAN share are
// the configured ones, every flow appears, and the sizes follow IMIX.
func TestGenMix(t *testing.T) {
	c := defaultMix
	frames, st, err := genMix(c)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mix.pcap")
	if err := writePcap(path, frames); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		v6, udp    bool
		src, dst   string
		sport, dpt uint16
	}
	flows := map[key]bool{}
	vlanFlows := map[key]bool{}
	var n, v4, v6, tcp, udp, vlan, small, large int
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.DecodeOptions{})
		if e := p.ErrorLayer(); e != nil {
			t.Fatalf("frame %d: %v", n, e.Error())
		}
		var k key
		switch ip := p.NetworkLayer().(type) {
		case *layers.IPv4:
			v4++
			k.src, k.dst = ip.SrcIP.String(), ip.DstIP.String()
			if int(ip.Length)+14 != len(data) && p.Layer(layers.LayerTypeDot1Q) == nil || int(ip.Length)+18 != len(data) && p.Layer(layers.LayerTypeDot1Q) != nil {
				t.Fatalf("frame %d: IPv4 length %d in a %d-byte frame", n, ip.Length, len(data))
			}
			csum := ip.Checksum
			ip.Checksum = 0
			if b := gopacket.NewSerializeBuffer(); ip.SerializeTo(b, gopacket.SerializeOptions{ComputeChecksums: true}) != nil || ip.Checksum != csum {
				t.Fatalf("frame %d: IPv4 header checksum %#x, want %#x", n, csum, ip.Checksum)
			}
		case *layers.IPv6:
			v6++
			k.v6, k.src, k.dst = true, ip.SrcIP.String(), ip.DstIP.String()
		default:
			t.Fatalf("frame %d: no IP layer", n)
		}
		switch l4 := p.TransportLayer().(type) {
		case *layers.TCP:
			tcp++
			k.sport, k.dpt = uint16(l4.SrcPort), uint16(l4.DstPort)
		case *layers.UDP:
			udp++
			k.udp, k.sport, k.dpt = true, uint16(l4.SrcPort), uint16(l4.DstPort)
		default:
			t.Fatalf("frame %d: neither TCP nor UDP", n)
		}
		flows[k] = true
		if p.Layer(layers.LayerTypeDot1Q) != nil {
			vlan++
			vlanFlows[k] = true
		}
		switch {
		case len(data) <= 78:
			small++
		case len(data) >= 1514:
			large++
		}
	}
	if n != c.Frames || st.Frames != n {
		t.Fatalf("%d frames in the file, stats say %d, want %d", n, st.Frames, c.Frames)
	}
	if len(flows) != c.Flows {
		t.Errorf("%d distinct flows, want %d", len(flows), c.Flows)
	}
	if v4 != st.IPv4 || v6 != st.IPv6 || tcp != st.TCP || udp != st.UDP || vlan != st.VLANFrames || len(vlanFlows) != st.VLANFlows {
		t.Errorf("decoded v4 %d v6 %d tcp %d udp %d vlan %d (%d flows); stats %+v", v4, v6, tcp, udp, vlan, len(vlanFlows), st)
	}
	// Per flow the shares are exact; per frame they follow the flows'
	// Zipf weights, so only roughly.
	v6Flows, udpFlows := 0, 0
	for k := range flows {
		if k.v6 {
			v6Flows++
		}
		if k.udp {
			udpFlows++
		}
	}
	want := func(share float64) int { return int(share*float64(c.Flows) + 0.5) }
	if v6Flows != want(c.IPv6Share) || udpFlows != want(c.UDPShare) || len(vlanFlows) != want(c.VLANShare) {
		t.Errorf("flows: %d IPv6, %d UDP, %d tagged; want %d, %d, %d", v6Flows, udpFlows, len(vlanFlows), want(c.IPv6Share), want(c.UDPShare), want(c.VLANShare))
	}
	if v4 == 0 || v6 == 0 || tcp == 0 || udp == 0 || vlan == 0 || vlan == n {
		t.Errorf("a kind is missing: v4 %d v6 %d tcp %d udp %d vlan %d of %d", v4, v6, tcp, udp, vlan, n)
	}
	// IMIX 7:4:1 within a few standard deviations.
	if s, l := float64(small)/float64(n), float64(large)/float64(n); math.Abs(s-7.0/12) > 0.04 || math.Abs(l-1.0/12) > 0.02 {
		t.Errorf("sizes: %.3f small (want 7/12), %.3f large (want 1/12)", s, l)
	}
	if st.Small+st.Medium+st.Large != n || st.Small != small || st.Large != large {
		t.Errorf("size classes %d/%d/%d, decoded %d small %d large", st.Small, st.Medium, st.Large, small, large)
	}
	if m := st.MeanWire(); m < 340+20 || m > 390+20 {
		t.Errorf("mean wire size %.1f B, want about IMIX's 362 + 20", m)
	}
}

// TestFastPathMix checks the second capture: the same flows, no tag, no
// frame shorter than the measuring fast path takes.
func TestFastPathMix(t *testing.T) {
	frames, st, err := genMix(fastPathMix(defaultMix))
	if err != nil {
		t.Fatal(err)
	}
	if st.VLANFrames != 0 || st.VLANFlows != 0 || st.Flows != defaultMix.Flows || len(frames) != defaultMix.Frames {
		t.Fatalf("stats %+v", st)
	}
	for i, f := range frames {
		if len(f) < 86 {
			t.Fatalf("frame %d is %d bytes", i, len(f))
		}
		if et := uint16(f[12])<<8 | uint16(f[13]); et != 0x0800 && et != 0x86DD {
			t.Fatalf("frame %d: EtherType %#x", i, et)
		}
	}
}

// TestSmallMix checks the 64-byte capture: every frame 60 bytes captured
// (64 on the wire) or as short as its headers allow.
func TestSmallMix(t *testing.T) {
	frames, st, err := genMix(smallMix(defaultMix))
	if err != nil {
		t.Fatal(err)
	}
	if st.Small != st.Frames || st.Flows != defaultMix.Flows {
		t.Fatalf("stats %+v", st)
	}
	for i, f := range frames {
		if len(f) != 60 && len(f) > 78 {
			t.Fatalf("frame %d is %d bytes", i, len(f))
		}
	}
}
