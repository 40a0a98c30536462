package dataplane

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// pcapReader reads classic pcap (µs or ns timestamps, either byte order)
// and pcapng (SHB, IDB, EPB, SPB, obsolete PB; other blocks skipped) into
// caller buffers without allocating. It is our own rather than pcapgo's
// Reader/NgReader because those size their buffer from the file's snaplen
// or a record's capture length (a forged 4 GiB length is a 4 GiB
// allocation) and pcapgo's pcapng reader can be driven to a negative
// Discard; here every length is checked against MaxPcapRecord first.
// pcapgo stays the reference: the tests hold this reader against files
// pcapgo writes.
type pcapReader struct {
	r       *bufio.Reader
	ng      bool
	big     bool   // byte order of the file / current pcapng section
	nsScale uint64 // classic: 1 (ns magic) or 1000 (µs magic)
	ifaces  []pcapIface
	hdr     [28]byte
}

// pcapIface is one pcapng Interface Description Block.
type pcapIface struct {
	ethernet bool
	// ts → ns: ts*mul/div, then + offset.
	mul, div uint64
	offset   uint64 // if_tsoffset, s → ns
}

// MaxPcapRecord bounds a record's captured length, bytes: bigger is treated
// as corruption (no link carries 256 KiB frames; pcapng blocks that size
// would be options or garbage).
const MaxPcapRecord = 256 << 10

const maxPcapIfaces = 256

// Errors a pcap stream ends or skips with. They are values created once:
// the read path allocates nothing.
var (
	ErrPcapFormat    = errors.New("dataplane: not a pcap or pcapng file")
	errPcapTruncated = errors.New("dataplane: pcap record truncated")
	errPcapMalformed = errors.New("dataplane: pcap record malformed")
	errPcapSkip      = errors.New("dataplane: pcap record skipped (too large for a buffer or not Ethernet)")
)

const (
	pcapMagicUs = 0xa1b2c3d4
	pcapMagicNs = 0xa1b23c4d
	ngSHB       = 0x0a0d0d0a
	ngBOM       = 0x1a2b3c4d
	linkEth     = 1
)

// newPcapReader reads and checks the file header: a classic header with
// Ethernet link type, or a pcapng Section Header Block. Any other start is
// an error wrapping ErrPcapFormat.
func newPcapReader(rd io.Reader) (*pcapReader, error) {
	r := &pcapReader{r: bufio.NewReaderSize(rd, 64<<10)}
	var m [4]byte
	if _, err := io.ReadFull(r.r, m[:]); err != nil {
		return nil, fmt.Errorf("%w: shorter than a file header", ErrPcapFormat)
	}
	if binary.LittleEndian.Uint32(m[:]) == ngSHB {
		r.ng = true
		if err := r.readSHB(); err != nil {
			return nil, fmt.Errorf("%w: section header: %w", ErrPcapFormat, err)
		}
		return r, nil
	}
	var h [20]byte
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		return nil, fmt.Errorf("%w: short header", ErrPcapFormat)
	}
	switch {
	case binary.LittleEndian.Uint32(m[:]) == pcapMagicUs:
		r.nsScale = 1000
	case binary.LittleEndian.Uint32(m[:]) == pcapMagicNs:
		r.nsScale = 1
	case binary.BigEndian.Uint32(m[:]) == pcapMagicUs:
		r.big, r.nsScale = true, 1000
	case binary.BigEndian.Uint32(m[:]) == pcapMagicNs:
		r.big, r.nsScale = true, 1
	default:
		return nil, fmt.Errorf("%w: magic %x", ErrPcapFormat, m)
	}
	if major := r.u16(h[0:]); major != 2 {
		return nil, fmt.Errorf("%w: version %d", ErrPcapFormat, major)
	}
	if lt := r.u32(h[16:]) & 0xffff; lt != linkEth {
		return nil, fmt.Errorf("%w: link type %d, only Ethernet (1) is supported", ErrPcapFormat, lt)
	}
	return r, nil
}

func (r *pcapReader) u16(b []byte) uint16 {
	if r.big {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *pcapReader) u32(b []byte) uint32 {
	if r.big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

// readFull is io.ReadFull that reports a short read as truncation.
func (r *pcapReader) readFull(b []byte) error {
	n, err := io.ReadFull(r.r, b)
	if err == io.EOF && n == 0 {
		return io.EOF
	}
	if err != nil {
		return errPcapTruncated
	}
	return nil
}

func (r *pcapReader) skip(n int) error {
	if k, _ := r.r.Discard(n); k != n {
		return errPcapTruncated
	}
	return nil
}

// readSHB reads a Section Header Block whose type has been consumed: it
// sets the byte order and forgets the previous section's interfaces.
func (r *pcapReader) readSHB() error {
	if err := r.readFull(r.hdr[:8]); err != nil {
		return errPcapTruncated
	}
	switch {
	case binary.LittleEndian.Uint32(r.hdr[4:]) == ngBOM:
		r.big = false
	case binary.BigEndian.Uint32(r.hdr[4:]) == ngBOM:
		r.big = true
	default:
		return errPcapMalformed
	}
	total := r.u32(r.hdr[0:])
	if total < 28 || total%4 != 0 || total > MaxPcapRecord {
		return errPcapMalformed
	}
	r.ifaces = r.ifaces[:0]
	return r.skip(int(total) - 12) // version, section length, options, trailing length
}

// next reads the next Ethernet frame into dst and returns its length and
// timestamp (ns since the Unix epoch). err is io.EOF at a clean end,
// errPcapTruncated / errPcapMalformed when the stream cannot go on, and
// errPcapSkip for a record that was consumed but not returned (it does not
// fit dst, or its interface is not Ethernet).
func (r *pcapReader) next(dst []byte) (n int, ts uint64, err error) {
	if !r.ng {
		return r.nextClassic(dst)
	}
	for {
		if err := r.readFull(r.hdr[:8]); err != nil {
			return 0, 0, err
		}
		typ := r.u32(r.hdr[0:])
		if typ == ngSHB {
			// The length field may be in the new section's byte order:
			// readSHB reads it again after the byte-order magic.
			b := r.hdr[4:8]
			var save [4]byte
			copy(save[:], b)
			if err := r.readFull(r.hdr[8:12]); err != nil {
				return 0, 0, errPcapTruncated
			}
			switch {
			case binary.LittleEndian.Uint32(r.hdr[8:]) == ngBOM:
				r.big = false
			case binary.BigEndian.Uint32(r.hdr[8:]) == ngBOM:
				r.big = true
			default:
				return 0, 0, errPcapMalformed
			}
			total := r.u32(save[:])
			if total < 28 || total%4 != 0 || total > MaxPcapRecord {
				return 0, 0, errPcapMalformed
			}
			r.ifaces = r.ifaces[:0]
			if err := r.skip(int(total) - 12); err != nil {
				return 0, 0, err
			}
			continue
		}
		total := r.u32(r.hdr[4:])
		if total < 12 || total%4 != 0 || total > MaxPcapRecord {
			return 0, 0, errPcapMalformed
		}
		body := int(total) - 12 // without type, length and trailing length
		switch typ {
		case 1: // Interface Description Block
			if err := r.readIDB(body); err != nil {
				return 0, 0, err
			}
		case 6, 2: // Enhanced Packet Block, obsolete Packet Block
			if body < 20 {
				return 0, 0, errPcapMalformed
			}
			if err := r.readFull(r.hdr[:20]); err != nil {
				return 0, 0, errPcapTruncated
			}
			id := int(r.u32(r.hdr[0:]))
			if typ == 2 {
				id = int(r.u16(r.hdr[0:]))
			}
			raw := uint64(r.u32(r.hdr[4:]))<<32 | uint64(r.u32(r.hdr[8:]))
			capLen := int(r.u32(r.hdr[12:]))
			if id >= len(r.ifaces) || capLen > body-20 {
				return 0, 0, errPcapMalformed
			}
			return r.payload(dst, capLen, body-20-capLen+4, r.ifaces[id], raw)
		case 3: // Simple Packet Block: no timestamp
			if body < 4 || len(r.ifaces) == 0 {
				return 0, 0, errPcapMalformed
			}
			if err := r.readFull(r.hdr[:4]); err != nil {
				return 0, 0, errPcapTruncated
			}
			capLen := min(int(r.u32(r.hdr[0:])), body-4)
			return r.payload(dst, capLen, body-4-capLen+4, r.ifaces[0], 0)
		default:
			if err := r.skip(body + 4); err != nil {
				return 0, 0, err
			}
		}
	}
}

// payload reads capLen bytes of frame into dst, then skips rest bytes
// (padding, options, trailing length).
func (r *pcapReader) payload(dst []byte, capLen, rest int, ifc pcapIface, raw uint64) (int, uint64, error) {
	if capLen > len(dst) || !ifc.ethernet {
		if err := r.skip(capLen + rest); err != nil {
			return 0, 0, err
		}
		return 0, 0, errPcapSkip
	}
	if err := r.readFull(dst[:capLen]); err != nil {
		return 0, 0, errPcapTruncated
	}
	if err := r.skip(rest); err != nil {
		return 0, 0, err
	}
	hi, lo := bits.Mul64(raw, ifc.mul)
	if hi >= ifc.div { // would overflow: a timestamp beyond 2^64 ns
		return 0, 0, errPcapMalformed
	}
	q, _ := bits.Div64(hi, lo, ifc.div)
	return capLen, q + ifc.offset, nil
}

// readIDB reads an Interface Description Block body of n bytes (plus the
// trailing length): link type, snaplen, and the if_tsresol / if_tsoffset
// options.
func (r *pcapReader) readIDB(n int) error {
	if n < 8 || len(r.ifaces) >= maxPcapIfaces {
		return errPcapMalformed
	}
	if err := r.readFull(r.hdr[:8]); err != nil {
		return errPcapTruncated
	}
	ifc := pcapIface{ethernet: r.u16(r.hdr[0:]) == linkEth, mul: 1000, div: 1} // default resolution 10^-6 s
	n -= 8
	for n >= 4 {
		if err := r.readFull(r.hdr[:4]); err != nil {
			return errPcapTruncated
		}
		code, l := r.u16(r.hdr[0:]), int(r.u16(r.hdr[2:]))
		n -= 4
		padded := (l + 3) &^ 3
		if padded > n {
			return errPcapMalformed
		}
		if code == 0 { // opt_endofopt
			break
		}
		if (code == 9 && l == 1) || (code == 14 && l == 8) {
			if err := r.readFull(r.hdr[:padded]); err != nil {
				return errPcapTruncated
			}
			if code == 9 {
				v := r.hdr[0]
				if v&0x80 == 0 {
					if v > 19 {
						return errPcapMalformed
					}
					ifc.mul, ifc.div = 1, 1
					for range max(0, 9-int(v)) {
						ifc.mul *= 10
					}
					for range max(0, int(v)-9) {
						ifc.div *= 10
					}
				} else {
					if v&0x7f > 63 {
						return errPcapMalformed
					}
					ifc.mul, ifc.div = 1e9, 1<<(v&0x7f)
				}
			} else {
				var off uint64
				if r.big {
					off = binary.BigEndian.Uint64(r.hdr[:8])
				} else {
					off = binary.LittleEndian.Uint64(r.hdr[:8])
				}
				ifc.offset = off * 1e9
			}
		} else if err := r.skip(padded); err != nil {
			return err
		}
		n -= padded
	}
	if err := r.skip(n + 4); err != nil {
		return err
	}
	r.ifaces = append(r.ifaces, ifc) // grows to at most maxPcapIfaces, not per packet
	return nil
}

func (r *pcapReader) nextClassic(dst []byte) (int, uint64, error) {
	if err := r.readFull(r.hdr[:16]); err != nil {
		return 0, 0, err
	}
	sec, frac := uint64(r.u32(r.hdr[0:])), uint64(r.u32(r.hdr[4:]))
	capLen, origLen := int(r.u32(r.hdr[8:])), int(r.u32(r.hdr[12:]))
	if capLen > MaxPcapRecord || capLen > origLen || frac*r.nsScale >= 1e9 {
		return 0, 0, errPcapMalformed
	}
	ts := sec*1e9 + frac*r.nsScale
	if capLen > len(dst) {
		if err := r.skip(capLen); err != nil {
			return 0, 0, err
		}
		return 0, 0, errPcapSkip
	}
	if err := r.readFull(dst[:capLen]); err != nil {
		return 0, 0, errPcapTruncated
	}
	return capLen, ts, nil
}
