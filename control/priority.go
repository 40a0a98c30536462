package control

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// VLANTagLen is what an 802.1p priority tag adds to a frame (bytes): the
// TPID 0x8100 and the tag control information.
const VLANTagLen = 4

// tpid8021Q is the Tag Protocol Identifier of an 802.1Q (and 802.1p) tag.
const tpid8021Q = 0x8100

// Priority is the 802.1p priority a Sender tags its synopsis fragments,
// parity fragments, requests and replies with: an 802.1Q tag of VLAN id 0
// (a priority tag, which a bridge forwards in the port's own VLAN) and the
// priority code point PCP, so that a segment whose queues honour PCP lets
// them pass a congested queue ahead of the data. End markers and Hellos are
// never tagged: an End marker cuts the data stream where its data is, and
// must stay in the data's queue, in order with it; the Hello stays with the
// End markers it follows (docs/protocol.md, "Priority tag").
//
// The zero value, NoPriority, sends every frame untagged. PCP(p) tags with
// priority p.
type Priority uint8

// NoPriority sends control frames untagged.
const NoPriority Priority = 0

// MaxPCP is the largest 802.1p priority code point.
const MaxPCP = 7

// PCP returns the Priority that tags frames with priority code point p
// (0..7; larger values are cut to their low three bits).
func PCP(p uint8) Priority { return Priority(p&MaxPCP) + 1 }

// Tagged reports whether frames get a priority tag.
func (p Priority) Tagged() bool { return p != NoPriority }

// Code returns the priority code point (meaningful when Tagged).
func (p Priority) Code() uint8 { return uint8(p-1) & MaxPCP }

// TagBytes is what the tag adds to a tagged frame: 0 or VLANTagLen.
func (p Priority) TagBytes() int {
	if p.Tagged() {
		return VLANTagLen
	}
	return 0
}

// String is "none" or the priority code point; ParsePriority reads it back.
func (p Priority) String() string {
	if !p.Tagged() {
		return "none"
	}
	return strconv.Itoa(int(p.Code()))
}

// ParsePriority reads a priority: 0..7, or "none" or -1 for untagged.
func ParsePriority(s string) (Priority, error) {
	if s == "none" || s == "-1" {
		return NoPriority, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > MaxPCP {
		return NoPriority, fmt.Errorf("priority %q: want 0..7, or none (-1) for untagged", s)
	}
	return PCP(uint8(n)), nil
}

// Set parses s into p (a flag.Value).
func (p *Priority) Set(s string) error {
	v, err := ParsePriority(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Type names the flag value's kind in --help (pflag): its placeholder,
// a type name like every other flag's.
func (*Priority) Type() string { return "string" }

// appendEthHeader appends the Ethernet header of a control frame: DstMAC,
// src, the priority tag when p is tagged (TPID 0x8100, PCP p, DEI 0,
// VLAN id 0), and the control EtherType.
func appendEthHeader(dst []byte, src [6]byte, p Priority) []byte {
	dst = append(dst, DstMAC[:]...)
	dst = append(dst, src[:]...)
	if p.Tagged() {
		dst = binary.BigEndian.AppendUint16(dst, tpid8021Q)
		dst = binary.BigEndian.AppendUint16(dst, uint16(p.Code())<<13)
	}
	return binary.BigEndian.AppendUint16(dst, EtherType)
}

// IsControlFrame reports whether b is a frame of the control EtherType,
// behind up to MaxVLANTags VLAN tags as ParseFrame skips them: what
// counts as control traffic rather than data, tagged or not. It checks
// nothing else.
func IsControlFrame(b []byte) bool {
	if len(b) < EthHeaderLen {
		return false
	}
	off := 12
	et := binary.BigEndian.Uint16(b[off:])
	for tags := 0; tags < MaxVLANTags && (et == 0x8100 || et == 0x88A8 || et == 0x9100); tags++ {
		off += 4
		if len(b) < off+2 {
			return false
		}
		et = binary.BigEndian.Uint16(b[off:])
	}
	return et == EtherType
}
