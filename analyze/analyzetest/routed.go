package analyzetest

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"sort"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/ldafwd/ldafwd/classifier"
)

// Config describes the traffic and what the segment does to it.
type Config struct {
	Packets   int           // packets sent
	Rate      float64       // packets per second at the sender
	Start     time.Time     // first send time
	Flows     int           // distinct 5-tuples (Pareto-ish sizes are not needed here)
	MeanDelay time.Duration // Weibull-distributed one-way delay with this mean
	Shape     float64       // Weibull shape (0.6–0.8 per the LDA paper)
	Loss      float64       // uniform loss probability
	// BurstFrom/BurstTo (offsets from Start) bound a window in which
	// BurstLoss is the loss probability instead: a microburst.
	BurstFrom, BurstTo time.Duration
	BurstLoss          float64
	Seed               uint64
	IPv6Share          float64 // fraction of flows that are IPv6
	// FlowShape > 0 draws flow sizes from a Pareto distribution of that
	// shape (packets pick flows in proportion); 0: flows equally likely.
	FlowShape float64
	// FlowMinSize > 0 (with FlowShape) gives every flow a fixed size
	// drawn from Pareto(FlowMinSize, FlowShape), capped at 200 000, the LDS
	// paper's trace model (shape 1, scale 2.1875: P(size > 50) = 4.375 %);
	// Packets is then the sum of the sizes, in random order.
	FlowMinSize float64
	// FlowDelaySpread s gives each flow its own mean delay, MeanDelay
	// times a factor uniform in [1−s, 1+s] (LDS: per-flow delays differ).
	FlowDelaySpread float64
	NanoPcap        bool // sender pcap with ns timestamps (µs otherwise)
	PcapNG          bool // receiver as pcapng (ns timestamps); µs pcap otherwise
}

// Truth is what the generator did, packet by packet.
type Truth struct {
	Sent, Received, Lost uint64
	MeanNs, StddevNs     float64 // over received packets
	SendNs, RecvNs       []int64 // per packet, RecvNs = -1 when lost
	// Flow is each packet's flow, an index into FlowNames: the flows as
	// the reports name them (classifier.FlowKey.String).
	Flow      []int32
	FlowNames []string
}

type pkt struct {
	send, recv int64
	flow       int32
	snd, rcv   []byte
}

// Write generates the traffic and writes the sender and receiver captures.
// The receiver sees each surviving frame routed: new MACs, TTL/hop limit
// decremented, IPv4 header checksum recomputed, an 802.1Q tag pushed, DSCP
// rewritten. Receiver timestamps are quantised to the capture's resolution
// and the truth uses the quantised values, so it is exact for what the
// files say.
func Write(cfg Config, sender, receiver io.Writer) (Truth, error) {
	if cfg.Shape == 0 {
		cfg.Shape = 0.7
	}
	if cfg.Flows == 0 {
		cfg.Flows = 64
	}
	r := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	scale := float64(cfg.MeanDelay.Nanoseconds()) / math.Gamma(1+1/cfg.Shape)
	gap := 1e9 / cfg.Rate
	t0 := cfg.Start.UnixNano()

	type flow struct {
		scale      float64 // Weibull scale of this flow's delays
		v6         bool
		src, dst   net.IP
		sport, dpt uint16
		proto      layers.IPProtocol
		id         uint16
	}
	flows := make([]flow, cfg.Flows)
	for i := range flows {
		f := &flows[i]
		f.v6 = r.Float64() < cfg.IPv6Share
		if f.v6 {
			f.src = net.IP{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)}
			f.dst = net.IP{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}
		} else {
			f.src = net.IPv4(10, 1, byte(i>>8), byte(i)).To4()
			f.dst = net.IPv4(10, 2, 0, 2).To4()
		}
		f.sport, f.dpt = uint16(1024+r.IntN(60000)), uint16([]int{53, 80, 443, 5001}[r.IntN(4)])
		f.proto = layers.IPProtocolUDP
		if r.IntN(2) == 0 {
			f.proto = layers.IPProtocolTCP
		}
		f.id = uint16(r.Uint32())
		f.scale = scale
		if cfg.FlowDelaySpread > 0 {
			f.scale = scale * (1 - cfg.FlowDelaySpread + 2*cfg.FlowDelaySpread*r.Float64())
		}
	}
	// Flow choice: cumulative weights (Pareto sizes) or uniform.
	var cum []float64
	if cfg.FlowShape > 0 {
		cum = make([]float64, len(flows))
		t := 0.0
		for i := range flows {
			t += math.Pow(1-r.Float64(), -1/cfg.FlowShape) // Pareto(1, shape)
			cum[i] = t
		}
	}
	var seq []int32
	if cfg.FlowMinSize > 0 && cfg.FlowShape > 0 {
		for i := range flows {
			size := int(cfg.FlowMinSize / math.Pow(1-r.Float64(), 1/cfg.FlowShape))
			size = max(1, min(size, 200_000))
			for j := 0; j < size; j++ {
				seq = append(seq, int32(i))
			}
		}
		r.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
		cfg.Packets = len(seq)
	}
	pick := func() int {
		if seq != nil {
			v := seq[0]
			seq = seq[1:]
			return int(v)
		}
		if cum == nil {
			return r.IntN(len(flows))
		}
		x := r.Float64() * cum[len(cum)-1]
		return sort.SearchFloat64s(cum, x)
	}
	// Timestamp resolution of each file: pcap is µs unless NanoPcap (sender
	// only); gopacket's pcapng writer always writes ns.
	sendQ, quantum := int64(1000), int64(1000)
	if cfg.NanoPcap {
		sendQ = 1
	}
	if cfg.PcapNG {
		quantum = 1
	}

	var tr Truth
	pk := make([]pkt, 0, cfg.Packets)
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	payload := make([]byte, 64)
	for i := 0; i < cfg.Packets; i++ {
		fi := min(pick(), len(flows)-1)
		f := &flows[fi]
		f.id++
		for j := range payload {
			payload[j] = byte(r.Uint32())
		}
		plen := 16 + r.IntN(48)
		send := (t0 + int64(float64(i)*gap)) / sendQ * sendQ
		mk := func(routed bool) []byte {
			eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}}
			ttl, tos := uint8(64), uint8(0)
			var ls []gopacket.SerializableLayer
			if routed {
				eth.SrcMAC, eth.DstMAC = net.HardwareAddr{2, 0, 0, 0, 9, 1}, net.HardwareAddr{2, 0, 0, 0, 9, 2}
				ttl, tos = 63, 0xb8
				eth.EthernetType = layers.EthernetTypeDot1Q
				ls = append(ls, eth, &layers.Dot1Q{VLANIdentifier: 100, Type: etherType(f.v6)})
			} else {
				eth.EthernetType = etherType(f.v6)
				ls = append(ls, eth)
			}
			var nl gopacket.NetworkLayer
			if f.v6 {
				ip := &layers.IPv6{Version: 6, HopLimit: ttl, TrafficClass: tos, NextHeader: f.proto, SrcIP: f.src, DstIP: f.dst, FlowLabel: uint32(f.sport)}
				ls, nl = append(ls, ip), ip
			} else {
				ip := &layers.IPv4{Version: 4, IHL: 5, TTL: ttl, TOS: tos, Id: f.id, Protocol: f.proto, SrcIP: f.src, DstIP: f.dst, Flags: layers.IPv4DontFragment}
				ls, nl = append(ls, ip), ip
			}
			if f.proto == layers.IPProtocolTCP {
				tcp := &layers.TCP{SrcPort: layers.TCPPort(f.sport), DstPort: layers.TCPPort(f.dpt), Seq: uint32(i) * 1000, ACK: true, Window: 512}
				tcp.SetNetworkLayerForChecksum(nl)
				ls = append(ls, tcp)
			} else {
				udp := &layers.UDP{SrcPort: layers.UDPPort(f.sport), DstPort: layers.UDPPort(f.dpt)}
				udp.SetNetworkLayerForChecksum(nl)
				ls = append(ls, udp)
			}
			ls = append(ls, gopacket.Payload(payload[:plen]))
			if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
				panic(err) // generator bug, not input
			}
			return append([]byte(nil), buf.Bytes()...)
		}
		p := pkt{send: send, recv: -1, flow: int32(fi), snd: mk(false)}
		tr.Sent++
		lossP := cfg.Loss
		if off := time.Duration(send - t0); cfg.BurstTo > cfg.BurstFrom && off >= cfg.BurstFrom && off < cfg.BurstTo {
			lossP = cfg.BurstLoss
		}
		if r.Float64() >= lossP {
			d := f.scale * math.Pow(-math.Log(1-r.Float64()), 1/cfg.Shape)
			p.recv = (send + int64(d)) / quantum * quantum
			if p.recv <= send { // a receive never precedes its send
				p.recv = (send/quantum + 1) * quantum
			}
			p.rcv = mk(true)
			tr.Received++
		}
		pk = append(pk, p)
	}
	tr.Lost = tr.Sent - tr.Received
	for _, f := range flows {
		k := classifier.FlowKey{SrcPort: f.sport, DstPort: f.dpt, Proto: uint8(f.proto), IPv6: f.v6}
		copy(k.Src[:], f.src.To16())
		copy(k.Dst[:], f.dst.To16())
		tr.FlowNames = append(tr.FlowNames, k.String())
	}
	var sum, sq float64
	for _, p := range pk {
		tr.SendNs = append(tr.SendNs, p.send)
		tr.RecvNs = append(tr.RecvNs, p.recv)
		tr.Flow = append(tr.Flow, p.flow)
		if p.recv >= 0 {
			d := float64(p.recv - p.send)
			sum += d
			sq += d * d
		}
	}
	if tr.Received > 0 {
		tr.MeanNs = sum / float64(tr.Received)
		tr.StddevNs = math.Sqrt(math.Max(sq/float64(tr.Received)-tr.MeanNs*tr.MeanNs, 0))
	}

	// Sender capture in send order.
	sw := pcapgo.NewWriter(sender)
	if cfg.NanoPcap {
		sw = pcapgo.NewWriterNanos(sender)
	}
	if err := sw.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		return tr, err
	}
	for _, p := range pk {
		if err := sw.WritePacket(ci(p.send, len(p.snd)), p.snd); err != nil {
			return tr, err
		}
	}
	// Receiver capture in arrival order.
	rx := make([]pkt, 0, tr.Received)
	for _, p := range pk {
		if p.recv >= 0 {
			rx = append(rx, p)
		}
	}
	sort.SliceStable(rx, func(i, j int) bool { return rx[i].recv < rx[j].recv })
	writeRx := func(write func(gopacket.CaptureInfo, []byte) error) error {
		for _, p := range rx {
			if err := write(ci(p.recv, len(p.rcv)), p.rcv); err != nil {
				return err
			}
		}
		return nil
	}
	if cfg.PcapNG {
		nw, err := pcapgo.NewNgWriter(receiver, layers.LinkTypeEthernet)
		if err != nil {
			return tr, err
		}
		if err := writeRx(nw.WritePacket); err != nil {
			return tr, err
		}
		return tr, nw.Flush()
	}
	rw := pcapgo.NewWriter(receiver)
	if err := rw.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		return tr, err
	}
	return tr, writeRx(rw.WritePacket)
}

func etherType(v6 bool) layers.EthernetType {
	if v6 {
		return layers.EthernetTypeIPv6
	}
	return layers.EthernetTypeIPv4
}

func ci(ns int64, n int) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: time.Unix(0, ns), CaptureLength: n, Length: n}
}

// String summarises the truth for test logs.
func (t Truth) String() string {
	return fmt.Sprintf("sent %d received %d lost %d mean %.1f ns sd %.1f ns", t.Sent, t.Received, t.Lost, t.MeanNs, t.StddevNs)
}

// Within is the truth of the packets sent in [lo, hi] (ns, the sender's
// clock): what `analyze` measures after trimming to the common range.
func (t Truth) Within(lo, hi uint64) Truth {
	var w Truth
	var sum, sq float64
	for i, s := range t.SendNs {
		if s < int64(lo) || s > int64(hi) {
			continue
		}
		w.SendNs = append(w.SendNs, s)
		w.RecvNs = append(w.RecvNs, t.RecvNs[i])
		w.Sent++
		if r := t.RecvNs[i]; r >= 0 {
			w.Received++
			d := float64(r - s)
			sum += d
			sq += d * d
		}
	}
	w.Lost = w.Sent - w.Received
	if w.Received > 0 {
		w.MeanNs = sum / float64(w.Received)
		w.StddevNs = math.Sqrt(math.Max(sq/float64(w.Received)-w.MeanNs*w.MeanNs, 0))
	}
	return w
}
