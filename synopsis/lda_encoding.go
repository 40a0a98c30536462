package synopsis

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Full (lossless) LDA encoding, version 2. Every field is exact, so a
// decoded LDA equals the encoded one and can be merged, re-encoded or
// estimated against anything:
//
//	offset  size        field
//	0       3           magic "LDA"
//	3       1           version = 2
//	4       1           flags: bit 0 = Digest; other bits 0
//	5       1           n = number of banks (1..16)
//	6       2·n         per bank: log2(Rows), SampleLog2
//	        uvarint     packets offered (Count: every Add, sampled or not)
//	        per bucket, bank by bank, row by row:
//	          uvarint   packet count
//	          8         timestamp sum, little-endian, ns (wrap-around)
//	          8         digest, little-endian (only with Digest)
//	        per cover bucket (LDACoverRows of them, only when every bank's
//	        SampleLog2 > 0):
//	          uvarint   packet count
//	          8         digest, little-endian (only with Digest)
//
// Version 1 kept XOR-of-h digests and no cover buckets; a version-2
// decoder rejects it (ErrBadEncoding naming both versions): both ends of a
// segment must run builds with the same encoding.
//
// A decoder rejects a configuration NewLDA would reject, bucket counts that
// add up to more than the packets offered, and trailing bytes. For the
// control plane, AppendCompact is about half the size.
const (
	ldaMagic   = "LDA"
	ldaVersion = 2
	ldaFlagDig = 1 << 0
)

// appendLDAConfig writes flags, bank count and banks (shared by the full
// and the compact encodings).
func appendLDAConfig(b []byte, cfg *LDAConfig) []byte {
	flags := byte(0)
	if cfg.Digest {
		flags |= ldaFlagDig
	}
	b = append(b, flags, byte(len(cfg.Banks)))
	for _, bk := range cfg.Banks {
		b = append(b, byte(bits.TrailingZeros(uint(bk.Rows))), bk.SampleLog2)
	}
	return b
}

// readLDAConfig reads what appendLDAConfig wrote and validates it.
func readLDAConfig(r *encReader) LDAConfig {
	var cfg LDAConfig
	flags := r.u8("flags")
	if flags&^ldaFlagDig != 0 {
		r.fail("unknown LDA flags %#x", flags)
	}
	cfg.Digest = flags&ldaFlagDig != 0
	n := int(r.u8("bank count"))
	if r.err == nil && (n == 0 || n > LDAMaxBanks) {
		r.fail("LDA bank count %d", n)
	}
	if r.err != nil {
		return cfg
	}
	cfg.Banks = make([]BankConfig, n)
	for i := range cfg.Banks {
		lg := r.u8("bank rows")
		s := r.u8("bank sampling")
		if r.err == nil && (lg < 1 || lg > 20) {
			r.fail("LDA bank %d: log2(rows) %d", i, lg)
		}
		cfg.Banks[i] = BankConfig{Rows: 1 << (lg & 31), SampleLog2: s}
	}
	if r.err == nil {
		if err := cfg.Validate(); err != nil {
			r.fail("%v", err)
		}
	}
	return cfg
}

// errLDANoConfig: encoding a zero-value LDA (not made by NewLDA).
var errLDANoConfig = fmt.Errorf("%w: LDA has no banks (zero value; use NewLDA)", ErrBadConfig)

// AppendBinary appends the full encoding of l to b (see the format above).
// It implements encoding.BinaryAppender; the only error is a zero-value LDA.
func (l *LDA) AppendBinary(b []byte) ([]byte, error) {
	if len(l.cfg.Banks) == 0 {
		return b, errLDANoConfig
	}
	b = append(b, ldaMagic...)
	b = append(b, ldaVersion)
	b = appendLDAConfig(b, &l.cfg)
	b = binary.AppendUvarint(b, l.offered)
	n := l.cfg.TotalRows()
	for i, c := range l.cells {
		b = binary.AppendUvarint(b, c.count)
		if i < n {
			b = binary.LittleEndian.AppendUint64(b, c.sum)
		}
		if l.digest {
			b = binary.LittleEndian.AppendUint64(b, c.dig)
		}
	}
	return b, nil
}

// MarshalBinary is AppendBinary(nil).
func (l *LDA) MarshalBinary() ([]byte, error) { return l.AppendBinary(nil) }

// UnmarshalBinary replaces l with the LDA encoded in b by AppendBinary.
// On error (wrapping ErrBadEncoding) l is unchanged.
func (l *LDA) UnmarshalBinary(b []byte) error {
	r := encReader{b: b}
	r.magic(ldaMagic, ldaVersion)
	cfg := readLDAConfig(&r)
	offered := r.uvarint("packets offered")
	if r.err != nil {
		return r.err
	}
	per, coverPer := 1+8, 1 // at least: 1-byte count, sum
	if cfg.Digest {
		per += 8
		coverPer += 8
	}
	n, cover := cfg.TotalRows(), cfg.coverRows()
	if need := n*per + cover*coverPer; len(r.b) < need {
		r.fail("truncated: %d buckets need at least %d bytes, %d left", n+cover, need, len(r.b))
		return r.err
	}
	nl, err := NewLDA(cfg)
	if err != nil { // cannot happen: readLDAConfig validated
		r.fail("%v", err)
		return r.err
	}
	nl.offered = offered
	var total uint64
	for i := range nl.cells {
		c := r.uvarint("bucket count")
		nl.cells[i].count = c
		if i < n {
			nl.cells[i].sum = r.u64("bucket sum")
		}
		if cfg.Digest {
			nl.cells[i].dig = r.u64("bucket digest")
		}
		var carry uint64
		total, carry = bits.Add64(total, c, 0)
		if r.err == nil && (carry != 0 || total > offered) {
			r.fail("bucket counts exceed the %d packets offered", offered)
		}
	}
	if err := r.done(); err != nil {
		return err
	}
	*l = *nl
	return nil
}
