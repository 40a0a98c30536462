package control

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

func TestParsePriority(t *testing.T) {
	for _, c := range []struct {
		in     string
		tagged bool
		pcp    uint8
		bad    bool
	}{
		{"none", false, 0, false}, {"-1", false, 0, false}, {"0", true, 0, false}, {"5", true, 5, false},
		{"7", true, 7, false}, {"8", false, 0, true}, {"-2", false, 0, true}, {"", false, 0, true}, {"high", false, 0, true},
	} {
		p, err := ParsePriority(c.in)
		if (err != nil) != c.bad {
			t.Fatalf("%q: error %v", c.in, err)
		}
		if c.bad {
			continue
		}
		if p.Tagged() != c.tagged || (c.tagged && p.Code() != c.pcp) {
			t.Fatalf("%q: tagged %v pcp %d", c.in, p.Tagged(), p.Code())
		}
		if back, _ := ParsePriority(p.String()); back != p {
			t.Fatalf("%q: String %q reads back as %v", c.in, p.String(), back)
		}
	}
	if NoPriority.Tagged() || NoPriority.TagBytes() != 0 || PCP(3).TagBytes() != 4 {
		t.Fatal("tag sizes")
	}
	if _, err := NewSender(SenderConfig{Key: testKey, Priority: Priority(9), Hello: Hello{Lanes: 1}}); err == nil {
		t.Fatal("sender built with priority 8")
	}
}

// rawType reads a frame's control type and whether it carries a priority
// tag with the given PCP, from the bytes as this test lays them out
// (docs/protocol.md), not through ParseFrame.
func rawType(t *testing.T, b []byte, pcp uint8) (typ Type, tagged bool) {
	t.Helper()
	off := 12
	if binary.BigEndian.Uint16(b[12:]) == 0x8100 {
		tci := binary.BigEndian.Uint16(b[14:])
		if tci != uint16(pcp)<<13 {
			t.Fatalf("tag control %#04x, want PCP %d, DEI 0, VID 0", tci, pcp)
		}
		off, tagged = 16, true
	}
	if binary.BigEndian.Uint16(b[off:]) != EtherType || binary.BigEndian.Uint16(b[off+2:]) != Magic {
		t.Fatalf("frame % x: no control EtherType and magic at %d", b[:off+4], off)
	}
	return Type(b[off+5]), tagged
}

// TestPriorityTaggedFrames: with a priority, exactly the fragments, parity
// fragments, requests and replies carry the tag (End markers and Hellos do
// not); every frame fits the MTU; the sizes IntervalBytes, PartBytes and
// ExchangeBytes give are the bytes on the wire; and a receiver accepts,
// authenticates and reassembles them, also with the tag rewritten (it is
// outside the HMAC) and with data fragments lost (parity rebuilds them).
func TestPriorityTaggedFrames(t *testing.T) {
	for _, mtu := range []int{MinMTU, DefaultMTU, 9000} {
		for _, pcp := range []uint8{0, 6} {
			for _, loss := range []float64{0, 0.2} {
				t.Run(fmt.Sprintf("mtu%d/pcp%d/loss%v", mtu, pcp, loss), func(t *testing.T) {
					priorityRoundTrip(t, mtu, pcp, loss)
				})
			}
		}
	}
}

func priorityRoundTrip(t *testing.T, mtu int, pcp uint8, loss float64) {
	const lanes = 2
	s, err := NewSender(SenderConfig{Key: testKey, MTU: mtu, Direction: 1, Priority: PCP(pcp),
		Hello: Hello{IntervalNs: 1e9, ConfigHash: 77, Lanes: lanes, Clock: "CLOCK_REALTIME", MECs: []string{"all", "voice"}, Parts: twoParts}})
	if err != nil {
		t.Fatal(err)
	}
	if s.FragmentSize() != FragmentPayload(mtu)-VLANTagLen || s.FragmentOverhead() != Overhead+VLANTagLen {
		t.Fatalf("fragment size %d overhead %d at MTU %d", s.FragmentSize(), s.FragmentOverhead(), mtu)
	}
	s.SetLoss(loss)
	r := newTestReceiver(t, nil)
	fs := s.FragmentSize()
	for k := uint64(4); k < 7; k++ {
		n := []int{0, fs, 5*fs + 3}[k%3]
		parts := makeParts(k, twoParts, n, n/2+1)
		frames := intervalFrames(t, s, k, parts)
		wire, ends, tagged, parity := 0, 0, 0, 0
		var keep [][]byte
		lostData := 0
		for i, f := range frames {
			if len(f) > EthHeaderLen+mtu {
				t.Fatalf("frame of %d bytes over MTU %d", len(f), mtu)
			}
			wire += len(f)
			typ, tag := rawType(t, f, pcp)
			switch typ {
			case TypeEnd, TypeHello:
				if tag {
					t.Fatalf("%v frame tagged", typ)
				}
				if typ == TypeEnd {
					ends += len(f)
				}
			case TypeFragment, TypeParity:
				if !tag {
					t.Fatalf("%v frame untagged", typ)
				}
				tagged++
				if typ == TypeParity {
					parity++
				}
			default:
				t.Fatalf("frame %d: type %v", i, typ)
			}
			// The tag is outside the HMAC: a bridge rewriting it (another
			// PCP, a VLAN id) changes nothing the receiver checks.
			if tag && i%2 == 0 {
				f = append([]byte(nil), f...)
				binary.BigEndian.PutUint16(f[14:], 0x2000|uint16(i%4000+1))
			}
			// With parity, lose the first data fragment of each part that
			// has parity: the parity must rebuild it (FragIndex is header
			// byte 32, after the 18-byte tagged Ethernet header).
			if typ == TypeFragment && loss > 0 && n > 0 && binary.BigEndian.Uint16(f[18+32:]) == 0 && lostData < 2 {
				lostData++
				continue
			}
			keep = append(keep, f)
		}
		if loss > 0 && n > 0 && (parity == 0 || lostData == 0) {
			t.Fatalf("interval %d: %d parity fragments, %d data fragments lost", k, parity, lostData)
		}
		if tagged == 0 {
			t.Fatal("no tagged frames")
		}
		if want := s.IntervalBytes(lanes, n, n/2+1) - lanes*s.EndBytes(); wire-ends != want {
			t.Fatalf("interval %d: %d bytes besides the End markers, IntervalBytes says %d", k, wire-ends, want)
		}
		consumeAll(t, r, keep, 0)
		b := wantBundle(t, r.Results(nil), s, k, parts)
		if loss == 0 && (b.ControlBytes != wire || b.ControlFrames != len(frames)) {
			t.Fatalf("bundle counts %d frames %d bytes, sent %d %d", b.ControlFrames, b.ControlBytes, len(frames), wire)
		}
	}
	// Requests and replies are tagged too, and sized alike.
	body := payloadFor(9, PartKey{1, KindRDA}, 3*fs)
	for _, typ := range []Type{TypeRequest, TypeReply} {
		frames, err := s.AppendExchange(nil, typ, 5, 1, KindRDA, 0xABCD, uint32(typ), body)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, f := range frames {
			if got, tag := rawType(t, f, pcp); got != typ || !tag || len(f) > EthHeaderLen+mtu {
				t.Fatalf("%v frame: type %v tagged %v, %d bytes", typ, got, tag, len(f))
			}
			total += len(f)
		}
		if got := s.ExchangeBytes(len(body)); got != total {
			t.Fatalf("ExchangeBytes %d, frames %d bytes", got, total)
		}
		consumeAll(t, r, frames, 0)
		xs := r.Exchanges(nil)
		if len(xs) != 1 || xs[0].Type != typ || !bytes.Equal(xs[0].Body, body) || xs[0].Bytes != total {
			t.Fatalf("%v: exchanges %+v", typ, xs)
		}
	}
	if c := r.Counters(); c.Bundles != 3 || c.Failures != 0 || c.BadTag != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// TestPriorityEndRefused: AppendFramePriority refuses to tag an End
// marker (it must stay in the data's queue) and tags what it is asked to.
func TestPriorityEndRefused(t *testing.T) {
	a := mustAuth(t, testKey)
	var e End
	h := Header{Type: TypeEnd, Session: 1, Seq: 1, FragCount: 1}
	if _, err := AppendFramePriority(nil, a, [6]byte{2}, &h, e.AppendBinary(nil), PCP(7)); err == nil {
		t.Fatal("tagged End marker built")
	}
	untagged, err := AppendFramePriority(nil, a, [6]byte{2}, &h, e.AppendBinary(nil), NoPriority)
	if err != nil || len(untagged) != EndFrameLen {
		t.Fatalf("untagged End: %d bytes, %v", len(untagged), err)
	}
	hf := Header{Type: TypeFragment, Session: 1, Seq: 2, FragCount: 1}
	fr, err := AppendFramePriority(nil, a, [6]byte{2}, &hf, []byte("abc"), PCP(5))
	if err != nil || len(fr) != Overhead+VLANTagLen+3 {
		t.Fatalf("tagged fragment: %d bytes, %v", len(fr), err)
	}
	var f Frame
	if err := ParseFrame(fr, &f); err != nil || !a.Verify(&f) || string(f.Payload) != "abc" {
		t.Fatalf("tagged fragment parsed: %v", err)
	}
}

func TestIsControlFrame(t *testing.T) {
	a := mustAuth(t, testKey)
	h := Header{Type: TypeFragment, Session: 1, Seq: 2, FragCount: 1}
	plain, _ := AppendFramePriority(nil, a, [6]byte{2}, &h, nil, NoPriority)
	tagged, _ := AppendFramePriority(nil, a, [6]byte{2}, &h, nil, PCP(5))
	qinq := append(append(append([]byte(nil), tagged[:12]...), 0x88, 0xA8, 0, 7), tagged[12:]...)
	ip := append(append([]byte(nil), plain[:12]...), 0x08, 0)
	vlanIP := append(append(append([]byte(nil), plain[:12]...), 0x81, 0, 0, 5), 0x08, 0)
	for _, c := range []struct {
		b    []byte
		want bool
	}{{plain, true}, {tagged, true}, {qinq, true}, {ip, false}, {vlanIP, false}, {tagged[:15], false}, {nil, false}} {
		if got := IsControlFrame(c.b); got != c.want {
			t.Fatalf("% x: %v", c.b, got)
		}
	}
}
