package control

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// Golden control frames: the bytes of an End, a Hello, a fragment, a
// request and a reply for
// fixed inputs, keyed and insecure. Two appliances of different versions
// must agree on these bytes; a change to the encoder and the decoder
// together passes every round-trip test, but not this one. If the wire
// format changes on purpose, Version must change too (docs/protocol.md §9).
func goldenFrames(t testing.TB) map[string][]byte {
	key := []byte("golden key: thirty-two bytes....")
	hello := Hello{SentNs: 1_763_700_000_123_456_789, IntervalNs: 1e9, ConfigHash: 0x0123456789ABCDEF, Lanes: 1,
		Clock: "CLOCK_REALTIME", MECs: []string{"all", "voice"}, Parts: []PartKey{{0, KindLDA}, {1, KindRDA}}}
	src := [6]byte{0x02, 0, 0, 0, 0, 0x42}
	out := map[string][]byte{}
	for _, mode := range []string{"keyed", "insecure"} {
		k := key
		if mode == "insecure" {
			k = nil
		}
		a, err := NewAuthenticator(k)
		if err != nil {
			t.Fatal(err)
		}
		end := End{StartNs: 1_763_700_000_000_000_000, EndNs: 1_763_700_001_000_000_000, Frames: 123456, Bytes: 98765432, Lane: 0}
		b, err := AppendFrame(nil, a, src, &Header{Type: TypeEnd, Session: 0xDEADBEEFCAFEF00D, Interval: 1_763_700_000, Seq: 7, FragCount: 1, Direction: 1}, end.AppendBinary(nil))
		if err != nil {
			t.Fatal(err)
		}
		out[mode+" end"] = b
		hp, _ := hello.AppendBinary(nil)
		if b, err = AppendFrame(nil, a, src, &Header{Type: TypeHello, Session: 0xDEADBEEFCAFEF00D, Interval: 1_763_700_000, Seq: 8, FragCount: 1, Direction: 1}, hp); err != nil {
			t.Fatal(err)
		}
		out[mode+" hello"] = b
		if b, err = AppendFrame(nil, a, src, &Header{Type: TypeFragment, Kind: KindRDA, MEC: 1, Session: 0xDEADBEEFCAFEF00D, Interval: 1_763_700_000, Seq: 9,
			FragIndex: 2, FragCount: 3, Direction: 2}, []byte("fragment payload")); err != nil {
			t.Fatal(err)
		}
		out[mode+" fragment"] = b
		// A per-interval payload of kind meta (the appliance's clock
		// part), announced in the Hello like a synopsis: a receiver that
		// does not read it reassembles and ignores it.
		hm := hello
		hm.Parts = append(append([]PartKey(nil), hello.Parts...), PartKey{0, KindMeta})
		hp, _ = hm.AppendBinary(nil)
		if b, err = AppendFrame(nil, a, src, &Header{Type: TypeHello, Session: 0xDEADBEEFCAFEF00D, Interval: 1_763_700_000, Seq: 12, FragCount: 1, Direction: 1}, hp); err != nil {
			t.Fatal(err)
		}
		out[mode+" hello meta"] = b
		if b, err = AppendFrame(nil, a, src, &Header{Type: TypeFragment, Kind: KindMeta, MEC: 0, Session: 0xDEADBEEFCAFEF00D, Interval: 1_763_700_000, Seq: 13,
			FragIndex: 0, FragCount: 1, Direction: 1}, []byte{0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xac, 0x02, 0xff, 0xb4, 0x18, 0xdc, 0x0b}); err != nil {
			t.Fatal(err)
		}
		out[mode+" meta fragment"] = b
		for _, x := range []struct {
			name string
			t    Type
			seq  uint64
			body string
		}{{"request", TypeRequest, 10, "request body"}, {"reply", TypeReply, 11, "reply body"}} {
			p := append([]byte{0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0, 0, 0, 0, 5}, x.body...)
			if b, err = AppendFrame(nil, a, src, &Header{Type: x.t, Kind: KindRDA, MEC: 1, Session: 0xDEADBEEFCAFEF00D, Interval: 1_763_700_000, Seq: x.seq,
				FragIndex: 0, FragCount: 2, Direction: 2}, p); err != nil {
				t.Fatal(err)
			}
			out[mode+" "+x.name] = b
		}
	}
	return out
}

var goldenHex = map[string]string{
	"insecure hello meta":    "034c4441000102000000004288b54c44010101000000deadbeefcafef00d00000000691fed20000000000000000c00000001000100401879ebce3db70d15000000003b9aca000123456789abcdef00010e434c4f434b5f5245414c54494d45000203616c6c05766f696365000300000100010200000000000000000000000000000000000000",
	"insecure meta fragment": "034c4441000102000000004288b54c44010301000000deadbeefcafef00d00000000691fed20000000000000000d00000001000100150200000000000000000000000001ac02ffb418dc0b00000000000000000000000000000000",
	"keyed hello meta":       "034c4441000102000000004288b54c44010100000000deadbeefcafef00d00000000691fed20000000000000000c00000001000100401879ebce3db70d15000000003b9aca000123456789abcdef00010e434c4f434b5f5245414c54494d45000203616c6c05766f69636500030000010001020000005a13cb138f051fc17e327a665c070ed1",
	"keyed meta fragment":    "034c4441000102000000004288b54c44010300000000deadbeefcafef00d00000000691fed20000000000000000d00000001000100150200000000000000000000000001ac02ffb418dc0b077c8e0e03cfcd2f879bab0a49803c1b",
	"keyed end":              "034c4441000102000000004288b54c44010200000000deadbeefcafef00d00000000691fed20000000000000000700000001000100221879ebce365b40001879ebce71f60a00000000000001e2400000000005e30a780000cb9ebbce7bf9c8eb4169d556ae90c52e",
	"keyed hello":            "034c4441000102000000004288b54c44010100000000deadbeefcafef00d00000000691fed200000000000000008000000010001003d1879ebce3db70d15000000003b9aca000123456789abcdef00010e434c4f434b5f5245414c54494d45000203616c6c05766f6963650002000001000102a8fdd1a34d453281bfdc5703cb975e24",
	"keyed fragment":         "034c4441000102000000004288b54c44010300020001deadbeefcafef00d00000000691fed2000000000000000090002000300020010667261676d656e74207061796c6f616480ec86b288682da2b241b63847df8287",
	"insecure end":           "034c4441000102000000004288b54c44010201000000deadbeefcafef00d00000000691fed20000000000000000700000001000100221879ebce365b40001879ebce71f60a00000000000001e2400000000005e30a78000000000000000000000000000000000000",
	"insecure hello":         "034c4441000102000000004288b54c44010101000000deadbeefcafef00d00000000691fed200000000000000008000000010001003d1879ebce3db70d15000000003b9aca000123456789abcdef00010e434c4f434b5f5245414c54494d45000203616c6c05766f696365000200000100010200000000000000000000000000000000",
	"insecure fragment":      "034c4441000102000000004288b54c44010301020001deadbeefcafef00d00000000691fed2000000000000000090002000300020010667261676d656e74207061796c6f616400000000000000000000000000000000",
	"keyed request":          "034c4441000102000000004288b54c44010400020001deadbeefcafef00d00000000691fed20000000000000000a0000000200020018123456789abcdef0000000057265717565737420626f64790079b9985788d9061c443c85665ef8f6",
	"keyed reply":            "034c4441000102000000004288b54c44010500020001deadbeefcafef00d00000000691fed20000000000000000b0000000200020016123456789abcdef0000000057265706c7920626f647965b088b3326024330c7a009a9ddd1628",
	"insecure request":       "034c4441000102000000004288b54c44010401020001deadbeefcafef00d00000000691fed20000000000000000a0000000200020018123456789abcdef0000000057265717565737420626f647900000000000000000000000000000000",
	"insecure reply":         "034c4441000102000000004288b54c44010501020001deadbeefcafef00d00000000691fed20000000000000000b0000000200020016123456789abcdef0000000057265706c7920626f647900000000000000000000000000000000",
}

func TestGoldenControlFrames(t *testing.T) {
	got := goldenFrames(t)
	if len(got) != len(goldenHex) {
		t.Fatalf("%d frames, %d golden", len(got), len(goldenHex))
	}
	for name, b := range got {
		want, err := hex.DecodeString(goldenHex[name])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s:\n got %x\nwant %x", name, b, want)
		}
		// And the decoder reads the golden bytes back.
		var f Frame
		if err := ParseFrame(want, &f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		a, _ := NewAuthenticator(nil)
		if name[:5] == "keyed" {
			a, _ = NewAuthenticator([]byte("golden key: thirty-two bytes...."))
		}
		if !a.Verify(&f) || f.Session != 0xDEADBEEFCAFEF00D || f.Interval != 1_763_700_000 {
			t.Fatalf("%s: golden bytes do not parse and verify: %+v", name, f.Header)
		}
		// The keyed tag is HMAC-SHA256-128 as RFC 2104 defines it.
		if name[:5] == "keyed" && !bytes.Equal(f.Tag, referenceHMAC([]byte("golden key: thirty-two bytes...."), f.Authed)[:TagLen]) {
			t.Fatalf("%s: tag is not the reference HMAC", name)
		}
	}
}
