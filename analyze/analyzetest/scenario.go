package analyzetest

import (
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// Scenario describes traffic between two capture points and everything a
// segment (and a careless capture) can do to it. Write produces the two
// captures and the exact truth of every packet; it is deterministic in
// Seed. The zero value of every impairment is "off".
type Scenario struct {
	Seed    uint64
	Packets int       // user packets sent
	Rate    float64   // packets per second (Poisson arrivals)
	Start   time.Time // first send time, roughly
	Flows   int       // distinct 5-tuples (default 64)

	Delay      string        // "weibull" (default), "pareto" or "fixed"
	MeanDelay  time.Duration // mean of the delay distribution
	DelayShape float64       // Weibull shape (default 0.7) or Pareto α (default 2.5)

	Loss      float64 // per-packet loss probability (uniform) or, with BurstLen, the long-run loss rate
	BurstLen  float64 // > 0: losses come in bursts of this mean length (Gilbert model)
	Reorder   float64 // share of packets delayed by ReorderBy on top of their delay
	ReorderBy time.Duration
	Dup       float64 // share of received packets the segment duplicates
	// ClockOffset is added to every receiver timestamp (its clock is off).
	ClockOffset time.Duration

	// LinkLocal frames (STP, LLDP, ARP) the segment's own devices send or
	// consume: seen at the sender only (consumed inside) and at the
	// receiver only (originated inside), this many each.
	LinkLocalSender, LinkLocalReceiver int
	// Identical: share of packets sent as a pair of bit-identical frames
	// (IPv4 identification 0, same payload), 1 µs apart.
	Identical float64
	// CS2 is the share of flows marked DSCP CS2; Remark the share of CS2
	// packets the segment remarks to DSCP 0.
	CS2, Remark float64
	// IPv6 share of flows; IPv6Ext gives IPv6 packets a hop-by-hop and a
	// destination options header (24 bytes).
	IPv6, IPv6Ext float64
	// PushVLAN: the receiver sees an 802.1Q tag the sender did not.
	PushVLAN bool
	// Snap > 0 cuts every frame at both ends to this many bytes.
	Snap int
	// Disjoint: the receiver capture is of other traffic altogether.
	Disjoint bool
	// Capture windows, as fractions of the traffic's duration, in the
	// sender's time line: each end captures only [From, To) (To 0 = 1).
	SenderFrom, SenderTo, ReceiverFrom, ReceiverTo float64
	// Disorder: share of records written up to 1 ms later in the file
	// than their timestamp says (both files).
	Disorder float64
	// Nano: ns timestamps in classic pcap files; PcapNG: pcapng files
	// (ns); µs pcap otherwise.
	Nano, PcapNG bool
}

// Packet is the truth of one user packet.
type Packet struct {
	SendNs int64 // timestamp in the sender capture
	RecvNs int64 // timestamp in the receiver capture (its clock), -1: lost
	// InSender, InReceiver: the packet is in that capture (its window).
	InSender, InReceiver bool
	Class                int  // 1: DSCP CS2 at the sender, 0 otherwise
	Remarked             bool // its DSCP changed inside the segment
	// Extent is how many bytes from the start of L3 its identity covers;
	// with a snap length it may reach past what both captures keep.
	Extent int
	Dups   int // extra copies the segment made
}

// ScenarioTruth is the per-packet truth of one Write.
type ScenarioTruth struct {
	Packets []Packet
}

type flowDesc struct {
	v6, tcp, cs2 bool
	src, dst     [16]byte
	sport, dport uint16
	id           uint16
	seq          uint32
}

type capRec struct {
	ts   int64
	data []byte
	orig int
	key  int64 // file order
}

// Write generates the scenario and writes the sender and receiver captures.
func (sc Scenario) Write(sender, receiver io.Writer) (ScenarioTruth, error) {
	if sc.Flows == 0 {
		sc.Flows = 64
	}
	if sc.Rate == 0 {
		sc.Rate = 100_000
	}
	if sc.SenderTo == 0 {
		sc.SenderTo = 1
	}
	if sc.ReceiverTo == 0 {
		sc.ReceiverTo = 1
	}
	r := rand.New(rand.NewPCG(sc.Seed, sc.Seed^0x5851f42d4c957f2d))
	flows := makeFlows(r, sc.Flows, sc.IPv6, sc.CS2, 0)
	sendQ, recvQ := int64(1000), int64(1000)
	if sc.Nano || sc.PcapNG {
		sendQ, recvQ = 1, 1
	}
	t0 := sc.Start.UnixNano()
	dur := float64(sc.Packets) / sc.Rate * 1e9

	var tr ScenarioTruth
	var snd, rcv []capRec
	bad := false // Gilbert state
	pBad := 0.0
	if sc.BurstLen > 0 && sc.Loss > 0 {
		// Stationary share of the bad state = Loss; leave it after
		// BurstLen packets on average.
		pBad = sc.Loss / (sc.BurstLen * (1 - sc.Loss))
	}
	t := float64(t0)
	payload := make([]byte, 256)
	for i := 0; i < sc.Packets; i++ {
		t += r.ExpFloat64() / sc.Rate * 1e9
		f := &flows[r.IntN(len(flows))]
		ident := r.Float64() < sc.Identical
		copies := 1
		if ident {
			copies = 2
			f.id = 0
		} else {
			f.id++
		}
		f.seq += 1000
		plen := 16 + r.IntN(200)
		for j := range payload[:plen] {
			payload[j] = byte(r.Uint32())
		}
		ext := f.v6 && r.Float64() < sc.IPv6Ext
		remark := f.cs2 && r.Float64() < sc.Remark
		for c := 0; c < copies; c++ {
			send := (int64(t) + int64(c)*1000) / sendQ * sendQ
			frame := buildFrame(f, payload[:plen], ext, f.cs2, false, 64)
			p := Packet{SendNs: send, RecvNs: -1, Extent: extentOf(frame, 14)}
			if f.cs2 {
				p.Class = 1
			}
			lost := false
			if sc.BurstLen > 0 {
				if bad {
					bad = r.Float64() >= 1/sc.BurstLen
				} else {
					bad = r.Float64() < pBad
				}
				lost = bad
			} else {
				lost = r.Float64() < sc.Loss
			}
			off := (float64(send) - float64(t0)) / dur
			p.InSender = off >= sc.SenderFrom && off < sc.SenderTo
			if !lost {
				d := sc.delay(r)
				if r.Float64() < sc.Reorder {
					d += float64(sc.ReorderBy.Nanoseconds())
				}
				p.RecvNs = (send + int64(d) + sc.ClockOffset.Nanoseconds()) / recvQ * recvQ
				p.Remarked = remark
				roff := (float64(p.RecvNs-sc.ClockOffset.Nanoseconds()) - float64(t0)) / dur
				p.InReceiver = roff >= sc.ReceiverFrom && roff < sc.ReceiverTo
				if p.InReceiver && !sc.Disjoint {
					rf := buildFrame(f, payload[:plen], ext, f.cs2 && !remark, sc.PushVLAN, 63)
					rcv = append(rcv, capRec{ts: p.RecvNs, data: rf, orig: len(rf)})
					if r.Float64() < sc.Dup {
						p.Dups++
						rcv = append(rcv, capRec{ts: p.RecvNs + int64(1+r.IntN(20))*recvQ, data: rf, orig: len(rf)})
					}
				}
			}
			if p.InSender {
				snd = append(snd, capRec{ts: send, data: frame, orig: len(frame)})
			}
			tr.Packets = append(tr.Packets, p)
		}
	}
	end := int64(t)
	// Frames of the segment's own devices.
	for i := 0; i < sc.LinkLocalSender; i++ {
		ts := (t0 + int64(r.Float64()*float64(end-t0))) / sendQ * sendQ
		snd = append(snd, capRec{ts: ts, data: linkLocalFrame(r, i)})
	}
	for i := 0; i < sc.LinkLocalReceiver; i++ {
		ts := (t0 + sc.ClockOffset.Nanoseconds() + int64(r.Float64()*float64(end-t0))) / recvQ * recvQ
		rcv = append(rcv, capRec{ts: ts, data: linkLocalFrame(r, i+7)})
	}
	if sc.Disjoint {
		// Other traffic altogether: other flows, other payloads.
		other := makeFlows(r, sc.Flows, sc.IPv6, sc.CS2, 1)
		tt := float64(t0)
		for i := 0; i < sc.Packets; i++ {
			tt += r.ExpFloat64() / sc.Rate * 1e9
			f := &other[r.IntN(len(other))]
			f.id++
			plen := 16 + r.IntN(200)
			for j := range payload[:plen] {
				payload[j] = byte(r.Uint32())
			}
			fr := buildFrame(f, payload[:plen], false, f.cs2, sc.PushVLAN, 63)
			rcv = append(rcv, capRec{ts: int64(tt) / recvQ * recvQ, data: fr, orig: len(fr)})
		}
	}
	for _, recs := range [][]capRec{snd, rcv} {
		for i := range recs {
			recs[i].key = recs[i].ts
			if r.Float64() < sc.Disorder {
				recs[i].key += int64(r.IntN(1_000_000))
			}
			if recs[i].orig == 0 {
				recs[i].orig = len(recs[i].data)
			}
			if sc.Snap > 0 && len(recs[i].data) > sc.Snap {
				recs[i].data = recs[i].data[:sc.Snap]
			}
		}
		sort.SliceStable(recs, func(a, b int) bool { return recs[a].key < recs[b].key })
	}
	if err := sc.writeCapture(sender, snd, sc.PcapNG, sc.Nano); err != nil {
		return tr, err
	}
	return tr, sc.writeCapture(receiver, rcv, sc.PcapNG, sc.Nano)
}

func (sc Scenario) delay(r *rand.Rand) float64 {
	mean := float64(sc.MeanDelay.Nanoseconds())
	switch sc.Delay {
	case "pareto":
		a := sc.DelayShape
		if a == 0 {
			a = 2.5
		}
		xm := mean * (a - 1) / a
		return xm / math.Pow(1-r.Float64(), 1/a)
	case "fixed":
		return mean * (0.98 + 0.04*r.Float64())
	default:
		k := sc.DelayShape
		if k == 0 {
			k = 0.7
		}
		scale := mean / math.Gamma(1+1/k)
		return scale * math.Pow(-math.Log(1-r.Float64()), 1/k)
	}
}

func makeFlows(r *rand.Rand, n int, v6, cs2 float64, net byte) []flowDesc {
	flows := make([]flowDesc, n)
	for i := range flows {
		f := &flows[i]
		f.v6 = r.Float64() < v6
		f.tcp = r.IntN(2) == 0
		f.cs2 = r.Float64() < cs2
		if f.v6 {
			f.src = [16]byte{0x20, 0x01, 0x0d, 0xb8, net, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)}
			f.dst = [16]byte{0x20, 0x01, 0x0d, 0xb8, net, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}
		} else {
			copy(f.src[:], []byte{10, 1 + net, byte(i >> 8), byte(i)})
			copy(f.dst[:], []byte{10, 100 + net, 0, 2})
		}
		f.sport, f.dport = uint16(1024+r.IntN(60000)), []uint16{53, 80, 443, 5001}[r.IntN(4)]
		f.id = uint16(r.Uint32())
		f.seq = r.Uint32()
	}
	return flows
}

// buildFrame writes one frame of flow f: Ethernet (with an 802.1Q tag when
// vlan), IPv4 or IPv6 (with 24 bytes of extension headers when ext), TCP or
// UDP, payload. Checksums other than the IPv4 header's are zero: the
// identity leaves them out.
func buildFrame(f *flowDesc, payload []byte, ext, cs2, vlan bool, ttl byte) []byte {
	b := make([]byte, 0, 14+4+40+24+20+len(payload))
	b = append(b, 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1)
	if ttl != 64 { // routed: new MACs
		b[5], b[11] = 9, 8
	}
	if vlan {
		b = append(b, 0x81, 0x00, 0, 100)
	}
	dscp := byte(0)
	if cs2 {
		dscp = 16
	}
	l4len := 8
	if f.tcp {
		l4len = 20
	}
	proto := byte(17)
	if f.tcp {
		proto = 6
	}
	if f.v6 {
		b = append(b, 0x86, 0xdd)
		extLen := 0
		if ext {
			extLen = 24
		}
		plen := extLen + l4len + len(payload)
		nh := proto
		if ext {
			nh = 0
		}
		b = append(b, 0x60|dscp>>2, dscp<<6|byte(f.sport>>12&0x0f), byte(f.sport>>4), byte(f.sport<<4), byte(plen>>8), byte(plen), nh, ttl)
		b = append(b, f.src[:]...)
		b = append(b, f.dst[:]...)
		if ext {
			b = append(b, 60, 0, 1, 4, 0, 0, 0, 0)                             // hop-by-hop: PadN
			b = append(b, proto, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // destination options: PadN
		}
	} else {
		b = append(b, 0x08, 0x00)
		h := len(b)
		total := 20 + l4len + len(payload)
		b = append(b, 0x45, dscp<<2, byte(total>>8), byte(total), byte(f.id>>8), byte(f.id), 0x40, 0, ttl, proto, 0, 0)
		b = append(b, f.src[:4]...)
		b = append(b, f.dst[:4]...)
		var sum uint32
		for i := h; i < h+20; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(b[h+10:], ^uint16(sum))
	}
	b = binary.BigEndian.AppendUint16(b, f.sport)
	b = binary.BigEndian.AppendUint16(b, f.dport)
	if f.tcp {
		b = binary.BigEndian.AppendUint32(b, f.seq)
		b = binary.BigEndian.AppendUint32(b, 1)
		b = append(b, 5<<4, 0x10, 0x02, 0x00, 0, 0, 0, 0)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(8+len(payload)))
		b = append(b, 0, 0)
	}
	return append(b, payload...)
}

// extentOf is how many bytes after L3 start (at l3) the identity covers:
// the IP header (with extension headers) and a 32-byte L4 window, at most
// the packet.
func extentOf(frame []byte, l3 int) int {
	ip := frame[l3:]
	if frame[l3-2] == 0x86 {
		hdr := 40
		if ip[6] == 0 {
			hdr += 24
		}
		return min(len(ip), hdr+32)
	}
	return min(len(ip), 20+32)
}

// linkLocalFrame is a frame a switch sends on its own: STP, LLDP or ARP.
func linkLocalFrame(r *rand.Rand, i int) []byte {
	switch i % 3 {
	case 0: // STP configuration BPDU: 802.3 length, LLC 42 42 03
		b := []byte{0x01, 0x80, 0xc2, 0, 0, 0, 2, 0, 0, 0, 0xee, 1, 0, 38, 0x42, 0x42, 0x03}
		bpdu := make([]byte, 35)
		bpdu[4] = byte(r.IntN(256)) // root identifier varies
		b = append(b, bpdu...)
		return append(b, make([]byte, 60-len(b))...)
	case 1: // LLDP
		b := []byte{0x01, 0x80, 0xc2, 0, 0, 0x0e, 2, 0, 0, 0, 0xee, 1, 0x88, 0xcc, 0x02, 0x07, 0x04, 2, 0, 0, 0, 0xee, 1}
		b = append(b, 0x04, 0x03, 0x07, 'p', byte('0'+r.IntN(10)), 0x06, 0x02, 0, 120, 0, 0)
		return append(b, make([]byte, max(0, 60-len(b)))...)
	default: // ARP request from the switch
		b := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0xee, 1, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0xee, 1, 10, 0, 0, 1}
		b = append(b, 0, 0, 0, 0, 0, 0, 10, 0, 0, byte(r.IntN(250)+2))
		return append(b, make([]byte, 60-len(b))...)
	}
}

func (sc Scenario) writeCapture(w io.Writer, recs []capRec, ng, nano bool) error {
	snap := uint32(65535)
	if sc.Snap > 0 {
		snap = uint32(sc.Snap)
	}
	if ng {
		nw, err := pcapgo.NewNgWriterInterface(w, pcapgo.NgInterface{LinkType: layers.LinkTypeEthernet, SnapLength: snap, TimestampResolution: 9}, pcapgo.DefaultNgWriterOptions)
		if err != nil {
			return err
		}
		for _, c := range recs {
			if err := nw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, c.ts), CaptureLength: len(c.data), Length: c.orig}, c.data); err != nil {
				return err
			}
		}
		return nw.Flush()
	}
	pw := pcapgo.NewWriter(w)
	if nano {
		pw = pcapgo.NewWriterNanos(w)
	}
	if err := pw.WriteFileHeader(snap, layers.LinkTypeEthernet); err != nil {
		return err
	}
	for _, c := range recs {
		if err := pw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, c.ts), CaptureLength: len(c.data), Length: c.orig}, c.data); err != nil {
			return err
		}
	}
	return nil
}
