package appliance

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Per-MEC synopsis payload, as carried in a control part (docs/protocol.md
// "payloads"). The control protocol treats it as opaque bytes.
//
//	offset  size     field
//	0       1        version = 2
//	        uvarint  sender timestamp uncertainty: ⌈Σ half-gaps / frames⌉, ns
//	        uvarint  frames the sender recorded in this MEC
//	        uvarint  flags: bit 0 the sender's copy spans several intervals
//	                 (an overrun), bit 1 it is its session's first, partial
//	                 one, bit 2 the control budget left this synopsis out
//	                 (nothing follows the header), bit 3 the sender's clock
//	                 stepped during the interval (clockstep.go)
//	        uvarint  the control budget of this interval, bytes (all copies;
//	                 0: none)
//	        4        control bytes the sender sent for this interval, all
//	                 copies (little-endian)
//	        4        control frames, likewise
//	        rest     the synopsis encoding (LDA: compact encoding, "LDC")
//
// The two counts have a fixed width so the sender can write them once it
// knows the size of what carries them.
const payloadVersion = 2

var errPayload = errors.New("appliance: malformed synopsis payload")

type payloadHeader struct {
	StampErrNs    uint64 // mean timestamp uncertainty of the sender's stamps, ns
	Frames        uint64
	Flags         uint64
	Budget        uint64 // control budget of the interval, bytes, all copies; 0: none
	ControlBytes  uint32 // what the sender sent for the interval, all copies
	ControlFrames uint32
}

// Payload flags.
const (
	payloadMerged    = 1 << 0
	payloadPartial   = 1 << 1
	payloadOmitted   = 1 << 2
	payloadClockStep = 1 << 3
	payloadFlags     = payloadMerged | payloadPartial | payloadOmitted | payloadClockStep
)

// payloadCountsLen is the size of the fixed-width counts that end the
// header (patchPayloadCounts writes them).
const payloadCountsLen = 8

func appendPayload(dst []byte, h payloadHeader) []byte {
	dst = append(dst, payloadVersion)
	dst = binary.AppendUvarint(dst, h.StampErrNs)
	dst = binary.AppendUvarint(dst, h.Frames)
	dst = binary.AppendUvarint(dst, h.Flags)
	dst = binary.AppendUvarint(dst, h.Budget)
	dst = binary.LittleEndian.AppendUint32(dst, h.ControlBytes)
	dst = binary.LittleEndian.AppendUint32(dst, h.ControlFrames)
	return dst
}

// patchPayloadCounts writes the control counts into a payload whose header
// ends at hdrLen.
func patchPayloadCounts(p []byte, hdrLen int, bytes, frames uint32) {
	binary.LittleEndian.PutUint32(p[hdrLen-payloadCountsLen:], bytes)
	binary.LittleEndian.PutUint32(p[hdrLen-payloadCountsLen+4:], frames)
}

// parsePayload splits a payload into its header and synopsis bytes.
func parsePayload(b []byte) (payloadHeader, []byte, error) {
	var h payloadHeader
	if len(b) < 1 {
		return h, nil, fmt.Errorf("%w: empty", errPayload)
	}
	if b[0] != payloadVersion {
		return h, nil, fmt.Errorf("%w: version %d (this build reads %d: run the same build at both ends)", errPayload, b[0], payloadVersion)
	}
	b = b[1:]
	var n int
	for _, f := range []struct {
		v    *uint64
		what string
	}{{&h.StampErrNs, "timestamp uncertainty"}, {&h.Frames, "frame count"}, {&h.Flags, "flags"}, {&h.Budget, "budget"}} {
		if *f.v, n = binary.Uvarint(b); n <= 0 {
			return h, nil, fmt.Errorf("%w: %s", errPayload, f.what)
		}
		b = b[n:]
	}
	if h.Flags&^payloadFlags != 0 {
		return h, nil, fmt.Errorf("%w: unknown flags %#x", errPayload, h.Flags)
	}
	if len(b) < payloadCountsLen {
		return h, nil, fmt.Errorf("%w: control counts", errPayload)
	}
	h.ControlBytes = binary.LittleEndian.Uint32(b)
	h.ControlFrames = binary.LittleEndian.Uint32(b[4:])
	b = b[payloadCountsLen:]
	if h.Flags&payloadOmitted != 0 && len(b) != 0 {
		return h, nil, fmt.Errorf("%w: a synopsis left out, yet %d bytes follow", errPayload, len(b))
	}
	return h, b, nil
}
