package appliance

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ldafwd/ldafwd/synopsis"
)

// FuzzParsePayload: any bytes from the wire (the payload of an authentic
// part: only a key holder can send them) parse or fail without panicking;
// what parses re-encodes to a payload that parses the same.
func FuzzParsePayload(f *testing.F) {
	f.Add(appendPayload(nil, payloadHeader{StampErrNs: 120, Frames: 5000, Flags: payloadMerged}))
	f.Add(append(appendPayload(nil, payloadHeader{}), "LDC"...))
	f.Add([]byte{payloadVersion, 0x80})
	f.Add([]byte{2, 1, 1, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, rest, err := parsePayload(b)
		if err != nil {
			return
		}
		if len(rest) > len(b) || (len(rest) > 0 && !bytes.Equal(rest, b[len(b)-len(rest):])) {
			t.Fatalf("rest %x is not the tail of %x", rest, b)
		}
		again := append(appendPayload(nil, h), rest...)
		h2, rest2, err := parsePayload(again)
		if err != nil || h2 != h || !bytes.Equal(rest2, rest) {
			t.Fatalf("re-encoded %+v: %+v %v", h, h2, err)
		}
		// A canonical header (no padded varints) re-encodes to its bytes.
		canon := len(b)-len(rest) == 1+uvarintLen(h.StampErrNs)+uvarintLen(h.Frames)+uvarintLen(h.Flags)
		if canon && !bytes.Equal(again, b) {
			t.Fatalf("canonical payload %x re-encoded as %x", b, again)
		}
	})
}

func uvarintLen(v uint64) int { return len(binary.AppendUvarint(nil, v)) }

// FuzzParsePartRequest: any request body (from an authentic peer) parses
// to a fragment size in range (and, version 2, rows per bank in range)
// or fails without panicking; what parses re-encodes to the same bytes.
func FuzzParsePartRequest(f *testing.F) {
	f.Add(appendPartRequest(nil, partFetchFrag))
	f.Add(appendPartRequest(nil, 64))
	f.Add(appendPartRequest(nil, minReplyFrag))
	f.Add(appendRowsRequest(nil, partFetchFrag, []int{1024, 1024, 512, 64, 16, 16, 16, 16}))
	f.Add(appendRowsRequest(nil, 64, []int{1}))
	f.Add([]byte{partRequestMagic, partRowsVersion, 0x80, 0x02, 0x01, 0x1f})
	f.Add([]byte{partRequestMagic, partRequestVersion, 0x80, 0x80, 0x80})
	f.Add([]byte{partRequestMagic})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, rows, err := parsePartRequest(b)
		if err != nil {
			return
		}
		if n < minReplyFrag || n > 65535 {
			t.Fatalf("fragment size %d out of range", n)
		}
		again := appendPartRequest(nil, n)
		if rows != nil {
			if len(rows) < 1 || len(rows) > synopsis.LDAMaxBanks {
				t.Fatalf("%d banks", len(rows))
			}
			for _, r := range rows {
				if r < 1 || r > 1<<maxRowsLog2 || r&(r-1) != 0 {
					t.Fatalf("rows %d", r)
				}
			}
			again = appendRowsRequest(nil, n, rows)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("%x parses to %d %v, which encodes to %x", b, n, rows, again)
		}
	})
}
