package classifier

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/google/gopacket/layers"
)

// benchFrames returns 256 distinct frames of one kind (IP ID, ports and
// payload vary), so the benchmark does not hash one frame from L1 forever.
func benchFrames(tb testing.TB, kind string) [][]byte {
	var out [][]byte
	for i := 0; i < 256; i++ {
		pl := make([]byte, 64)
		binary.BigEndian.PutUint32(pl, uint32(i)*2654435761)
		var p pkt
		switch kind {
		case "ipv4-tcp":
			p = pkt{proto: layers.IPProtocolTCP, ipID: uint16(i), sport: uint16(1000 + i), dport: 443, seq: uint32(i), payload: pl}
		case "ipv4-udp":
			p = pkt{proto: layers.IPProtocolUDP, ipID: uint16(i), sport: uint16(1000 + i), dport: 53, payload: pl}
		case "ipv6-tcp":
			p = pkt{v6: true, proto: layers.IPProtocolTCP, sport: uint16(1000 + i), dport: 443, seq: uint32(i), payload: pl}
		case "ipv6-udp":
			p = pkt{v6: true, proto: layers.IPProtocolUDP, sport: uint16(1000 + i), dport: 53, payload: pl}
		case "qinq-ipv4-udp":
			p = pkt{proto: layers.IPProtocolUDP, ipID: uint16(i), sport: uint16(1000 + i), dport: 53, payload: pl,
				tags: []uint16{100, uint16(i)}, tpids: []layers.EthernetType{0x88a8}}
		case "non-ip":
			out = append(out, nonIPFrame(0x88cc, pl))
			continue
		default:
			tb.Fatalf("kind %q", kind)
		}
		out = append(out, p.frame(tb))
	}
	return out
}

var benchKinds = []string{"ipv4-tcp", "ipv4-udp", "ipv6-tcp", "ipv6-udp", "qinq-ipv4-udp", "non-ip"}

var sink uint64

// BenchmarkParse is the full per-packet cost of identity + flow key.
func BenchmarkParse(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run(kind, func(b *testing.B) {
			frames := benchFrames(b, kind)
			var m Meta
			stop := cpuTimer(b)
			for i := 0; i < b.N; i++ {
				Parse(frames[i&255], &m)
				sink += m.Hash
			}
			stop()
		})
	}
}

// BenchmarkHashInvariantOnly is the baseline: xxhash.Sum64 over an
// already-gathered invariant window of the size Parse hashes (48 bytes for
// IPv4, 64 for non-IP, 80 for IPv6).
func BenchmarkHashInvariantOnly(b *testing.B) {
	for _, n := range []int{v4Words * 8, nonIPWords * 8, v6Words * 8} {
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			bufs := make([][v6Words * 8]byte, 256)
			for i := range bufs {
				binary.LittleEndian.PutUint64(bufs[i][:], uint64(i)*0x9e3779b97f4a7c15)
				bufs[i][40] = byte(i)
			}
			stop := cpuTimer(b)
			for i := 0; i < b.N; i++ {
				sink += xxhash.Sum64(bufs[i&255][:n])
			}
			stop()
		})
	}
}

// BenchmarkIdentityGather decides how Parse feeds XXH64, for the IPv4 TCP
// identity: words built in registers and hashed by sum64Words (what Parse
// does); the same bytes gathered into a stack array with byte copies and
// hashed by xxhash.Sum64 once; or the fields written one by one into a
// streaming xxhash.Digest.
func BenchmarkIdentityGather(b *testing.B) {
	frames := benchFrames(b, "ipv4-tcp")
	b.Run("words+sum64Words", func(b *testing.B) {
		stop := cpuTimer(b)
		for i := 0; i < b.N; i++ {
			f := frames[i&255]
			var id ident
			gatherIPv4Header(f[14:34], &id)
			load4(id[2:6], f[34:])
			id[4] &= maskTCPCsum
			sink += sum64Words(&id, v4Words)
		}
		stop()
	})
	b.Run("array+Sum64", func(b *testing.B) {
		stop := cpuTimer(b)
		for i := 0; i < b.N; i++ {
			f := frames[i&255]
			h, l4 := f[14:34], f[34:]
			var id [48]byte
			id[0] = tagIPv4
			id[1] = h[9]
			copy(id[2:8], h[2:8])
			copy(id[8:16], h[12:20])
			copy(id[16:48], l4)
			id[32], id[33] = 0, 0
			sink += xxhash.Sum64(id[:])
		}
		stop()
	})
	b.Run("Digest", func(b *testing.B) {
		var zero [2]byte
		stop := cpuTimer(b)
		for i := 0; i < b.N; i++ {
			f := frames[i&255]
			h, l4 := f[14:34], f[34:]
			tag := [2]byte{tagIPv4, h[9]}
			var d xxhash.Digest
			d.Reset()
			d.Write(tag[:])
			d.Write(h[2:8])
			d.Write(h[12:20])
			d.Write(l4[:16])
			d.Write(zero[:])
			d.Write(l4[18:32])
			sink += d.Sum64()
		}
		stop()
	})
}

// BenchmarkClassify is the MEC lookup for a parsed packet, by rule count.
// The packet matches no rule, the worst case (every rule is tried).
func BenchmarkClassify(b *testing.B) {
	bodies := []string{
		"dscp:ef,proto:udp,dport:16384-32767",
		"src:192.168.0.0/16|172.16.0.0/12,vlan:100",
		"dst:2001:db8::/32,proto:tcp,dport:80|443",
		"proto:icmp|icmpv6",
	}
	m := parsed(benchFrames(b, "ipv4-tcp")[0])
	for _, n := range []int{0, 1, 4, 16} {
		var specs []string
		for i := 0; i < n; i++ {
			specs = append(specs, fmt.Sprintf("r%d=%s", i, bodies[i%len(bodies)]))
		}
		c, err := NewClassifierFromSpecs(specs)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(map[int]string{0: "rules-0", 1: "rules-1", 4: "rules-4", 16: "rules-16"}[n], func(b *testing.B) {
			stop := cpuTimer(b)
			for i := 0; i < b.N; i++ {
				sink += uint64(c.Classify(&m))
			}
			stop()
		})
	}
}

// BenchmarkHashParts times the pieces of Parse alone.
func BenchmarkHashParts(b *testing.B) {
	var ws [256]ident
	var bs [256][v6Words * 8]byte
	for i := range ws {
		for j := range ws[i] {
			ws[i][j] = uint64(i*131+j) * 0x9e3779b97f4a7c15
			binary.LittleEndian.PutUint64(bs[i][8*j:], ws[i][j])
		}
	}
	b.Run("sum64Words-48B", func(b *testing.B) {
		stop := cpuTimer(b)
		for i := 0; i < b.N; i++ {
			sink += sum64Words(&ws[i&255], v4Words)
		}
		stop()
	})
	b.Run("xxhash.Sum64-48B", func(b *testing.B) {
		stop := cpuTimer(b)
		for i := 0; i < b.N; i++ {
			sink += xxhash.Sum64(bs[i&255][:48])
		}
		stop()
	})
	var k FlowKey
	b.Run("flowHash", func(b *testing.B) {
		stop := cpuTimer(b)
		for i := 0; i < b.N; i++ {
			k.SrcPort = uint16(i)
			sink += flowHash(&k)
		}
		stop()
	})
}
