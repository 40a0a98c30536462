package control

import (
	"bytes"
	"testing"
)

// TestMetaPartReassembled: a per-interval payload of kind meta (the
// appliance's clock part) announced beside the synopses is reassembled
// like them and handed over in the bundle; a receiver that does not read
// it has the synopses as before.
func TestMetaPartReassembled(t *testing.T) {
	parts := []PartKey{{0, KindLDA}, {0, KindMeta}}
	s := newTestSender(t, DefaultMTU, 1, parts)
	r := newTestReceiver(t, nil)
	lda, meta := payloadFor(3, parts[0], 3000), []byte{1, 0xac, 0x02, 0xff, 0xb4, 0x18, 0xdc, 0x0b}
	consumeAll(t, r, intervalFrames(t, s, 3, []Part{{PartKey: parts[1], Payload: meta}, {PartKey: parts[0], Payload: lda}}), 4e9)
	res := r.Results(nil)
	if len(res) != 1 || res[0].Bundle == nil {
		t.Fatalf("results %+v", res)
	}
	b := res[0].Bundle
	if !bytes.Equal(b.Payloads[parts[0]], lda) || !bytes.Equal(b.Payloads[parts[1]], meta) || len(b.Payloads) != 2 {
		t.Errorf("payloads %d: lda ok %v, meta %x", len(b.Payloads), bytes.Equal(b.Payloads[parts[0]], lda), b.Payloads[parts[1]])
	}
}
