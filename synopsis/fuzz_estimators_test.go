package synopsis

import (
	"encoding/binary"
	"math"
	"testing"
)

// The estimators on adversarial sender/receiver pairs. The receiver's
// synopsis is ours; the sender's arrives on the wire, so it may be
// anything an authentic peer (a key holder, or anyone under --insecure) or
// a bug puts there. The fuzzer picks the packets each side recorded —
// identities, timestamps up to 2^64−1, packets at one side only, repeats —
// and may flip bytes of the sender's encoding before it is decoded. No
// estimator may panic, and none may report a NaN or an infinity as valid.

// fuzzPackets turns fuzz bytes into packets: 9 bytes each — an identity
// byte (few distinct identities, so repeats and cell collisions happen), a
// side selector and a 7-byte timestamp scaled by a shift from the
// selector's high bits (so huge timestamps and tiny delays both occur).
func fuzzPackets(b []byte, add func(h, tsSnd, tsRcv uint64, snd, rcv bool)) (rest []byte) {
	for len(b) >= 9 {
		id, sel := uint64(b[0]), b[1]
		ts := binary.LittleEndian.Uint64(append(b[2:9:9], 0)) << (sel >> 4 * 4 % 64)
		delay := uint64(sel&0x0F) * 977
		h := Remix(id+1, 0x5eed)
		switch sel & 3 {
		case 0: // both sides
			add(h, ts, ts+delay, true, true)
		case 1: // sender only: lost
			add(h, ts, 0, true, false)
		case 2: // receiver only: not sent, or a stray
			add(h, 0, ts+delay, false, true)
		default: // both, the receiver earlier than the sender (clock offset)
			add(h, ts+delay, ts, true, true)
		}
		b = b[9:]
	}
	return b
}

// flip applies the remaining fuzz bytes as (offset, xor) pairs to enc.
func flip(enc, ops []byte) []byte {
	for len(ops) >= 3 && len(enc) > 0 {
		i := int(binary.LittleEndian.Uint16(ops)) % len(enc)
		enc[i] ^= ops[2]
		ops = ops[3:]
	}
	return enc
}

func finiteEstimate(t *testing.T, what string, e Estimate) {
	t.Helper()
	if !e.Valid {
		// Every reason has its typed cause: the reports' verdicts and
		// metric labels take the code, not the text.
		if e.Code == 0 || e.Reason == "" {
			t.Fatalf("%s: invalid estimate without its code and reason: code %v, reason %q", what, e.Code, e.Reason)
		}
		return
	}
	if e.Code != 0 {
		t.Fatalf("%s: valid estimate with a code: %v", what, e.Code)
	}
	for _, v := range []float64{e.MeanNs, e.StddevNs, e.MeanCINs} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s: valid estimate with a non-finite number: %+v", what, e)
		}
	}
	if e.Lost > e.Sent {
		t.Fatalf("%s: valid estimate lost %d of %d sent", what, e.Lost, e.Sent)
	}
}

// split cuts the fuzz input into the packet part and the flip part at a
// length given by its first byte.
func split(b []byte) (pk, ops []byte) {
	if len(b) == 0 {
		return nil, nil
	}
	n := min(int(b[0])*9, len(b)-1)
	return b[1 : 1+n], b[1+n:]
}

func estimatorSeeds(f *testing.F) {
	f.Add([]byte{3, 1, 0, 1, 2, 3, 4, 5, 6, 7, 2, 0x11, 1, 2, 3, 4, 5, 6, 7, 3, 0xF2, 9, 9, 9, 9, 9, 9, 9})
	f.Add([]byte{2, 1, 0xF0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 1, 0xF3, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{1, 5, 0, 1, 0, 0, 0, 0, 0, 0, 7, 0, 0x40})
}

func FuzzEstimateLDACompactAdversarial(f *testing.F) {
	estimatorSeeds(f)
	cfg := LDAConfig{Banks: []BankConfig{{Rows: 8, SampleLog2: 0}, {Rows: 8, SampleLog2: 2}}}
	bounds := CompactBounds{MinDelayNs: -1 << 40, MaxDelayNs: 1 << 40, MeanResolutionNs: 1, DigestBits: 16}
	f.Fuzz(func(t *testing.T, b []byte) {
		pk, ops := split(b)
		snd, _ := NewLDA(cfg)
		rcv, _ := NewLDA(cfg)
		fuzzPackets(pk, func(h, ts, tr uint64, s, r bool) {
			if s {
				snd.Add(h, ts)
			}
			if r {
				rcv.Add(h, tr)
			}
		})
		enc, err := snd.AppendCompact(nil, bounds)
		if err != nil {
			return
		}
		var c CompactLDA
		if c.UnmarshalBinary(flip(enc, ops)) != nil {
			return
		}
		e, err := EstimateLDACompact(&c, rcv, 0.98)
		if err == nil {
			finiteEstimate(t, "lda", e)
		}
	})
}

func FuzzEstimateRDAAdversarial(f *testing.F) {
	estimatorSeeds(f)
	cfg := RDAConfig{Banks: 3, Cells: 16, CacheBudget: TSCacheMinBudget}
	f.Fuzz(func(t *testing.T, b []byte) {
		pk, ops := split(b)
		snd, rcv := MustNewRDA(cfg), MustNewRDA(cfg)
		fuzzPackets(pk, func(h, ts, tr uint64, s, r bool) {
			if s {
				snd.Add(h, ts)
			}
			if r {
				rcv.Add(h, tr)
			}
		})
		enc, err := snd.AppendBinary(nil)
		if err != nil {
			return
		}
		var w RDA
		if w.UnmarshalBinary(flip(enc, ops)) != nil {
			return
		}
		if d, err := DecodeRDA(&w, rcv); err == nil && d.Complete && d.ResidualCells != 0 {
			t.Fatalf("complete decoding with %d residual cells", d.ResidualCells)
		}
		e, _, err := EstimateRDA(&w, rcv, 0.98)
		if err == nil {
			finiteEstimate(t, "rda", e)
		}
	})
}

func FuzzEstimateLDSFlowsAdversarial(f *testing.F) {
	estimatorSeeds(f)
	cfg, err := DimensionLDS(LDSDimensioning{ExpectedFlows: 4, MaxFlows: 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pk, ops := split(b)
		snd, err := NewLDS(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rcv, _ := NewLDS(cfg)
		fuzzPackets(pk, func(h, ts, tr uint64, s, r bool) {
			flow := Remix(h%5, 0xf10)
			if s {
				snd.Add(flow, h, ts, 0, 1)
			}
			if r {
				rcv.Add(flow, h, tr, 0, 1)
			}
		})
		enc, err := snd.AppendBinary(nil)
		if err != nil {
			return
		}
		var w LDS
		if w.UnmarshalBinary(flip(enc, ops)) != nil {
			return
		}
		flows, err := EstimateLDSFlows(&w, rcv)
		if err != nil {
			return
		}
		for _, fl := range flows {
			finiteEstimate(t, "lds", fl.Estimate)
		}
	})
}
