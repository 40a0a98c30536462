package suites

// The realistic traffic of the forward-dpdk-pcap suite: a capture written
// at run time (none is shipped) of IPv4 and IPv6, TCP and UDP flows, some
// behind an 802.1Q tag, with IMIX frame sizes and a heavy-tailed number
// of frames per flow, which DPDK's net_pcap replays in a loop.

import (
	"fmt"
	"math/rand"
	"net"
	"os"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// mixConfig describes the generated traffic.
type mixConfig struct {
	Frames    int     // frames in the capture
	Flows     int     // distinct 5-tuples, ≤ Frames: every flow has at least one frame
	IPv6Share float64 // share of the flows that are IPv6
	UDPShare  float64 // share of the flows that are UDP (the rest TCP)
	VLANShare float64 // share of the flows whose frames carry an 802.1Q tag
	MinLen    int     // captured frames are at least this long (0: only their headers bound them)
	Small     bool    // every frame of IMIX's smallest class (64 bytes on the wire, or its headers)
	Seed      int64
}

// defaultMix is what the suite replays: 4096 frames (the capture is loaded
// into the port's mbuf pool, which `ldafwd run` sizes at 8192) of 2048
// flows.
var defaultMix = mixConfig{Frames: 4096, Flows: 2048, IPv6Share: 0.3, UDPShare: 0.25, VLANShare: 0.2, Seed: 1}

// imixWire is the simple IMIX: Ethernet frame sizes on the wire (FCS
// included) in the proportion 7:4:1. A captured frame is 4 bytes shorter
// (no FCS), and never shorter than its headers (an IPv6/TCP frame with a
// tag needs 78 bytes): the smallest class's mean is therefore a little
// above 64 (mixStats.WireBytes says by how much).
var imixWire = [...]struct{ size, weight int }{{64, 7}, {594, 4}, {1518, 1}}

// mixStats is what a generated capture holds.
type mixStats struct {
	Frames, Flows         int
	IPv4, IPv6, TCP, UDP  int // frames
	VLANFrames, VLANFlows int
	Small, Medium, Large  int // frames of each IMIX class
	CapBytes              int // captured bytes (no FCS)
	WireBytes             int // bytes on the wire: captured + FCS (4) + preamble and gap (20)
}

// MeanWire is the mean frame size on the wire including FCS, preamble and
// inter-frame gap (what a line rate divides by).
func (s mixStats) MeanWire() float64 { return float64(s.WireBytes) / float64(s.Frames) }

type mixFlow struct {
	v6, udp bool
	vlan    uint16 // 0: untagged
	src     net.IP
	dst     net.IP
	sport   uint16
	dport   uint16
	seq     uint32
	ipid    uint16
}

// genMix builds the frames (in capture order) and counts what they hold.
func genMix(c mixConfig) ([][]byte, mixStats, error) {
	var st mixStats
	if c.Flows < 1 || c.Frames < c.Flows {
		return nil, st, fmt.Errorf("mix: %d frames of %d flows (want 1 ≤ flows ≤ frames)", c.Frames, c.Flows)
	}
	rng := rand.New(rand.NewSource(c.Seed))
	flows := make([]mixFlow, c.Flows)
	// Exact shares: the first IPv6Share×Flows flows of a shuffled order
	// are IPv6, and so on, so the capture holds what it claims.
	pick := func(share float64) []bool {
		n := int(share*float64(c.Flows) + 0.5)
		out := make([]bool, c.Flows)
		for _, i := range rng.Perm(c.Flows)[:n] {
			out[i] = true
		}
		return out
	}
	v6, udp, vlan := pick(c.IPv6Share), pick(c.UDPShare), pick(c.VLANShare)
	wellKnown := []uint16{443, 80, 8443, 8080, 5201, 22, 993, 1935}
	for i := range flows {
		f := &flows[i]
		f.v6, f.udp = v6[i], udp[i]
		if vlan[i] {
			f.vlan = uint16(100 + rng.Intn(8))
		}
		if f.v6 {
			f.src = net.IP{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)}
			f.dst = net.IP{0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(rng.Intn(256))}
		} else {
			f.src = net.IP{10, byte(i >> 16), byte(i >> 8), byte(i)}.To4()
			f.dst = net.IP{172, 16, byte(rng.Intn(16)), byte(rng.Intn(256))}.To4()
		}
		f.sport = uint16(32768 + rng.Intn(28000))
		f.dport = wellKnown[rng.Intn(len(wellKnown))]
		f.seq = rng.Uint32()
		f.ipid = uint16(rng.Intn(1 << 16))
	}
	// Every flow has one frame; the rest go to flows by a Zipf law (a few
	// large flows, many small ones), then the order is shuffled.
	order := make([]int, 0, c.Frames)
	for i := 0; i < c.Flows; i++ {
		order = append(order, i)
	}
	if c.Flows > 1 {
		z := rand.NewZipf(rng, 1.2, 1, uint64(c.Flows-1))
		for len(order) < c.Frames {
			order = append(order, int(z.Uint64()))
		}
	} else {
		for len(order) < c.Frames {
			order = append(order, 0)
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	weights := 0
	for _, w := range imixWire {
		weights += w.weight
	}
	st.Frames, st.Flows = c.Frames, c.Flows
	for i := range flows {
		if flows[i].vlan != 0 {
			st.VLANFlows++
		}
	}
	frames := make([][]byte, 0, c.Frames)
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	payload := make([]byte, 1600)
	for n, fi := range order {
		f := &flows[fi]
		class, r := 0, rng.Intn(weights)
		for !c.Small && r >= imixWire[class].weight {
			r -= imixWire[class].weight
			class++
		}
		hdr := 14 + 20 + 20
		if f.v6 {
			hdr += 20
		}
		if f.udp {
			hdr -= 12
		}
		if f.vlan != 0 {
			hdr += 4
		}
		size := max(imixWire[class].size-4, hdr, c.MinLen)
		// A distinct payload per frame: the packet identities differ.
		pl := payload[:size-hdr]
		for k := range pl {
			pl[k] = byte(n*7 + k)
		}
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}}
		var ls []gopacket.SerializableLayer
		ls = append(ls, eth)
		et := layers.EthernetTypeIPv4
		if f.v6 {
			et = layers.EthernetTypeIPv6
		}
		if f.vlan != 0 {
			eth.EthernetType = layers.EthernetTypeDot1Q
			ls = append(ls, &layers.Dot1Q{VLANIdentifier: f.vlan, Type: et})
		} else {
			eth.EthernetType = et
		}
		proto := layers.IPProtocolTCP
		if f.udp {
			proto = layers.IPProtocolUDP
		}
		var nl gopacket.NetworkLayer
		if f.v6 {
			ip := &layers.IPv6{Version: 6, NextHeader: proto, HopLimit: 64, SrcIP: f.src, DstIP: f.dst, FlowLabel: uint32(fi) & 0xfffff}
			ls, nl = append(ls, ip), ip
			st.IPv6++
		} else {
			ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: f.src, DstIP: f.dst, Id: f.ipid, Flags: layers.IPv4DontFragment}
			f.ipid++
			ls, nl = append(ls, ip), ip
			st.IPv4++
		}
		if f.udp {
			u := &layers.UDP{SrcPort: layers.UDPPort(f.sport), DstPort: layers.UDPPort(f.dport)}
			_ = u.SetNetworkLayerForChecksum(nl)
			ls = append(ls, u)
			st.UDP++
		} else {
			t := &layers.TCP{SrcPort: layers.TCPPort(f.sport), DstPort: layers.TCPPort(f.dport), Seq: f.seq, Ack: 1, ACK: true, PSH: len(pl) > 0, Window: 65535}
			f.seq += uint32(len(pl))
			_ = t.SetNetworkLayerForChecksum(nl)
			ls = append(ls, t)
			st.TCP++
		}
		ls = append(ls, gopacket.Payload(pl))
		if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
			return nil, st, fmt.Errorf("mix: frame %d: %w", n, err)
		}
		b := append([]byte(nil), buf.Bytes()...)
		if len(b) != size {
			return nil, st, fmt.Errorf("mix: frame %d is %d bytes, want %d", n, len(b), size)
		}
		frames = append(frames, b)
		if f.vlan != 0 {
			st.VLANFrames++
		}
		switch class {
		case 0:
			st.Small++
		case 1:
			st.Medium++
		default:
			st.Large++
		}
		st.CapBytes += len(b)
		st.WireBytes += len(b) + 4 + 20
	}
	return frames, st, nil
}

// writePcap writes frames as a pcap file (Ethernet link type).
func writePcap(path string, frames [][]byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		f.Close()
		return err
	}
	// Fixed stamps, a microsecond apart (pcapgo writes the time of writing
	// for a zero one): the same captures every time.
	base := time.Unix(1_700_000_000, 0)
	for i, b := range frames {
		ci := gopacket.CaptureInfo{Timestamp: base.Add(time.Duration(i) * time.Microsecond), CaptureLength: len(b), Length: len(b)}
		if err := w.WritePacket(ci, b); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
