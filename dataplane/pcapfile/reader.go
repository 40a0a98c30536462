package pcapfile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
)

// Reader reads classic pcap (µs or ns timestamps, either byte order) and
// pcapng (SHB, IDB, EPB, obsolete PB; other known blocks skipped; a block
// reserved for local use skipped as a local damage) into
// caller buffers and checks every record as it goes: a record that cannot
// be what it claims is a *DamageError naming the record, never a silent end
// of the stream. It is ours rather than gopacket's pcapgo readers because
// those end a damaged pcapng file as if it were a clean end (the missing
// frames then read as loss), accept a microsecond field of 0xffffffff, size
// their buffer from a forged length (a 4 GiB allocation) and can be driven
// to a negative Discard. Reading a good record allocates nothing.
type Reader struct {
	r      *bufio.Reader
	ng     bool
	big    bool   // byte order of the file / current pcapng section
	scale  uint64 // classic: ns per timestamp unit (1000 or 1)
	link   uint32 // classic: link type
	snap   uint32 // classic snaplen, or the smallest non-zero pcapng IDB snaplen
	ifaces []iface
	hdr    [32]byte

	record uint64 // packet records read, the damaged or skipped one included
	block  uint64 // pcapng blocks read (SHB included)
	offset uint64 // bytes consumed
	start  uint64 // byte offset of the last packet record returned
	// skipped is the timestamp of the last record skipped as ErrTooLong.
	skipped uint64
}

type iface struct {
	link     uint32
	mul, div uint64 // ts → ns: ts*mul/div + offset
	offset   uint64
}

// MaxRecord bounds a packet record's captured length; maxBlock any
// other pcapng block (name resolution and decryption secrets blocks can be
// large, and they are skipped, never buffered).
const (
	MaxRecord = 256 << 10
	maxBlock  = 64 << 20
	maxIfaces = 1024
)

// DamageError says where and how a capture is damaged. Record counts
// packet records from 1 (the damaged one included); Offset is the byte
// offset of the damaged record or block.
type DamageError struct {
	File   string
	Record uint64
	Offset uint64
	What   string
	// Local: the record was skipped and the rest of the file is readable
	// (an impossible timestamp in an otherwise well-formed record);
	// otherwise the stream cannot go on after it.
	Local bool
	// AfterNs is the timestamp of the last good record before the damage
	// (0 when there was none).
	AfterNs uint64
}

func (e *DamageError) Error() string {
	if e.Offset == 0 {
		return fmt.Sprintf("%s: damaged capture at packet record %d: %s", e.File, e.Record, e.What)
	}
	return fmt.Sprintf("%s: damaged capture at packet record %d (byte offset %d): %s", e.File, e.Record, e.Offset, e.What)
}

// Errors a reader fails or skips with besides *DamageError. They are
// values created once: skipping a record allocates nothing.
var (
	// ErrNotCapture is wrapped by the errors of files that are not captures.
	ErrNotCapture = errors.New("not a pcap or pcapng file")
	// ErrUnsupportedLink: an interface of a link type the reader's users
	// cannot parse (not damage: the file is fine, the reader is not).
	ErrUnsupportedLink = errors.New("link type not supported (Ethernet or raw IP only)")
	// ErrTooLong: a well-formed record longer than the caller's buffer was
	// consumed and not returned; the stream goes on.
	ErrTooLong = errors.New("pcap record longer than the buffer, skipped")
)

const (
	capMagicUs = 0xa1b2c3d4
	capMagicNs = 0xa1b23c4d
	ngSHB      = 0x0a0d0d0a
	ngBOM      = 0x1a2b3c4d
)

// Link types (LINKTYPE_* values) a record can carry.
const (
	LinkEthernet = 1
	LinkRaw      = 101
	LinkIPv4     = 228
	LinkIPv6     = 229
)

// supportedLink: Ethernet or raw IP (12 and 14 are DLT_RAW on some systems).
func supportedLink(l uint32) bool {
	switch l {
	case LinkEthernet, LinkRaw, LinkIPv4, LinkIPv6, 12, 14:
		return true
	}
	return false
}

// NewReader reads and checks the file header: a classic header of a
// supported link type, or a pcapng Section Header Block. A start that is
// neither is an error wrapping ErrNotCapture.
func NewReader(rd io.Reader) (*Reader, error) {
	r := &Reader{r: bufio.NewReaderSize(rd, 256<<10)}
	head, err := r.r.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("too short to be a pcap or pcapng file (%d bytes): %w", len(head), ErrNotCapture)
	}
	le, be := binary.LittleEndian.Uint32(head), binary.BigEndian.Uint32(head)
	if le == ngSHB {
		r.ng = true
		r.block++
		if err := r.read(r.hdr[:8]); err != nil {
			return nil, fmt.Errorf("bad pcapng section header: truncated: %w", ErrNotCapture)
		}
		if err := r.readSHB(); err != nil {
			return nil, fmt.Errorf("bad pcapng section header: %v: %w", err, ErrNotCapture)
		}
		return r, nil
	}
	switch {
	case le == capMagicUs:
		r.scale = 1000
	case le == capMagicNs:
		r.scale = 1
	case be == capMagicUs:
		r.big, r.scale = true, 1000
	case be == capMagicNs:
		r.big, r.scale = true, 1
	default:
		return nil, fmt.Errorf("first bytes %02x %02x %02x %02x: %w", head[0], head[1], head[2], head[3], ErrNotCapture)
	}
	var h [24]byte
	if err := r.read(h[:]); err != nil {
		return nil, fmt.Errorf("short pcap file header: %w", ErrNotCapture)
	}
	if major := r.u16(h[4:]); major != 2 {
		return nil, fmt.Errorf("pcap version %d: %w", major, ErrNotCapture)
	}
	r.snap = r.u32(h[16:])
	r.link = r.u32(h[20:]) & 0xffff
	if !supportedLink(r.link) {
		return nil, fmt.Errorf("link type %d is not supported (Ethernet or raw IP): %w", r.link, ErrUnsupportedLink)
	}
	return r, nil
}

// Start is the byte offset in the file at which the packet record Next
// last returned starts (its pcapng block, or its classic record header).
func (r *Reader) Start() uint64 { return r.start }

// Offset is how many bytes of the file the reader has consumed.
func (r *Reader) Offset() uint64 { return r.offset }

// At is a reader of the same file that reads from rd, which must start
// at byte offset at of it, on a record (or pcapng block) boundary: it
// knows what r knows of the file's header (byte order, timestamp unit,
// link type, snap length, the pcapng interfaces described so far), and
// counts offsets from at and records from 0. It lets a file be read in
// pieces, each from where another reader found a record to start (Sync).
func (r *Reader) At(rd io.Reader, at uint64) *Reader {
	return &Reader{r: bufio.NewReaderSize(rd, 256<<10), ng: r.ng, big: r.big, scale: r.scale, link: r.link,
		snap: r.snap, ifaces: append([]iface(nil), r.ifaces...), offset: at, block: r.block}
}

// SyncChain is how many packet records in a row Sync wants to read,
// well-formed and in time order, from where it says a record starts.
const SyncChain = 8

// Sync finds the first packet record that starts in b, bytes of the file
// from byte offset at, such that SyncChain packet records in a row parse
// from it inside b, each with plausible lengths, none damaged, stamped no
// earlier than minTS, none going back by more than maxBack ns; it returns
// the record's byte offset in the file and its timestamp. A file holds no marker of where records start, so this
// is a search: a caller that reads from what it found must check that
// the records it reads there are the file's (that a reader from the
// file's start meets a record at exactly that offset).
func (r *Reader) Sync(b []byte, at, maxBack, minTS uint64) (off, ts uint64, ok bool) {
	var br bytes.Reader
	probe := r.At(&br, 0)
	probe.r = bufio.NewReaderSize(&br, 4096)
	var dst [2048]byte // a longer record is skipped (ErrTooLong), not read
	tries := 0
	for p := 0; p+16 <= len(b) && tries < syncTries; p++ {
		if !r.plausible(b[p:]) {
			continue
		}
		// Hop along the lengths first (cheap); parse only a chain that
		// holds together.
		q, k := p, 0
		for ; k < SyncChain; k++ {
			var ok bool
			if q, ok = r.hop(b, q); !ok {
				break
			}
		}
		if k < SyncChain {
			continue
		}
		tries++
		br.Reset(b[p:])
		probe.r.Reset(&br)
		probe.offset = at + uint64(p)
		var last uint64
		n := 0
		for ; n < SyncChain; n++ {
			_, _, t, _, err := probe.Next(dst[:])
			if err == ErrTooLong {
				t, err = probe.skipped, nil
			}
			if err != nil || t < minTS || (n > 0 && t+maxBack < last) {
				break
			}
			if n == 0 {
				off, ts = probe.start, t
			}
			last = max(last, t)
		}
		if n == SyncChain {
			return off, ts, true
		}
	}
	return 0, 0, false
}

// syncTries bounds the chains Sync parses: bytes made to look like
// record headers at every offset cannot make it parse the buffer over
// and over.
const syncTries = 64

// plausible is a quick test that b could start a packet record: the
// lengths a record header states agree with each other (pcapng: an
// enhanced packet block, on a described interface, whose trailing length
// repeats its leading one).
func (r *Reader) plausible(b []byte) bool {
	if len(b) < 16 {
		return false
	}
	if !r.ng {
		capLen, orig := r.u32(b[8:]), r.u32(b[12:])
		// (An empty record is possible but never written by capture
		// tools; zeros inside a frame would read as one.)
		return capLen > 0 && capLen <= orig && capLen <= MaxRecord && orig >= 14 && orig <= 1<<20 && uint64(r.u32(b[4:]))*r.scale < 1e9
	}
	typ, total := r.u32(b[0:]), r.u32(b[4:])
	if typ != 6 || total < 32 || total%4 != 0 || total > MaxRecord+64 || int(total) > len(b) {
		return false
	}
	return r.u32(b[total-4:]) == total && int(r.u32(b[8:])) < len(r.ifaces)
}

// hop is where the record (or pcapng block) at b[q:] ends, if its lengths
// are plausible and it ends inside b.
func (r *Reader) hop(b []byte, q int) (int, bool) {
	if q+16 > len(b) {
		return 0, false
	}
	if !r.ng {
		if !r.plausible(b[q:]) {
			return 0, false
		}
		end := q + 16 + int(r.u32(b[q+8:]))
		return end, end <= len(b)
	}
	typ, total := r.u32(b[q:]), int(r.u32(b[q+4:]))
	if typ == 6 {
		return q + total, r.plausible(b[q:])
	}
	if typ == ngSHB || total < 12 || total%4 != 0 || total > maxBlock || q+total > len(b) {
		return 0, false
	}
	return q + total, r.u32(b[q+total-4:]) == uint32(total)
}

// Record is the number of packet records read so far, the last one
// returned (or damaged, or skipped) included.
func (r *Reader) Record() uint64 { return r.record }

// SnapLen is the capture's snap length as its headers state it (0: none
// stated).
func (r *Reader) SnapLen() uint32 { return r.snap }

// ClassicLink is a classic pcap file's link type; 0 for pcapng, whose
// link type is per interface and comes with each record.
func (r *Reader) ClassicLink() uint32 { return r.link }

func (r *Reader) u16(b []byte) uint16 {
	if r.big {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *Reader) u32(b []byte) uint32 {
	if r.big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

// read fills b; io.EOF only when nothing at all was left,
// io.ErrUnexpectedEOF when the file ends inside b.
func (r *Reader) read(b []byte) error {
	n, err := io.ReadFull(r.r, b)
	r.offset += uint64(n)
	return err
}

func (r *Reader) skip(n int) error {
	k, err := r.r.Discard(n)
	r.offset += uint64(k)
	if k != n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// readSHB reads the rest of a Section Header Block whose type and length
// are in r.hdr[:8]: the byte-order magic (which sets the byte order the
// length is read in), the body and the trailer. A new section forgets the
// previous section's interfaces.
func (r *Reader) readSHB() error {
	var lenb [4]byte
	copy(lenb[:], r.hdr[4:8])
	if err := r.read(r.hdr[8:12]); err != nil {
		return errors.New("file ends inside a section header")
	}
	switch {
	case binary.LittleEndian.Uint32(r.hdr[8:]) == ngBOM:
		r.big = false
	case binary.BigEndian.Uint32(r.hdr[8:]) == ngBOM:
		r.big = true
	default:
		return errors.New("section header with a bad byte-order magic")
	}
	total := r.u32(lenb[:])
	if total < 28 || total%4 != 0 || total > maxBlock {
		return fmt.Errorf("section header length %d", total)
	}
	r.ifaces = r.ifaces[:0]
	if err := r.skip(int(total) - 16); err != nil {
		return errors.New("file ends inside a section header")
	}
	return r.trailer(total)
}

// trailer reads a block's trailing length and checks it against the
// leading one: a mismatch is the surest sign of a damaged block.
func (r *Reader) trailer(total uint32) error {
	if err := r.read(r.hdr[:4]); err != nil {
		return errors.New("file ends inside a block")
	}
	if t := r.u32(r.hdr[:4]); t != total {
		return fmt.Errorf("block length %d at its start but %d at its end", total, t)
	}
	return nil
}

// Next reads the next packet record into dst and returns the frame (a
// prefix of dst), its link type, its timestamp (ns since the Unix epoch)
// and its original length. It returns io.EOF at a clean end, a
// *DamageError for a damaged record (the stream can go on after it only
// when Local is set), ErrTooLong for a record longer than dst (consumed,
// the stream goes on; a dst of MaxRecord bytes never sees it), or another
// error (an unsupported link type, a simple packet block) that ends it.
func (r *Reader) Next(dst []byte) (frame []byte, link uint32, ts uint64, origLen int, err error) {
	if !r.ng {
		return r.nextClassic(dst)
	}
	for {
		start := r.offset
		damaged := func(what string, args ...any) error {
			return &DamageError{Record: r.record + 1, Offset: start, What: fmt.Sprintf("pcapng block %d: ", r.block) + fmt.Sprintf(what, args...)}
		}
		if err := r.read(r.hdr[:8]); err != nil {
			if err == io.EOF {
				return nil, 0, 0, 0, io.EOF
			}
			r.block++
			return nil, 0, 0, 0, damaged("file ends inside a block header")
		}
		r.block++
		typ := r.u32(r.hdr[0:])
		if typ == ngSHB {
			if err := r.readSHB(); err != nil {
				return nil, 0, 0, 0, damaged("%v", err)
			}
			continue
		}
		total := r.u32(r.hdr[4:])
		limit := uint32(maxBlock)
		if typ == 6 || typ == 2 || typ == 3 {
			limit = MaxRecord + 64
		}
		if total < 12 || total%4 != 0 || total > limit {
			return nil, 0, 0, 0, damaged("block type %#x with length %d", typ, total)
		}
		body := int(total) - 12
		switch typ {
		case 1: // Interface Description Block
			if err := r.readIDB(body); err != nil {
				if errors.Is(err, ErrUnsupportedLink) {
					return nil, 0, 0, 0, fmt.Errorf("pcapng block %d: %w", r.block, err)
				}
				return nil, 0, 0, 0, damaged("interface description: %v", err)
			}
			if err := r.trailer(total); err != nil {
				return nil, 0, 0, 0, damaged("%v", err)
			}
		case 6, 2: // Enhanced Packet Block, obsolete Packet Block
			if body < 20 {
				return nil, 0, 0, 0, damaged("packet block too short (%d bytes)", total)
			}
			if err := r.read(r.hdr[:20]); err != nil {
				return nil, 0, 0, 0, damaged("file ends inside a packet block")
			}
			id := int(r.u32(r.hdr[0:]))
			if typ == 2 {
				id = int(r.u16(r.hdr[0:]))
			}
			raw := uint64(r.u32(r.hdr[4:]))<<32 | uint64(r.u32(r.hdr[8:]))
			capLen, orig := int(r.u32(r.hdr[12:])), int(r.u32(r.hdr[16:]))
			if id >= len(r.ifaces) {
				return nil, 0, 0, 0, damaged("packet on interface %d, but only %d described", id, len(r.ifaces))
			}
			if capLen > body-20 || capLen > MaxRecord {
				return nil, 0, 0, 0, damaged("captured length %d does not fit its block (%d bytes)", capLen, total)
			}
			// A record too long for dst is consumed like any other (and its
			// timestamp checked), then reported as ErrTooLong.
			tooLong := capLen > len(dst)
			if tooLong {
				if err := r.skip(capLen); err != nil {
					return nil, 0, 0, 0, damaged("file ends inside a packet")
				}
			} else if err := r.read(dst[:capLen]); err != nil {
				return nil, 0, 0, 0, damaged("file ends inside a packet")
			}
			if err := r.skip(body - 20 - capLen); err != nil {
				return nil, 0, 0, 0, damaged("file ends inside a packet block")
			}
			if err := r.trailer(total); err != nil {
				return nil, 0, 0, 0, damaged("%v", err)
			}
			r.record++
			ifc := r.ifaces[id]
			hi, lo := bits.Mul64(raw, ifc.mul)
			if hi >= ifc.div {
				return nil, 0, 0, 0, &DamageError{Record: r.record, Offset: start, Local: true, What: fmt.Sprintf("pcapng block %d: impossible timestamp %#x", r.block, raw)}
			}
			q, _ := bits.Div64(hi, lo, ifc.div)
			// Past 2^63 ns (the year 2262) no clock stamps: analyses
			// subtract timestamps as int64.
			if q+ifc.offset < q || q+ifc.offset > math.MaxInt64 {
				return nil, 0, 0, 0, &DamageError{Record: r.record, Offset: start, Local: true, What: fmt.Sprintf("pcapng block %d: impossible timestamp %#x", r.block, raw)}
			}
			if tooLong {
				r.start, r.skipped = start, q+ifc.offset
				return nil, 0, 0, 0, ErrTooLong
			}
			if orig < capLen {
				orig = capLen
			}
			r.start = start
			return dst[:capLen], ifc.link, q + ifc.offset, orig, nil
		case 3: // Simple Packet Block: no timestamp, so nothing to measure
			if len(r.ifaces) == 0 {
				return nil, 0, 0, 0, damaged("simple packet block before any interface")
			}
			return nil, 0, 0, 0, fmt.Errorf("pcapng block %d: a simple packet block carries no timestamp; only enhanced packet blocks can be measured", r.block)
		case 4, 5, 7, 8, 9, 10, 0xbad, 0x40000bad:
			// Name resolution, statistics, IRIG, ARINC, journal, decryption
			// secrets, custom: nothing to measure.
			if err := r.skip(body); err != nil {
				return nil, 0, 0, 0, damaged("file ends inside a block")
			}
			if err := r.trailer(total); err != nil {
				return nil, 0, 0, 0, damaged("%v", err)
			}
		default:
			if typ&0x80000000 != 0 {
				// Reserved for local use: skipped, but reported as a
				// local damage. Capture tools do not write such blocks,
				// and one bit flipped in a packet block's type makes one
				// (0x80000006): what it held is unknown, and a packet that
				// silently vanished would count as a loss.
				if err := r.skip(body); err != nil {
					return nil, 0, 0, 0, damaged("file ends inside a block")
				}
				if err := r.trailer(total); err != nil {
					return nil, 0, 0, 0, damaged("%v", err)
				}
				r.record++
				return nil, 0, 0, 0, &DamageError{Record: r.record, Offset: start, Local: true,
					What: fmt.Sprintf("pcapng block %d: type %#x is reserved for local use: skipped, and it may have been a damaged packet block", r.block, typ)}
			}
			return nil, 0, 0, 0, damaged("unknown block type %#x", typ)
		}
	}
}

// readIDB reads an Interface Description Block body of n bytes: link type,
// snaplen and the if_tsresol / if_tsoffset options.
func (r *Reader) readIDB(n int) error {
	if n < 8 || len(r.ifaces) >= maxIfaces {
		return fmt.Errorf("body of %d bytes", n)
	}
	if err := r.read(r.hdr[:8]); err != nil {
		return errors.New("truncated")
	}
	ifc := iface{link: uint32(r.u16(r.hdr[0:])), mul: 1000, div: 1} // default resolution 10^-6 s
	if !supportedLink(ifc.link) {
		return fmt.Errorf("%w: %d", ErrUnsupportedLink, ifc.link)
	}
	if s := r.u32(r.hdr[4:]); s > 0 && (r.snap == 0 || s < r.snap) {
		r.snap = s
	}
	n -= 8
	for n >= 4 {
		if err := r.read(r.hdr[:4]); err != nil {
			return errors.New("truncated")
		}
		code, l := r.u16(r.hdr[0:]), int(r.u16(r.hdr[2:]))
		n -= 4
		padded := (l + 3) &^ 3
		if padded > n {
			return fmt.Errorf("option %d of %d bytes overruns the block", code, l)
		}
		if code == 0 {
			break
		}
		if (code == 9 && l == 1) || (code == 14 && l == 8) {
			if err := r.read(r.hdr[:padded]); err != nil {
				return errors.New("truncated")
			}
			if code == 9 {
				v := r.hdr[0]
				if v&0x80 == 0 {
					if v > 19 {
						return fmt.Errorf("if_tsresol %d", v)
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
						return fmt.Errorf("if_tsresol %#x", v)
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
				if off > 1<<33 { // after the year 2242: not a clock offset
					return fmt.Errorf("if_tsoffset %d s", off)
				}
				ifc.offset = off * 1e9
			}
		} else if err := r.skip(padded); err != nil {
			return errors.New("truncated")
		}
		n -= padded
	}
	if n > 0 {
		if err := r.skip(n); err != nil {
			return errors.New("truncated")
		}
	}
	r.ifaces = append(r.ifaces, ifc)
	return nil
}

func (r *Reader) nextClassic(dst []byte) ([]byte, uint32, uint64, int, error) {
	start := r.offset
	if err := r.read(r.hdr[:16]); err != nil {
		if err == io.EOF {
			return nil, 0, 0, 0, io.EOF
		}
		r.record++
		return nil, 0, 0, 0, &DamageError{Record: r.record, Offset: start, What: "file ends inside a record header (truncated capture)"}
	}
	r.record++
	sec, frac := uint64(r.u32(r.hdr[0:])), uint64(r.u32(r.hdr[4:]))
	capLen, orig := int(r.u32(r.hdr[8:])), int(r.u32(r.hdr[12:]))
	if capLen > MaxRecord || (r.snap >= 64 && capLen > int(max(r.snap, 65535))) {
		return nil, 0, 0, 0, &DamageError{Record: r.record, Offset: start, What: fmt.Sprintf("captured length %d (snaplen %d)", capLen, r.snap)}
	}
	if capLen > orig {
		return nil, 0, 0, 0, &DamageError{Record: r.record, Offset: start, What: fmt.Sprintf("captured length %d exceeds the frame's length %d", capLen, orig)}
	}
	// A record too long for dst is consumed like any other (and its
	// timestamp checked), then reported as ErrTooLong.
	tooLong := capLen > len(dst)
	if tooLong {
		if err := r.skip(capLen); err != nil {
			return nil, 0, 0, 0, &DamageError{Record: r.record, Offset: start, What: "file ends inside a record (truncated capture)"}
		}
	} else if err := r.read(dst[:capLen]); err != nil {
		return nil, 0, 0, 0, &DamageError{Record: r.record, Offset: start, What: "file ends inside a record (truncated capture)"}
	}
	if frac*r.scale >= 1e9 {
		unit := "microseconds"
		if r.scale == 1 {
			unit = "nanoseconds"
		}
		return nil, 0, 0, 0, &DamageError{Record: r.record, Offset: start, Local: true, What: fmt.Sprintf("impossible timestamp: %d %s past the second", frac, unit)}
	}
	if tooLong {
		r.start, r.skipped = start, sec*1e9+frac*r.scale
		return nil, 0, 0, 0, ErrTooLong
	}
	r.start = start
	return dst[:capLen], r.link, sec*1e9 + frac*r.scale, orig, nil
}

// ReadFrames reads every frame of the capture r holds, each a copy, in
// file order. It stops at the first error other than io.EOF, damage
// included, and returns it with the frames read before it.
func ReadFrames(r io.Reader) ([][]byte, error) {
	rd, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	var frames [][]byte
	buf := make([]byte, MaxRecord)
	for {
		f, _, _, _, err := rd.Next(buf)
		if err == io.EOF {
			return frames, nil
		}
		if err != nil {
			return frames, err
		}
		frames = append(frames, append([]byte(nil), f...))
	}
}
