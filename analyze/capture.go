package analyze

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"

	"github.com/ldafwd/ldafwd/dataplane/pcapfile"
)

// DamageError says where and how a capture is damaged (file, packet record
// counted from 1, byte offset); see pcapfile.DamageError.
type DamageError = pcapfile.DamageError

// Capture reads one pcap or pcapng file frame by frame and hands out
// Ethernet frames with absolute ns timestamps. Frames of raw-IP link types
// get a synthetic Ethernet header so the classifier sees one framing. A
// gzip- or zstd-compressed capture is decompressed as it is read (told by
// its first bytes, not by its name). A capture read from a file (or any
// io.ReadSeeker) can be read again from its start (Rewind): the streaming
// analysis reads each capture more than once instead of holding it.
//
// Damage is recorded, never hidden: a record whose timestamp is impossible
// is skipped and kept in Damage (the rest of the file is still read); a
// record that cannot be what it claims (a block whose lengths disagree, a
// file that ends inside a record) ends the stream and is kept in Damage
// too. Run then refuses the pair or marks the affected intervals invalid.
type Capture struct {
	name string
	f    *os.File
	src  io.Reader
	// rewind seeks src back to where the capture starts; nil when src
	// cannot seek (a pipe).
	rewind func() error
	rd     *pcapfile.Reader
	cnt    *countingReader // bytes read from the file so far (compressed bytes, when compressed)
	unz    *unzReader      // the decompressor, when compressed
	size   int64           // the file's size; 0: unknown (not a regular file)
	// ra reads the capture at any offset (a file, a bytes.Reader): from
	// base to end in it, when the capture is not compressed. The
	// analysis then reads it in pieces on several cores (segment.go),
	// each through a view: a Capture of its own reading from proto's
	// state (the file's header as read) at a record boundary.
	ra        io.ReaderAt
	base, end int64
	proto     *pcapfile.Reader
	firstTS   uint64   // the first frame's timestamp
	viewOf    *Capture // a view: the capture it reads part of
	// Two record buffers (pcapfile.MaxRecord + room for a synthetic Ethernet
	// header): the frame handed out lives in one while the lookahead is read
	// into the other.
	bufs [2][]byte
	cur  int

	// Lookahead: the next frame, read but not yet consumed.
	data   []byte
	ts     uint64
	orig   int
	record uint64
	off    uint64 // the lookahead's byte offset in the file
	valid  bool
	err    error // sticky: io.EOF at the end, or why the stream ended early
	prevTS uint64
	// lastOff is the byte offset of the frame next returned last.
	lastOff uint64

	Frames    uint64         // frames handed out
	Truncated uint64         // frames cut short by the capture's snap length
	Damage    []*DamageError // damaged records, in file order
	// EndedEarly is the damage (or unsupported content) that ended the
	// stream before the end of the file; nil otherwise.
	EndedEarly error
}

// OpenCapture opens a pcap or pcapng file, gzip- or zstd-compressed or
// not. A file that is neither gives a clear error naming it, never a
// panic.
func OpenCapture(path string) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c, err := NewCapture(path, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.f = f
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		c.size = fi.Size()
	}
	return c, nil
}

// NewCapture reads a capture from r; name is used in errors. When r is an
// io.ReadSeeker the capture can be rewound (Rewind).
func NewCapture(name string, r io.Reader) (*Capture, error) {
	c := &Capture{name: name, src: r}
	base := int64(-1)
	if s, ok := r.(io.ReadSeeker); ok {
		if at, err := s.Seek(0, io.SeekCurrent); err == nil {
			base = at
			c.rewind = func() error {
				_, err := s.Seek(at, io.SeekStart)
				return err
			}
		}
	}
	c.bufs[0], c.bufs[1] = make([]byte, pcapfile.MaxRecord+14), make([]byte, pcapfile.MaxRecord+14)
	if err := c.start(); err != nil {
		return nil, err
	}
	if ra, ok := r.(io.ReaderAt); ok && c.unz == nil && base >= 0 {
		s := r.(io.Seeker)
		if at, err := s.Seek(0, io.SeekCurrent); err == nil {
			if end, err := s.Seek(0, io.SeekEnd); err == nil {
				if _, err := s.Seek(at, io.SeekStart); err == nil {
					c.ra, c.base, c.end = ra, base, end
				}
			}
		}
	}
	return c, nil
}

// Compression magics: a capture starting with one is decompressed.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// maxZstdWindow bounds the memory a zstd frame may ask for: a forged
// header cannot make the reader allocate gigabytes. zstd's own command
// line writes windows of at most 128 MiB unless told --long=31.
const maxZstdWindow = 128 << 20

// start reads the capture's header from where src is now and readies the
// first frame.
func (c *Capture) start() error {
	c.cnt = &countingReader{r: c.src}
	br := bufio.NewReaderSize(c.cnt, 64<<10)
	var in io.Reader = br
	head, _ := br.Peek(4)
	switch {
	case len(head) >= 2 && head[0] == gzipMagic[0] && head[1] == gzipMagic[1]:
		z, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%s: gzip-compressed, but %v", c.name, err)
		}
		c.unz = &unzReader{r: z, kind: "gzip"}
		in = c.unz
	case len(head) == 4 && string(head) == string(zstdMagic):
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderMaxMemory(maxZstdWindow))
		if err != nil {
			return fmt.Errorf("%s: zstd-compressed, but %v", c.name, err)
		}
		c.unz = &unzReader{r: z, kind: "zstd", close: z.Close}
		in = c.unz
	}
	rd, err := pcapfile.NewReader(in)
	if err != nil {
		if c.unz != nil && c.unz.err != nil {
			return fmt.Errorf("%s: %s stream damaged: %v", c.name, c.unz.kind, c.unz.err)
		}
		return fmt.Errorf("%s: %w", c.name, err)
	}
	c.rd = rd
	c.proto = nil
	c.cur, c.valid, c.err, c.prevTS = 0, false, nil, 0
	c.Frames, c.Truncated, c.Damage, c.EndedEarly = 0, 0, nil, nil
	c.advance()
	if c.unz == nil {
		// The header's state once the first packet is read (a pcapng
		// file's interfaces are described before it).
		c.proto = rd.At(nil, 0)
		c.firstTS = c.ts
	}
	return nil
}

// unzReader is a decompressor that remembers why it failed, so that
// damage found in the compressed stream is named as such rather than as
// a capture that ends inside a record.
type unzReader struct {
	r     io.Reader
	kind  string
	close func()
	err   error
}

func (u *unzReader) Read(b []byte) (int, error) {
	n, err := u.r.Read(b)
	if err != nil && err != io.EOF && u.err == nil {
		u.err = err
	}
	return n, err
}

// CanRewind says whether Rewind can read the capture again.
func (c *Capture) CanRewind() bool { return c.rewind != nil }

// Rewind starts the capture again from its first frame, as if newly
// opened: counts and damage start again too.
func (c *Capture) Rewind() error {
	if c.rewind == nil {
		return fmt.Errorf("%s: cannot be read twice (not a file)", c.name)
	}
	if c.unz != nil && c.unz.close != nil {
		c.unz.close()
	}
	c.unz = nil
	if err := c.rewind(); err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	return c.start()
}

// Name is the capture's path.
func (c *Capture) Name() string { return c.name }

// SnapLen is the capture's snap length as its headers state it (0: none
// stated).
func (c *Capture) SnapLen() uint32 { return c.rd.SnapLen() }

// Size is the capture file's size in bytes, 0 when unknown (a pipe, or a
// capture made by NewCapture).
func (c *Capture) Size() int64 { return c.size }

// BytesRead is how many bytes of the file have been read so far (the
// reader reads ahead, by up to its buffer).
func (c *Capture) BytesRead() int64 { return c.cnt.n }

// countingReader counts the bytes read through it, for progress.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// Close closes the underlying file, if any.
func (c *Capture) Close() error {
	if c.unz != nil && c.unz.close != nil {
		c.unz.close()
		c.unz = nil
	}
	if c.f != nil {
		return c.f.Close()
	}
	return nil
}

// Peek returns the timestamp of the next frame without consuming it.
func (c *Capture) Peek() (ts uint64, ok bool) { return c.ts, c.valid }

// Next returns the next frame and its timestamp (ns since the Unix epoch).
// The frame is valid until the following call.
func (c *Capture) Next() (frame []byte, ts uint64, ok bool) {
	frame, ts, _, _, ok = c.next()
	return frame, ts, ok
}

// next is Next with the record's original length and number.
func (c *Capture) next() (frame []byte, ts uint64, orig int, record uint64, ok bool) {
	if !c.valid {
		return nil, 0, 0, 0, false
	}
	frame, ts, orig, record = c.data, c.ts, c.orig, c.record
	c.lastOff = c.off
	c.cur ^= 1 // the lookahead goes into the other buffer
	c.Frames++
	c.advance()
	return frame, ts, orig, record, true
}

// advance reads the lookahead frame, skipping (and recording) records
// with impossible timestamps.
func (c *Capture) advance() {
	c.valid = false
	for c.err == nil {
		buf := c.bufs[c.cur]
		frame, link, ts, orig, err := c.rd.Next(buf[14:])
		if err != nil {
			var d *DamageError
			if errors.As(err, &d) {
				d.File, d.AfterNs = c.name, c.prevTS
				if c.unz != nil && c.unz.err != nil {
					d.What += fmt.Sprintf(" (%s stream damaged: %v)", c.unz.kind, c.unz.err)
				}
				c.Damage = append(c.Damage, d)
				if d.Local {
					continue
				}
			}
			c.err = err
			if err != io.EOF {
				c.EndedEarly = fmt.Errorf("%s: %w", c.name, err)
				if d != nil {
					c.EndedEarly = d
				}
			}
			return
		}
		if len(frame) < orig {
			c.Truncated++
		}
		if link != pcapfile.LinkEthernet {
			// Raw IP gets a zero-MAC Ethernet header of the right
			// EtherType; MACs are never part of the identity, so the fake
			// header changes nothing measured.
			et := uint16(0x0800)
			if len(frame) > 0 && frame[0]>>4 == 6 {
				et = 0x86DD
			}
			clear(buf[:12])
			binary.BigEndian.PutUint16(buf[12:], et)
			frame = buf[:14+len(frame)]
			orig += 14
		}
		c.data, c.ts, c.orig, c.record, c.valid = frame, ts, orig, c.rd.Record(), true
		c.off = c.rd.Start()
		c.prevTS = ts
		return
	}
}

// canSplit says whether the capture can be read in pieces: it is not
// compressed and can be read at any offset.
func (c *Capture) canSplit() bool { return c.ra != nil && c.proto != nil && c.viewOf == nil }

// fileEnd is the byte offset in the file at which the capture ends.
func (c *Capture) fileEnd() uint64 { return uint64(c.end - c.base) }

// maxSyncBefore: a record found by searching the file (syncAt) is
// stamped no earlier than this before its first record; what would be is
// not a record (disorder beyond MaxBackStep is refused anyway).
const maxSyncBefore = 1_000_000_000

// syncAt finds the first packet record that starts at byte offset off of
// the file or after it (pcapfile.Reader.Sync): its offset and timestamp.
// Raw timestamps: a record's, as the file states it.
func (c *Capture) syncAt(off uint64, buf []byte) (at, ts uint64, ok bool) {
	n, err := c.ra.ReadAt(buf, c.base+int64(off))
	if n <= 0 || (err != nil && err != io.EOF) {
		return 0, 0, false
	}
	return c.proto.Sync(buf[:n], off, MaxBackStep, c.firstTS-min(c.firstTS, maxSyncBefore))
}

// view is a Capture reading the file's bytes [from, to): from must be 0
// (the file's start) or where a packet record starts, to the file's end or
// where one starts. A view cannot be rewound.
func (c *Capture) view(from, to uint64) (*Capture, error) {
	v := &Capture{name: c.name, viewOf: c}
	v.bufs[0], v.bufs[1] = make([]byte, pcapfile.MaxRecord+14), make([]byte, pcapfile.MaxRecord+14)
	src := io.NewSectionReader(c.ra, c.base+int64(from), int64(to-from))
	v.cnt = &countingReader{r: src}
	if from == 0 {
		rd, err := pcapfile.NewReader(v.cnt)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		v.rd = rd
	} else {
		v.rd = c.proto.At(v.cnt, from)
	}
	v.advance()
	return v, nil
}
