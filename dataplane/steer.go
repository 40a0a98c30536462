package dataplane

import "encoding/binary"

// Receive-side scaling: which queue of an N-queue port a frame belongs to.
//
// A multi-queue appliance runs one sender lane and one receiver lane per
// queue, and the cut of every interval must put each frame in the same
// interval at both ends (docs/protocol.md, "Several lanes"). That holds
// when both appliances steer a frame to the queue of the same number, and
// each lane's End marker to the queue of its lane number. SteerQueue is
// that steering, the same function at every port and both ends:
//
//   - an End marker of the control protocol (EtherType 0x88B5, type End,
//     34-byte payload) goes to queue lane mod N, lane read from its
//     payload (not authenticated here: a forged lane number can only
//     misroute the marker, which makes its interval invalid — the same
//     as dropping it, which anyone on the path can do);
//   - an IPv4 or IPv6 frame goes to queue Toeplitz(key, tuple) mod N, the
//     tuple being source and destination address, then source and
//     destination port for TCP and UDP (not for fragments, nor behind
//     IPv6 extension headers: addresses only, so every fragment of a
//     flow lands where its first does). VLAN tags are skipped;
//   - everything else (ARP, LLDP, other control frames) goes to queue 0.
//
// The Toeplitz hash with RSSKey is what a NIC computes with that key, and
// "mod N" is its redirection table filled round-robin (entry j → queue j
// mod N) when N divides the table size (a power of two ≤ 64): a NIC doing
// RSS in hardware with this key and table steers data frames exactly as
// SteerQueue does. The key is the well-known symmetric one (0x6d5a
// repeated), so both directions of a flow also share a queue number.
// Frames of one flow always share a queue: per-flow order is kept.

// RSSKey is the 40-byte Toeplitz key of the steering: 0x6d5a repeated.
var RSSKey = func() [40]byte {
	var k [40]byte
	for i := 0; i < len(k); i += 2 {
		k[i], k[i+1] = 0x6d, 0x5a
	}
	return k
}()

// SteerQueue returns the queue (0 ≤ q < n) of frame b on an n-queue port.
// It allocates nothing; a short or malformed frame goes to queue 0.
func SteerQueue(b []byte, n int) int {
	if n <= 1 {
		return 0
	}
	if lane, ok := endLane(b); ok {
		return int(lane) % n
	}
	var tuple [36]byte
	t := flowTuple(b, tuple[:0])
	if len(t) == 0 {
		return 0
	}
	return int(Toeplitz(&RSSKey, t) % uint32(n))
}

// etherPayload skips the Ethernet header and up to eight VLAN tags and
// returns the EtherType and what follows it.
func etherPayload(b []byte) (uint16, []byte) {
	if len(b) < 14 {
		return 0, nil
	}
	et, off := binary.BigEndian.Uint16(b[12:]), 14
	for tags := 0; (et == 0x8100 || et == 0x88A8 || et == 0x9100) && tags < 8; tags++ {
		if len(b) < off+4 {
			return 0, nil
		}
		et, off = binary.BigEndian.Uint16(b[off+2:]), off+4
	}
	return et, b[off:]
}

// endLane reads the lane of an End marker (control header: magic at 0,
// type at 3, payload length at 38 (34, or more with per-class counts);
// the End payload's lane at 32).
func endLane(b []byte) (uint16, bool) {
	et, p := etherPayload(b)
	if et != 0x88B5 || len(p) < 40+34 || binary.BigEndian.Uint16(p) != 0x4C44 || p[3] != 2 ||
		binary.BigEndian.Uint16(p[38:]) < 34 {
		return 0, false
	}
	return binary.BigEndian.Uint16(p[40+32:]), true
}

// flowTuple appends the frame's steering tuple to dst (nil: none).
func flowTuple(b []byte, dst []byte) []byte {
	et, p := etherPayload(b)
	switch et {
	case 0x0800:
		if len(p) < 20 || p[0]>>4 != 4 {
			return nil
		}
		ihl := int(p[0]&0x0f) * 4
		if ihl < 20 || len(p) < ihl {
			return nil
		}
		dst = append(dst, p[12:20]...)
		frag := binary.BigEndian.Uint16(p[6:])&0x3fff != 0 // MF or an offset
		if (p[9] == 6 || p[9] == 17) && !frag && len(p) >= ihl+4 {
			dst = append(dst, p[ihl:ihl+4]...)
		}
		return dst
	case 0x86DD:
		if len(p) < 40 || p[0]>>4 != 6 {
			return nil
		}
		dst = append(dst, p[8:40]...)
		if (p[6] == 6 || p[6] == 17) && len(p) >= 44 {
			dst = append(dst, p[40:44]...)
		}
		return dst
	}
	return nil
}

// Toeplitz is the RSS hash of input under key (Microsoft's RSS
// specification: for every set input bit, XOR in the 32 key bits that
// start at that bit's position). Inputs longer than len(key)−4 bytes are
// cut there.
func Toeplitz(key *[40]byte, input []byte) uint32 {
	if len(input) > len(key)-4 {
		input = input[:len(key)-4]
	}
	var h uint32
	win := binary.BigEndian.Uint64(key[:8]) // key bits [8i, 8i+64)
	for i, c := range input {
		for bit := 0; bit < 8; bit++ {
			if c&(0x80>>bit) != 0 {
				h ^= uint32(win >> (32 - bit))
			}
		}
		if i+8 < len(key) {
			win = win<<8 | uint64(key[i+8])
		} else {
			win <<= 8
		}
	}
	return h
}
