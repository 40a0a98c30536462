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
//	0       1        version = 1
//	        uvarint  sender timestamp uncertainty: ⌈Σ half-gaps / frames⌉, ns
//	        uvarint  frames the sender recorded in this MEC
//	        uvarint  flags: bit 0 the sender's copy spans several intervals
//	                 (an overrun), bit 1 it is its session's first, partial one
//	        rest     the synopsis encoding (LDA: compact encoding, "LDC")
const payloadVersion = 1

var errPayload = errors.New("appliance: malformed synopsis payload")

type payloadHeader struct {
	StampErrNs uint64 // mean timestamp uncertainty of the sender's stamps, ns
	Frames     uint64
	Flags      uint64
}

// Payload flags.
const (
	payloadMerged  = 1 << 0
	payloadPartial = 1 << 1
)

func appendPayload(dst []byte, h payloadHeader) []byte {
	dst = append(dst, payloadVersion)
	dst = binary.AppendUvarint(dst, h.StampErrNs)
	dst = binary.AppendUvarint(dst, h.Frames)
	dst = binary.AppendUvarint(dst, h.Flags)
	return dst
}

// parsePayload splits a payload into its header and synopsis bytes.
func parsePayload(b []byte) (payloadHeader, []byte, error) {
	var h payloadHeader
	if len(b) < 1 {
		return h, nil, fmt.Errorf("%w: empty", errPayload)
	}
	if b[0] != payloadVersion {
		return h, nil, fmt.Errorf("%w: version %d", errPayload, b[0])
	}
	b = b[1:]
	var n int
	if h.StampErrNs, n = binary.Uvarint(b); n <= 0 {
		return h, nil, fmt.Errorf("%w: timestamp uncertainty", errPayload)
	}
	b = b[n:]
	if h.Frames, n = binary.Uvarint(b); n <= 0 {
		return h, nil, fmt.Errorf("%w: frame count", errPayload)
	}
	b = b[n:]
	if h.Flags, n = binary.Uvarint(b); n <= 0 {
		return h, nil, fmt.Errorf("%w: flags", errPayload)
	}
	return h, b[n:], nil
}
