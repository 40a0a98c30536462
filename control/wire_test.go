package control

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

var testKey = bytes.Repeat([]byte{0xA5}, KeyLen)

func mustAuth(t testing.TB, key []byte) *Authenticator {
	t.Helper()
	a, err := NewAuthenticator(key)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// validFrame builds one fragment frame with a payload for the malformed table.
func validFrame(t testing.TB, payload []byte) []byte {
	h := Header{Type: TypeFragment, Kind: KindLDA, MEC: 3, Session: 0x1122334455667788, Interval: 42, Seq: 7,
		FragIndex: 1, FragCount: 3, Direction: 2}
	b, err := AppendFrame(nil, mustAuth(t, testKey), [6]byte{2, 0, 0, 0, 0, 1}, &h, payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAppendParseRoundTrip(t *testing.T) {
	payload := []byte("synopsis bytes")
	b := validFrame(t, payload)
	if len(b) != Overhead+len(payload) {
		t.Fatalf("frame is %d bytes, want %d", len(b), Overhead+len(payload))
	}
	if !bytes.Equal(b[:6], DstMAC[:]) || binary.BigEndian.Uint16(b[12:]) != EtherType {
		t.Fatalf("ethernet header % x", b[:14])
	}
	var f Frame
	if err := ParseFrame(b, &f); err != nil {
		t.Fatal(err)
	}
	want := Header{Type: TypeFragment, Kind: KindLDA, MEC: 3, Session: 0x1122334455667788, Interval: 42, Seq: 7,
		FragIndex: 1, FragCount: 3, Direction: 2, PayloadLen: uint16(len(payload))}
	if f.Header != want {
		t.Fatalf("header %+v, want %+v", f.Header, want)
	}
	if !bytes.Equal(f.Payload, payload) || f.SrcMAC != [6]byte{2, 0, 0, 0, 0, 1} {
		t.Fatalf("payload %q src %x", f.Payload, f.SrcMAC)
	}
	if !mustAuth(t, testKey).Verify(&f) {
		t.Fatal("tag does not verify")
	}
	// Bytes after the tag (padding, a kept FCS) are ignored.
	if err := ParseFrame(append(append([]byte(nil), b...), 1, 2, 3, 4), &f); err != nil || !bytes.Equal(f.Payload, payload) {
		t.Fatalf("trailing bytes: %v", err)
	}
	// Up to MaxVLANTags tags (802.1Q, 802.1ad, QinQ 0x9100) in front of the
	// EtherType are skipped, as the classifier skips them, and the tag
	// still verifies: the Ethernet header is not authenticated.
	vlans := [][]byte{{0x81, 0x00, 0x00, 0x0A}, {0x88, 0xA8, 0x00, 0x64, 0x81, 0x00, 0x00, 0x0A},
		{0x91, 0x00, 0x00, 0x01, 0x88, 0xA8, 0x00, 0x64, 0x81, 0x00, 0x00, 0x0A}}
	var many []byte
	for i := 0; i < MaxVLANTags; i++ {
		many = append(many, []byte{0x81, 0x00, 0x00, byte(i)}...)
	}
	for _, tags := range append(vlans, many) {
		v := append(append(append([]byte(nil), b[:12]...), tags...), b[12:]...)
		if err := ParseFrame(v, &f); err != nil {
			t.Fatalf("vlan %x: %v", tags, err)
		}
		if f.Header != want || !mustAuth(t, testKey).Verify(&f) {
			t.Fatalf("vlan %x: header %+v", tags, f.Header)
		}
	}
}

func TestAppendFrameRejectsInvalidHeader(t *testing.T) {
	a := mustAuth(t, testKey)
	for _, tt := range []struct {
		name    string
		h       Header
		payload []byte
	}{
		{"seq 0", Header{Type: TypeFragment, FragCount: 1}, nil},
		{"type 0", Header{Seq: 1, FragCount: 1}, nil},
		{"index ≥ count", Header{Type: TypeFragment, Seq: 1, FragIndex: 2, FragCount: 2}, nil},
		{"count 0", Header{Type: TypeFragment, Seq: 1}, nil},
		{"end with mec", Header{Type: TypeEnd, Seq: 1, FragCount: 1, MEC: 1}, make([]byte, EndPayloadLen)},
		{"end short payload", Header{Type: TypeEnd, Seq: 1, FragCount: 1}, make([]byte, 3)},
		{"unknown kind", Header{Type: TypeFragment, Seq: 1, FragCount: 1, Kind: 9}, nil},
		{"unknown flag", Header{Type: TypeFragment, Seq: 1, FragCount: 1, Flags: 0x80}, nil},
		{"payload too long", Header{Type: TypeFragment, Seq: 1, FragCount: 1}, make([]byte, 1<<16)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte{9}
			out, err := AppendFrame(dst, a, [6]byte{}, &tt.h, tt.payload)
			if !errors.Is(err, ErrBadHeader) || len(out) != 1 {
				t.Fatalf("err %v, len %d", err, len(out))
			}
		})
	}
}

// malformedFrames is the table of bad inputs for TestParseFrameMalformed and
// the seeds of FuzzParseFrame.
func malformedFrames(t testing.TB) []struct {
	name string
	b    []byte
	err  error
} {
	good := validFrame(t, []byte("0123456789"))
	mod := func(off int, v byte) []byte {
		b := append([]byte(nil), good...)
		b[off] = v
		return b
	}
	setU16 := func(off int, v uint16) []byte {
		b := append([]byte(nil), good...)
		binary.BigEndian.PutUint16(b[off:], v)
		return b
	}
	h := EthHeaderLen
	return []struct {
		name string
		b    []byte
		err  error
	}{
		{"empty", nil, ErrTruncated},
		{"short ethernet", good[:13], ErrTruncated},
		{"ethernet only", good[:14], ErrTruncated},
		{"header cut", good[:h+HeaderLen-1], ErrTruncated},
		{"tag cut", good[:len(good)-1], ErrTruncated},
		{"payload cut", good[:h+HeaderLen+5], ErrTruncated},
		{"ipv4 ethertype", setU16(12, 0x0800), ErrNotControl},
		{"vlan then ipv4", append(append(append([]byte(nil), good[:12]...), 0x81, 0, 0, 1, 0x08, 0), good[14:]...), ErrNotControl},
		{"vlan cut", append(append([]byte(nil), good[:12]...), 0x81, 0, 0, 1, 0x88), ErrTruncated},
		{"nine vlan tags", append(append(append([]byte(nil), good[:12]...), bytes.Repeat([]byte{0x81, 0, 0, 1}, MaxVLANTags+1)...), good[12:]...), ErrNotControl},
		{"bad magic", mod(h, 'X'), ErrBadMagic},
		{"version 0", mod(h+2, 0), ErrBadVersion},
		{"version 1", mod(h+2, 1), ErrBadVersion},
		{"version 3", mod(h+2, 3), ErrBadVersion},
		{"type 0", mod(h+3, 0), ErrBadHeader},
		{"type 7", mod(h+3, 7), ErrBadHeader},
		{"request shorter than its prefix", mod(h+3, byte(TypeRequest)), ErrBadPayload},
		{"unknown flag", mod(h+4, 0x02), ErrBadHeader},
		{"kind 5", mod(h+5, 5), ErrBadHeader},
		{"seq 0", func() []byte { b := append([]byte(nil), good...); clear(b[h+24 : h+32]); return b }(), ErrBadHeader},
		{"index = count", setU16(h+32, 3), ErrBadHeader},
		{"count 0", setU16(h+34, 0), ErrBadHeader},
		{"payload length past end", setU16(h+38, 0xFFFF), ErrTruncated},
		{"end with fragment fields", mod(h+3, byte(TypeEnd)), ErrBadHeader},
	}
}

func TestParseFrameMalformed(t *testing.T) {
	for _, tt := range malformedFrames(t) {
		t.Run(tt.name, func(t *testing.T) {
			var f Frame
			if err := ParseFrame(tt.b, &f); !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
		})
	}
}

func TestEndRoundTrip(t *testing.T) {
	e := End{StartNs: 1_700_000_000_000_000_000, EndNs: 1_700_000_001_000_000_000, Frames: 123456, Bytes: 99 << 20, Lane: 3}
	p := e.AppendBinary(nil)
	if len(p) != EndPayloadLen {
		t.Fatalf("payload %d bytes", len(p))
	}
	var d End
	if err := d.UnmarshalBinary(p); err != nil || !reflect.DeepEqual(d, e) {
		t.Fatalf("%+v %v", d, err)
	}
	bad := End{StartNs: 10, EndNs: 9}
	keep := d
	if err := d.UnmarshalBinary(bad.AppendBinary(nil)); err == nil || !reflect.DeepEqual(d, keep) {
		t.Fatalf("end before start accepted: %v", err)
	}
	if err := d.UnmarshalBinary(p[:EndPayloadLen-1]); err == nil {
		t.Fatal("short payload accepted")
	}
}

// TestEndClassCounts: an End marker with per-class counts round-trips,
// and one whose counts are truncated, padded, non-canonical or disagree
// with its total is refused, leaving the End unchanged.
func TestEndClassCounts(t *testing.T) {
	e := End{StartNs: 1, EndNs: 2, Frames: 1000 + 5 + 0 + 300000, Bytes: 7, Lane: 1, Classes: []uint64{1000, 5, 0, 300000}}
	p := e.AppendBinary(nil)
	if len(p) != e.EndLen() || len(p) != EndPayloadLen+1+2+1+1+3 {
		t.Fatalf("payload %d bytes, EndLen %d", len(p), e.EndLen())
	}
	var d End
	if err := d.UnmarshalBinary(p); err != nil || !reflect.DeepEqual(d, e) {
		t.Fatalf("%+v %v", d, err)
	}
	keep := d
	wrongSum := e
	wrongSum.Frames++
	for name, b := range map[string][]byte{
		"truncated":     p[:len(p)-1],
		"trailing byte": append(append([]byte{}, p...), 0),
		"sum differs":   wrongSum.AppendBinary(nil),
		"zero classes":  append(append([]byte{}, p[:EndPayloadLen]...), 0, 0),
		"non-canonical": append(append(append([]byte{}, p[:EndPayloadLen]...), 0x81, 0x00), 0),
		"count only":    append(append([]byte{}, p[:EndPayloadLen]...), 1),
	} {
		if err := d.UnmarshalBinary(b); err == nil || !reflect.DeepEqual(d, keep) {
			t.Errorf("%s: accepted (%v) or changed the End: %+v", name, err, d)
		}
	}
	// Through a whole frame: AppendEnd carries the counts when they fit
	// the MTU and drops them (the total stays) when they do not.
	for _, tc := range []struct {
		mtu, classes int
		want         bool
	}{{1500, 4, true}, {MinMTU, 100, false}, {1500, MaxEndClasses + 1, false}} {
		s, err := NewSender(SenderConfig{Key: testKey, Hello: testHello(), Session: 7, MTU: tc.mtu})
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.NewEndWriter(0)
		if err != nil {
			t.Fatal(err)
		}
		x := End{StartNs: 1, EndNs: 2, Classes: make([]uint64, tc.classes)}
		for m := range x.Classes {
			x.Classes[m] = 1 << 33 // 5 bytes each
			x.Frames += 1 << 33
		}
		buf := w.AppendEnd(make([]byte, 0, EndFrameLenFor(tc.classes)), 9, &x)
		if len(buf) > EthHeaderLen+tc.mtu {
			t.Fatalf("mtu %d: End frame %d bytes", tc.mtu, len(buf))
		}
		var f Frame
		if err := ParseFrame(buf, &f); err != nil {
			t.Fatalf("mtu %d classes %d: %v", tc.mtu, tc.classes, err)
		}
		var got End
		if err := got.UnmarshalBinary(f.Payload); err != nil {
			t.Fatal(err)
		}
		if (got.Classes != nil) != tc.want || got.Frames != x.Frames || len(x.Classes) != tc.classes {
			t.Errorf("mtu %d classes %d: counts carried %v (want %v), frames %d", tc.mtu, tc.classes, got.Classes != nil, tc.want, got.Frames)
		}
	}
}

func testHello() Hello {
	return Hello{SentNs: 5, IntervalNs: 1e9, ConfigHash: 0xDEADBEEF, Lanes: 2, Clock: "CLOCK_REALTIME",
		MECs:  []string{"all", "voice"},
		Parts: []PartKey{{0, KindLDA}, {0, KindLDS}, {1, KindLDA}}}
}

func TestHelloRoundTrip(t *testing.T) {
	h := testHello()
	p, err := h.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var d Hello
	if err := d.UnmarshalBinary(p); err != nil {
		t.Fatal(err)
	}
	q, _ := d.AppendBinary(nil)
	if !bytes.Equal(p, q) || d.Clock != h.Clock || len(d.MECs) != 2 || d.Parts[2] != h.Parts[2] {
		t.Fatalf("%+v", d)
	}
	for i := 0; i < len(p); i++ {
		if err := d.UnmarshalBinary(p[:i]); err == nil {
			t.Fatalf("prefix of %d bytes accepted", i)
		}
	}
	if err := d.UnmarshalBinary(append(p, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	for _, bad := range []Hello{
		{IntervalNs: 0, Lanes: 1, MECs: []string{"all"}},
		{IntervalNs: 1, Lanes: 0, MECs: []string{"all"}},
		{IntervalNs: 1, Lanes: 1},
		{IntervalNs: 1, Lanes: 1, MECs: []string{""}},
		{IntervalNs: 1, Lanes: 1, MECs: []string{"all"}, Parts: []PartKey{{1, KindLDA}}},
		{IntervalNs: 1, Lanes: 1, MECs: []string{"all"}, Parts: []PartKey{{0, 7}}},
		{IntervalNs: 1, Lanes: 1, MECs: []string{"all"}, Parts: []PartKey{{0, KindLDA}, {0, KindLDA}}},
	} {
		if _, err := bad.AppendBinary(nil); err == nil {
			t.Errorf("hello %+v accepted", bad)
		}
	}
}

func TestEndFrameZeroAlloc(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, nil)
	w, err := s.NewEndWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, EndFrameLen)
	verify := mustAuth(t, testKey)
	e := End{StartNs: 1, EndNs: 2, Frames: 3}
	var f Frame
	var k uint64
	allocs := testing.AllocsPerRun(1000, func() {
		k++
		buf = w.AppendEnd(buf[:0], k, &e)
		if err := ParseFrame(buf, &f); err != nil || !verify.Verify(&f) {
			panic("end frame does not parse")
		}
		var d End
		if d.UnmarshalBinary(f.Payload) != nil {
			panic("end payload")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per End append+parse+verify", allocs)
	}
	if len(buf) != EndFrameLen || f.Interval != k || f.Type != TypeEnd {
		t.Fatalf("len %d interval %d", len(buf), f.Interval)
	}
	// The malformed path returns package-level errors: no allocation either.
	bad := buf[:20]
	allocs = testing.AllocsPerRun(100, func() {
		if ParseFrame(bad, &f) == nil {
			panic("truncated accepted")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per rejected parse", allocs)
	}
}
