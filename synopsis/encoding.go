package synopsis

import (
	"encoding/binary"
	"fmt"
)

// Encoding helpers shared by the synopses' AppendBinary / UnmarshalBinary
// and compact encodings. Conventions for every encoding in this package:
//
//   - A 3-byte magic naming the synopsis and a version byte lead; a decoder
//     rejects an unknown magic or version with ErrBadEncoding.
//   - Integers are minimal unsigned LEB128 varints (encoding/binary
//     Uvarint; zig-zag Varint when signed) or
//     fixed little-endian; bit-packed fields are LSB-first (bitWriter).
//   - A decoder consumes the input exactly: trailing bytes are an error.
//   - Decoders never trust a length: every count is checked against the
//     configuration limits and the bytes left before anything is allocated.

// encReader reads fields from an encoding and remembers the first error,
// so decoders check once at the end (and before allocating).
type encReader struct {
	b       []byte
	err     error
	scratch [binary.MaxVarintLen64]byte
}

func (r *encReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrBadEncoding, fmt.Sprintf(format, args...))
	}
}

// u8 reads one byte (0 after an error).
func (r *encReader) u8(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.fail("truncated at %s", what)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// uvarint reads an unsigned varint (0 after an error).
func (r *encReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n != len(binary.AppendUvarint(r.scratch[:0], v)) {
		// Non-minimal encodings are rejected so that every value has one
		// encoding (round trips are byte-exact).
		r.fail("bad varint at %s", what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// varint reads a zig-zag signed varint (0 after an error).
func (r *encReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 || n != len(binary.AppendVarint(r.scratch[:0], v)) {
		r.fail("bad varint at %s", what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// u64 reads a fixed 8-byte little-endian value (0 after an error).
func (r *encReader) u64(what string) uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail("truncated at %s", what)
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// magic checks a 3-byte magic and a version byte.
func (r *encReader) magic(magic string, version byte) {
	if r.err != nil {
		return
	}
	if len(r.b) < 4 || string(r.b[:3]) != magic {
		r.fail("not a %s encoding", magic)
		return
	}
	if r.b[3] != version {
		r.fail("%s version %d, this build reads %d", magic, r.b[3], version)
		return
	}
	r.b = r.b[4:]
}

// done fails unless the input is consumed exactly.
func (r *encReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}

// bitWriter appends LSB-first bit fields to a byte slice.
type bitWriter struct {
	b    []byte
	acc  uint64 // pending bits, LSB first
	nacc uint   // number of pending bits (< 8 between calls)
}

// write appends the low width bits of v (width ≤ 64).
func (w *bitWriter) write(v uint64, width uint) {
	if width == 0 {
		return
	}
	if width < 64 {
		v &= 1<<width - 1
	}
	// Feed in chunks so acc never overflows: at most 7 pending + 56 new.
	for width > 0 {
		n := width
		if n > 56 {
			n = 56
		}
		w.acc |= (v & (1<<n - 1)) << w.nacc
		w.nacc += n
		v >>= n
		width -= n
		for w.nacc >= 8 {
			w.b = append(w.b, byte(w.acc))
			w.acc >>= 8
			w.nacc -= 8
		}
	}
}

// flush pads the last byte with zero bits and returns the slice.
func (w *bitWriter) flush() []byte {
	if w.nacc > 0 {
		w.b = append(w.b, byte(w.acc))
		w.acc, w.nacc = 0, 0
	}
	return w.b
}

// bitReader reads LSB-first bit fields written by bitWriter.
type bitReader struct {
	b    []byte
	acc  uint64
	nacc uint
	err  bool // ran out of input
}

// read returns the next width bits (width ≤ 64); 0 and err set when the
// input runs out.
func (r *bitReader) read(width uint) uint64 {
	var v uint64
	var got uint
	for got < width {
		if r.nacc == 0 {
			if len(r.b) == 0 {
				r.err = true
				return 0
			}
			r.acc = uint64(r.b[0])
			r.nacc = 8
			r.b = r.b[1:]
		}
		n := width - got
		if n > r.nacc {
			n = r.nacc
		}
		v |= (r.acc & (1<<n - 1)) << got
		r.acc >>= n
		r.nacc -= n
		got += n
	}
	return v
}

// cleanEnd reports whether the padding bits of the current byte are zero and
// no bytes follow.
func (r *bitReader) cleanEnd() bool { return r.acc == 0 && len(r.b) == 0 }
