package traffic

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Frame layout constants.
const (
	// IDOffset is where every generated frame carries its 64-bit ID
	// (little-endian): the first payload byte of the longest header stack,
	// Ethernet + IPv6 + TCP. Shorter stacks carry the ID at their payload
	// start too, so the packet identity hash differs per ID.
	IDOffset = 14 + 40 + 20
	// MinFrameLen is the smallest frame the generator writes.
	MinFrameLen = IDOffset + 8
)

// GenConfig describes the traffic a Gen writes.
type GenConfig struct {
	Flows int // distinct 5-tuples, ≥ 1; default 16
	Size  int // frame length in bytes, MinFrameLen..9000; default 128
	// Mix selects the stacks flows rotate through: flow f uses
	// Mix[f%len(Mix)]. Default: all four of IPv4/UDP, IPv4/TCP, IPv6/UDP,
	// IPv6/TCP.
	Mix []Stack
}

// Stack is a header stack for generated frames.
type Stack uint8

const (
	IPv4UDP Stack = iota
	IPv4TCP
	IPv6UDP
	IPv6TCP
)

// ErrGenConfig is wrapped by NewGen errors.
var ErrGenConfig = errors.New("porttest: bad generator config")

// Gen writes valid Ethernet frames (IPv4/IPv6, UDP/TCP, correct IPv4
// header and L4 checksums) with a distinct ID per frame into buffers the
// caller provides. It allocates nothing per frame and is safe for
// concurrent use (it has no mutable state).
type Gen struct {
	cfg GenConfig
}

// NewGen validates cfg.
func NewGen(cfg GenConfig) (*Gen, error) {
	if cfg.Flows == 0 {
		cfg.Flows = 16
	}
	if cfg.Size == 0 {
		cfg.Size = 128
	}
	if len(cfg.Mix) == 0 {
		cfg.Mix = []Stack{IPv4UDP, IPv4TCP, IPv6UDP, IPv6TCP}
	}
	if cfg.Flows < 1 || cfg.Flows > 1<<20 {
		return nil, fmt.Errorf("%w: %d flows (want 1..2^20)", ErrGenConfig, cfg.Flows)
	}
	if cfg.Size < MinFrameLen || cfg.Size > 9000 {
		return nil, fmt.Errorf("%w: size %d (want %d..9000)", ErrGenConfig, cfg.Size, MinFrameLen)
	}
	for _, s := range cfg.Mix {
		if s > IPv6TCP {
			return nil, fmt.Errorf("%w: unknown stack %d", ErrGenConfig, s)
		}
	}
	return &Gen{cfg: cfg}, nil
}

// MustGen is NewGen for tests: it panics on a bad config.
func MustGen(cfg GenConfig) *Gen {
	g, err := NewGen(cfg)
	if err != nil {
		panic(err)
	}
	return g
}

// Size is the length of every generated frame.
func (g *Gen) Size() int { return g.cfg.Size }

// Flow is the flow index of frame id (id mod Flows).
func (g *Gen) Flow(id uint64) int { return int(id % uint64(g.cfg.Flows)) }

// Frame writes frame id into buf and returns buf[:Size]. buf must hold
// Size bytes; a shorter one gets nothing written and nil returned.
func (g *Gen) Frame(buf []byte, id uint64) []byte {
	size := g.cfg.Size
	if cap(buf) < size {
		return nil
	}
	b := buf[:size]
	clear(b)
	f := g.Flow(id)
	st := g.cfg.Mix[f%len(g.cfg.Mix)]
	// Ethernet: locally administered unicast MACs.
	copy(b[0:6], []byte{0x02, 0, 0, 0, 0, 0x02})
	copy(b[6:12], []byte{0x02, 0, 0, 0, 0, 0x01})
	proto := byte(17)
	if st == IPv4TCP || st == IPv6TCP {
		proto = 6
	}
	var l4 int
	var pseudo uint32
	if st == IPv4UDP || st == IPv4TCP {
		binary.BigEndian.PutUint16(b[12:], 0x0800)
		ip := b[14:34]
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
		binary.BigEndian.PutUint16(ip[4:], uint16(id))
		ip[8] = 64
		ip[9] = proto
		ip[12], ip[13], ip[14], ip[15] = 10, 1, byte(f>>8), byte(f)
		ip[16], ip[17], ip[18], ip[19] = 10, 2, byte(f>>8), byte(f)
		binary.BigEndian.PutUint16(ip[10:], ^fold(sum(ip, 0)))
		l4 = 34
		pseudo = sum(ip[12:20], 0) + uint32(proto) + uint32(size-l4)
	} else {
		binary.BigEndian.PutUint16(b[12:], 0x86DD)
		ip := b[14:54]
		binary.BigEndian.PutUint32(ip[0:], 6<<28|uint32(f)&0xfffff)
		binary.BigEndian.PutUint16(ip[4:], uint16(size-54))
		ip[6] = proto
		ip[7] = 64
		copy(ip[8:], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 1})
		copy(ip[24:], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 2})
		binary.BigEndian.PutUint32(ip[20:], uint32(f))
		binary.BigEndian.PutUint32(ip[36:], uint32(f))
		l4 = 54
		pseudo = sum(ip[8:40], 0) + uint32(proto) + uint32(size-l4)
	}
	h := b[l4:]
	binary.BigEndian.PutUint16(h[0:], uint16(1024+f%60000))
	binary.BigEndian.PutUint16(h[2:], 5001)
	var payload, csum int
	if proto == 17 {
		binary.BigEndian.PutUint16(h[4:], uint16(size-l4))
		payload, csum = l4+8, 6
	} else {
		binary.BigEndian.PutUint32(h[4:], uint32(id)) // seq
		h[12] = 5 << 4
		h[13] = 0x18 // PSH|ACK
		binary.BigEndian.PutUint16(h[14:], 65535)
		payload, csum = l4+20, 16
	}
	binary.LittleEndian.PutUint64(b[payload:], id)
	binary.LittleEndian.PutUint64(b[IDOffset:], id)
	c := ^fold(sum(h, pseudo))
	if c == 0 && proto == 17 {
		c = 0xffff // UDP: 0 means "no checksum"
	}
	binary.BigEndian.PutUint16(h[csum:], c)
	return b
}

// FrameID reads the ID of a generated frame; false when the frame is too
// short to carry one.
func FrameID(frame []byte) (uint64, bool) {
	if len(frame) < MinFrameLen {
		return 0, false
	}
	return binary.LittleEndian.Uint64(frame[IDOffset:]), true
}

// sum adds b as big-endian 16-bit words to acc (RFC 1071).
func sum(b []byte, acc uint32) uint32 {
	for len(b) >= 2 {
		acc += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	return acc
}

func fold(acc uint32) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}
