package synopsis

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
)

// rdaBadEncodings is the table of malformed RDA encodings; it seeds
// FuzzRDAUnmarshal too.
func rdaBadEncodings() map[string][]byte {
	good := MustNewRDA(RDAConfig{Banks: 2, Cells: 4})
	good.Add(7, 1000)
	g, _ := good.AppendBinary(nil)
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(g)) }
	hdr := func(flags, level byte, k, m uint64) []byte {
		b := append([]byte(rdaMagic), rdaVersion, flags, level)
		b = binary.AppendUvarint(b, k)
		b = binary.AppendUvarint(b, m)
		return binary.LittleEndian.AppendUint64(b, 0)
	}
	return map[string][]byte{
		"empty":           {},
		"magic":           mut(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":         mut(func(b []byte) []byte { b[3] = 9; return b }),
		"flags":           mut(func(b []byte) []byte { b[4] = 0x80; return b }),
		"level no cache":  mut(func(b []byte) []byte { b[5] = 3; return b }),
		"level too deep":  hdr(1, 64, 2, 4),
		"zero banks":      hdr(0, 0, 0, 4),
		"17 banks":        hdr(0, 0, 17, 4),
		"one cell":        hdr(0, 0, 2, 1),
		"huge shape":      hdr(0, 0, 16, 1<<22),
		"truncated cells": g[:len(g)-1],
		"trailing":        append(bytes.Clone(g), 0),
		"header only":     g[:14],
		"overlong varint": append(hdr(0, 0, 1, 2), append(append(make([]byte, 16), 0x80, 0x00, 0x00), append(make([]byte, 16), 0, 0)...)...),
		// version 1 had no check field; this is a well-formed version 1
		// encoding of one empty 1×2 RDA.
		"version 1": append(append([]byte(rdaMagic), 1, 0, 0, 1, 2), append(make([]byte, 8), append(append(make([]byte, 8), 0, 0), append(make([]byte, 8), 0, 0)...)...)...),
	}
}

func TestRDAUnmarshalBad(t *testing.T) {
	for name, b := range rdaBadEncodings() {
		t.Run(name, func(t *testing.T) {
			r := MustNewRDA(RDAConfig{Banks: 2, Cells: 8})
			r.Add(1, 2)
			before, _ := r.AppendBinary(nil)
			if err := r.UnmarshalBinary(b); !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("err %v, want ErrBadEncoding", err)
			}
			after, _ := r.AppendBinary(nil)
			if !bytes.Equal(before, after) {
				t.Fatal("failed UnmarshalBinary changed the RDA")
			}
		})
	}
}

// FuzzRDAUnmarshal: any bytes either fail cleanly or decode to an RDA
// that re-encodes to the same bytes (encodings are canonical), and whose
// peeling and estimate terminate without panicking.
func FuzzRDAUnmarshal(f *testing.F) {
	for _, b := range rdaBadEncodings() {
		f.Add(b)
	}
	s := MustNewRDA(RDAConfig{Banks: 3, Cells: 8, CacheBudget: TSCacheMinBudget})
	for i := uint64(1); i < 40; i++ {
		s.Add(Remix(i, 1), 1_763_700_000_000_000_000+i*977)
	}
	g, _ := s.AppendBinary(nil)
	f.Add(g)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r RDA
		if err := r.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error %v does not wrap ErrBadEncoding", err)
			}
			return
		}
		again, err := r.AppendBinary(nil)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("round trip changed the bytes:\n%x\n%x", b, again)
		}
		other := MustNewRDA(RDAConfig{Banks: r.Banks(), Cells: r.Cells()})
		e, st, err := EstimateRDA(&r, other, 0)
		if err != nil {
			t.Fatal(err)
		}
		if e.Valid && st.Exact && !st.BankTotalsAgree {
			t.Fatal("valid exact estimate with disagreeing banks")
		}
		if st.SetDifference > 2*len(r.cells)+16 {
			t.Fatalf("peeling ran past its bound: %d", st.SetDifference)
		}
	})
}

var tsWireIDs = []uint64{1, 2, 0, 1 << 63}

// tsWireBad is the table of malformed timestamp requests and replies (for
// tsWireIDs); it seeds FuzzTimestampWire too.
func tsWireBad() map[string][]byte {
	c, _ := NewTSCache(TSCacheMinBudget)
	c.TrackFlows()
	c.InsertFlow(1, 77, 500)
	c.InsertFlow(0, 0, 400)
	req := AppendTimestampRequest(nil, tsWireIDs)
	rep := c.AppendReply(nil, tsWireIDs)
	rep1 := c.AppendReplyVersion(nil, tsWireIDs, 1)
	other := c.AppendReply(nil, []uint64{1, 2, 3, 4})
	return map[string][]byte{
		"empty":               {},
		"request magic":       append([]byte{'X'}, req[1:]...),
		"request version":     append([]byte{'Q', 3}, req[2:]...),
		"request version 0":   append([]byte{'Q', 0}, req[2:]...),
		"reply version":       append([]byte{'A', 3}, rep[2:]...),
		"reply v2 as v1":      append([]byte{'A', 1}, rep[2:]...),
		"reply v1 as v2":      append([]byte{'A', 2}, rep1[2:]...),
		"reply v2 cut flow":   rep[:len(rep)-3],
		"reply flags":         append([]byte{'A', 2, 3}, rep[3:]...),
		"reply no flags":      {'A', 2},
		"request huge count":  {'Q', 2, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"request truncated":   req[:len(req)-1],
		"request trailing":    append(bytes.Clone(req), 0),
		"request overlong":    {'Q', 1, 0x80, 0x00},
		"reply magic":         append([]byte{'Q'}, rep[1:]...),
		"reply short header":  rep[:10],
		"reply wrong count":   {'A', 1, 4},
		"reply other request": other,
		"reply truncated":     rep[:len(rep)-1],
		"reply trailing":      append(bytes.Clone(rep), 0),
	}
}

func TestTimestampWireBad(t *testing.T) {
	ts := make([]uint64, len(tsWireIDs))
	ok := make([]bool, len(tsWireIDs))
	for name, b := range tsWireBad() {
		_, errQ := ParseTimestampRequest(b)
		errA := ParseReply(b, tsWireIDs, ts, ok)
		if !errors.Is(errQ, ErrBadEncoding) || !errors.Is(errA, ErrBadEncoding) {
			t.Errorf("%s: request err %v, reply err %v", name, errQ, errA)
		}
		var r RDA
		if err := r.AddRemoteTimestamps(b, tsWireIDs); err == nil || r.Cache() != nil {
			t.Errorf("%s: AddRemoteTimestamps accepted it or changed the RDA", name)
		}
	}
}

// FuzzTimestampWire: requests and replies from arbitrary bytes fail
// cleanly or round trip.
func FuzzTimestampWire(f *testing.F) {
	ids := tsWireIDs
	c, _ := NewTSCache(TSCacheMinBudget)
	c.TrackFlows()
	c.InsertFlow(1, 77, 500)
	c.InsertFlow(0, 0, 400)
	f.Add(AppendTimestampRequest(nil, ids))
	f.Add(AppendTimestampRequestVersion(nil, ids, 1))
	f.Add(c.AppendReply(nil, ids))
	f.Add(c.AppendReplyVersion(nil, ids, 1))
	for _, b := range tsWireBad() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if req, v, err := ParseTimestampRequestVersion(b); err == nil {
			if !bytes.Equal(AppendTimestampRequestVersion(nil, req, v), b) {
				t.Fatal("request round trip changed the bytes")
			}
		} else if !errors.Is(err, ErrBadEncoding) {
			t.Fatal(err)
		}
		ts := make([]uint64, len(ids))
		fh := make([]uint64, len(ids))
		ok := make([]bool, len(ids))
		flows, err := ParseReplyFlows(b, ids, ts, fh, ok)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatal(err)
			}
			return
		}
		if flows != (b[1] == 2 && b[2] == 1) {
			t.Fatalf("version %d reply: flows %v", b[1], flows)
		}
		// A cache holding what the reply says answers the same, flows
		// included.
		fc, _ := NewTSCache(TSCacheMinBudget)
		if flows {
			fc.TrackFlows()
		}
		for i, id := range ids {
			if ok[i] {
				fc.InsertFlow(id, fh[i], ts[i])
			}
		}
		ts3, fh3, ok3 := make([]uint64, len(ids)), make([]uint64, len(ids)), make([]bool, len(ids))
		if _, err := ParseReplyFlows(fc.AppendReplyVersion(nil, ids, b[1]), ids, ts3, fh3, ok3); err != nil {
			t.Fatal(err)
		}
		for i := range ids {
			if ok3[i] && (!ok[i] || ts3[i] != ts[i] || fh3[i] != fh[i]) {
				t.Fatalf("id %d: re-encoded %v/%v/%v, first %v/%v/%v", ids[i], ts3[i], fh3[i], ok3[i], ts[i], fh[i], ok[i])
			}
		}
		var r RDA
		if err := r.AddRemoteTimestamps(b, ids); err != nil {
			t.Fatalf("parsed reply refused: %v", err)
		}
		for i, id := range ids {
			got, found := r.Cache().Lookup(id)
			if found != ok[i] || (found && got != ts[i]) {
				t.Fatalf("id %d: cache %v/%v, reply %v/%v", id, got, found, ts[i], ok[i])
			}
		}
		// Re-encoded from the cache, the reply says the same (its base
		// may differ: any base is valid).
		ts2 := make([]uint64, len(ids))
		ok2 := make([]bool, len(ids))
		if err := ParseReply(r.Cache().AppendReply(nil, ids), ids, ts2, ok2); err != nil {
			t.Fatal(err)
		}
		for i := range ids {
			if ok2[i] != ok[i] || ok[i] && ts2[i] != ts[i] && ts[i]-ts2[i] != 0 {
				// A timestamp exactly 2^64−1 above the smallest one cannot
				// be sent; it is reported as not cached, never as wrong.
				if !(ok[i] && !ok2[i]) {
					t.Fatalf("id %d: re-encoded %v/%v, first %v/%v", ids[i], ts2[i], ok2[i], ts[i], ok[i])
				}
			}
		}
	})
}

// TestTimestampWireGolden pins the bytes of both versions of a request
// and a reply (docs/protocol.md): an id of every width, one not cached,
// and the flow hashes of version 2.
func TestTimestampWireGolden(t *testing.T) {
	c, _ := NewTSCache(TSCacheMinBudget)
	c.TrackFlows()
	c.InsertFlow(1, 0x1122334455667788, 1000)
	c.InsertFlow(1<<63, 0, 1300)
	c.InsertFlow(0, 9, 1200)
	ids := []uint64{1, 2, 0, 1 << 63}
	plain, _ := NewTSCache(TSCacheMinBudget) // no LDS: no flows
	plain.Insert(1, 1000)
	plain.Insert(1<<63, 1300)
	plain.Insert(0, 1200)
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"request v1":         {AppendTimestampRequestVersion(nil, ids, 1), "5101040100000000000000020000000000000000000000000000000000000000000080"},
		"request v2":         {AppendTimestampRequest(nil, ids), "5102040100000000000000020000000000000000000000000000000000000000000080"},
		"reply v1":           {c.AppendReplyVersion(nil, ids, 1), "41010432944c63376736b9e8030000000000000100c901ad02"},
		"reply v2":           {c.AppendReply(nil, ids), "4102010432944c63376736b9e80300000000000001887766554433221100c9010900000000000000ad020000000000000000"},
		"reply v2, no flows": {plain.AppendReply(nil, ids), "4102000432944c63376736b9e8030000000000000100c901ad02"},
	} {
		if got := hex.EncodeToString(tc.b); got != tc.want {
			t.Errorf("%s: %s, want %s", name, got, tc.want)
		}
	}
}
