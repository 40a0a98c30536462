package appliance

import (
	"bytes"
	"testing"

	"github.com/ldafwd/ldafwd/synopsis"
)

func TestPayloadRoundTrip(t *testing.T) {
	h := payloadHeader{StampErrNs: 300, Frames: 1 << 40, Flags: payloadPartial, Budget: 25_600}
	p := appendPayload(nil, h)
	n := len(p)
	p = append(p, "body"...)
	patchPayloadCounts(p, n, 12345, 67)
	g, body, err := parsePayload(p)
	h.ControlBytes, h.ControlFrames = 12345, 67
	if err != nil || g != h || string(body) != "body" {
		t.Fatalf("got %+v %q %v, want %+v", g, body, err, h)
	}
	omit := appendPayload(nil, payloadHeader{Flags: payloadOmitted})
	if _, body, err := parsePayload(omit); err != nil || len(body) != 0 {
		t.Errorf("omitted: %q %v", body, err)
	}
	for _, bad := range [][]byte{nil, {1}, p[:n-1], append(omit[:len(omit):len(omit)], 'x'), appendPayload(nil, payloadHeader{Flags: 16})} {
		if _, _, err := parsePayload(bad); err == nil {
			t.Errorf("accepted %x", bad)
		}
	}
}

func FuzzPayload(f *testing.F) {
	f.Add(appendPayload(nil, payloadHeader{StampErrNs: 3, Frames: 9, Budget: 100}))
	f.Add(appendPayload(nil, payloadHeader{Flags: payloadOmitted}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := parsePayload(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes up to varint
		// minimality: the header re-parses to itself.
		q := append(appendPayload(nil, h), body...)
		patchPayloadCounts(q, len(q)-len(body), h.ControlBytes, h.ControlFrames)
		g, gb, err := parsePayload(q)
		if err != nil || g != h || !bytes.Equal(gb, body) {
			t.Fatalf("re-encoding %+v: %+v %v", h, g, err)
		}
	})
}

func TestCountsAgree(t *testing.T) {
	est := func(sent, recv, samples, heldS, heldR uint64, exact bool) synopsis.FlowEstimate {
		f := synopsis.FlowEstimate{HeldSent: heldS, HeldReceived: heldR, CountsExact: exact}
		f.Sent, f.Received, f.Lost, f.Samples, f.Valid = sent, recv, sent-recv, samples, true
		return f
	}
	repaired := func(f synopsis.FlowEstimate, extra int) synopsis.FlowEstimate {
		f.RepairedExtra = extra
		return f
	}
	for _, c := range []struct {
		f    synopsis.FlowEstimate
		want bool
	}{
		{est(20, 20, 20, 20, 20, false), true},  // counts match both tables
		{est(25, 25, 25, 20, 20, false), false}, // a collider inflates both ends
		{est(20, 20, 20, 0, 20, false), true},   // unnamed at the sender, no loss
		{est(21, 20, 20, 0, 20, false), false},  // unnamed at the sender: a loss nobody vouches for
		{est(20, 19, 19, 20, 19, false), true},  // named at both ends, a real loss
		{est(20, 19, 30, 20, 19, true), false},  // exact counts, but the delay samples hold others' packets
		{est(20, 19, 19, 20, 19, true), true},
		// A repair listed one extra of the flow (a copy the segment made):
		// the receiver's table holds it, the flow's received packets not.
		{repaired(est(20, 19, 19, 20, 20, false), 1), true},
		{repaired(est(20, 19, 19, 20, 21, false), 1), false}, // one more the repair did not list
		{est(20, 19, 19, 20, 20, false), false},              // received short of the table's count, nothing listed
	} {
		if got := countsAgree(&c.f); got != c.want {
			t.Errorf("%+v: countsAgree %v, want %v", c.f, got, c.want)
		}
	}
}
