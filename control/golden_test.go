package control

import (
	"bytes"
	"encoding/hex"
	"flag"
	"testing"
)

// printGolden prints the golden frames this build writes instead of
// checking them: for a deliberate wire change (a new Version).
var printGolden = flag.Bool("print-golden", false, "print the golden control frames instead of checking them")

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
		// A parity fragment (version 2): parity shard 1 of 2 over an
		// LDA part of 30 bytes in 3 data fragments of 12.
		if b, err = AppendFrame(nil, a, src, &Header{Type: TypeParity, Kind: KindLDA, MEC: 0, Session: 0xDEADBEEFCAFEF00D, Interval: 1_763_700_000, Seq: 14,
			FragIndex: 1, FragCount: 3, Direction: 1}, appendParityPayload(nil, 2, 30, []byte("parity shard"))); err != nil {
			t.Fatal(err)
		}
		out[mode+" parity"] = b
	}
	return out
}

var goldenHex = map[string]string{
	"keyed meta fragment":    "034c4441000102000000004288b54c44020300000000deadbeefcafef00d00000000691fed20000000000000000d00000001000100150200000000000000000000000001ac02ffb418dc0b93aed8af0b78f432fd09c55dc4b5714c",
	"keyed request":          "034c4441000102000000004288b54c44020400020001deadbeefcafef00d00000000691fed20000000000000000a0000000200020018123456789abcdef0000000057265717565737420626f64798f3fe34060f397539d4648e8859a48fe",
	"insecure parity":        "034c4441000102000000004288b54c44020601010000deadbeefcafef00d00000000691fed20000000000000000e000100030001001200020000001e70617269747920736861726400000000000000000000000000000000",
	"insecure meta fragment": "034c4441000102000000004288b54c44020301000000deadbeefcafef00d00000000691fed20000000000000000d00000001000100150200000000000000000000000001ac02ffb418dc0b00000000000000000000000000000000",
	"keyed fragment":         "034c4441000102000000004288b54c44020300020001deadbeefcafef00d00000000691fed2000000000000000090002000300020010667261676d656e74207061796c6f6164221259ff4409658761b9a0d9fdfc6633",
	"keyed reply":            "034c4441000102000000004288b54c44020500020001deadbeefcafef00d00000000691fed20000000000000000b0000000200020016123456789abcdef0000000057265706c7920626f647992d5d53b29086c454ecd1d504381e80c",
	"keyed parity":           "034c4441000102000000004288b54c44020600010000deadbeefcafef00d00000000691fed20000000000000000e000100030001001200020000001e706172697479207368617264959e4328702226b4ac1663475876c8f8",
	"insecure hello":         "034c4441000102000000004288b54c44020101000000deadbeefcafef00d00000000691fed200000000000000008000000010001003d1879ebce3db70d15000000003b9aca000123456789abcdef00010e434c4f434b5f5245414c54494d45000203616c6c05766f696365000200000100010200000000000000000000000000000000",
	"insecure fragment":      "034c4441000102000000004288b54c44020301020001deadbeefcafef00d00000000691fed2000000000000000090002000300020010667261676d656e74207061796c6f616400000000000000000000000000000000",
	"keyed end":              "034c4441000102000000004288b54c44020200000000deadbeefcafef00d00000000691fed20000000000000000700000001000100221879ebce365b40001879ebce71f60a00000000000001e2400000000005e30a7800007354b6e672ae0fb6504faa3499e1b983",
	"keyed hello meta":       "034c4441000102000000004288b54c44020100000000deadbeefcafef00d00000000691fed20000000000000000c00000001000100401879ebce3db70d15000000003b9aca000123456789abcdef00010e434c4f434b5f5245414c54494d45000203616c6c05766f6963650003000001000102000000b8f958b54dc5f2ee15af0df67b0c1b1f",
	"insecure request":       "034c4441000102000000004288b54c44020401020001deadbeefcafef00d00000000691fed20000000000000000a0000000200020018123456789abcdef0000000057265717565737420626f647900000000000000000000000000000000",
	"keyed hello":            "034c4441000102000000004288b54c44020100000000deadbeefcafef00d00000000691fed200000000000000008000000010001003d1879ebce3db70d15000000003b9aca000123456789abcdef00010e434c4f434b5f5245414c54494d45000203616c6c05766f69636500020000010001023ce1b066af63f0378a76e9f90eeb24c4",
	"insecure end":           "034c4441000102000000004288b54c44020201000000deadbeefcafef00d00000000691fed20000000000000000700000001000100221879ebce365b40001879ebce71f60a00000000000001e2400000000005e30a78000000000000000000000000000000000000",
	"insecure hello meta":    "034c4441000102000000004288b54c44020101000000deadbeefcafef00d00000000691fed20000000000000000c00000001000100401879ebce3db70d15000000003b9aca000123456789abcdef00010e434c4f434b5f5245414c54494d45000203616c6c05766f696365000300000100010200000000000000000000000000000000000000",
	"insecure reply":         "034c4441000102000000004288b54c44020501020001deadbeefcafef00d00000000691fed20000000000000000b0000000200020016123456789abcdef0000000057265706c7920626f647900000000000000000000000000000000",
}

func TestGoldenControlFrames(t *testing.T) {
	got := goldenFrames(t)
	if len(got) != len(goldenHex) && !*printGolden {
		t.Fatalf("%d frames, %d golden", len(got), len(goldenHex))
	}
	for name, b := range got {
		if *printGolden {
			t.Logf("%q: %q,", name, hex.EncodeToString(b))
			continue
		}
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
		if f.Type == TypeParity {
			if pp, ok := parseParity(&f); !ok || pp.m != 2 || pp.n != 30 || string(pp.shard) != "parity shard" {
				t.Fatalf("%s: golden parity payload does not decode: %+v %v", name, pp, ok)
			}
		}
		if name[:5] == "keyed" && !bytes.Equal(f.Tag, referenceHMAC([]byte("golden key: thirty-two bytes...."), f.Authed)[:TagLen]) {
			t.Fatalf("%s: tag is not the reference HMAC", name)
		}
	}
}
