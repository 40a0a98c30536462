package analyze

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// packetSource is what both pcapgo readers offer.
type packetSource interface {
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// Capture reads one pcap or pcapng file frame by frame and hands out
// Ethernet frames with absolute ns timestamps. Frames of raw-IP link types
// get a synthetic Ethernet header so the classifier sees one framing.
type Capture struct {
	name    string
	f       *os.File
	src     packetSource
	link    layers.LinkType
	scratch []byte

	// Lookahead: the next frame, read but not yet consumed.
	data  []byte
	ts    uint64
	valid bool
	err   error // sticky: io.EOF at the end, or why the stream ended early

	Frames     uint64 // frames handed out
	Truncated  uint64 // records cut short by the capture's snap length
	EndedEarly error  // a damaged record ended the stream before EOF (nil otherwise)
}

// pcap and pcapng magic numbers, as they appear in the first four bytes.
const (
	magicPcapMicro   = 0xa1b2c3d4
	magicPcapNano    = 0xa1b23c4d
	magicPcapngBlock = 0x0a0d0d0a
)

// OpenCapture opens a pcap or pcapng file. A file that is neither gives a
// clear error naming it, never a panic.
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
	return c, nil
}

// errParserPanic wraps a panic of the third-party capture parser.
var errParserPanic = errors.New("malformed capture (the pcap/pcapng parser failed on it)")

// NewCapture reads a capture from r; name is used in errors.
//
// gopacket's pcapgo readers can panic on a forged header (FuzzCapture found
// one in NgReader.readInterfaceDescriptor); analyze must never crash on
// input, so the calls into them recover and report a clear error. (The
// pcap port's own bounded reader, dataplane/pcapport_read.go, does not
// have this problem: moving analyze onto it is the better fix.)
func NewCapture(name string, r io.Reader) (c *Capture, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("%s: %w: %v", name, errParserPanic, p)
		}
	}()
	return newCapture(name, r)
}

func newCapture(name string, r io.Reader) (*Capture, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	head, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("%s: too short to be a pcap or pcapng file (%d bytes)", name, len(head))
	}
	le, be := binary.LittleEndian.Uint32(head), binary.BigEndian.Uint32(head)
	c := &Capture{name: name, scratch: make([]byte, 0, 65536+14)}
	switch {
	case le == magicPcapngBlock:
		ng, err := pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s: bad pcapng header: %w", name, err)
		}
		c.src, c.link = ng, ng.LinkType()
	case le == magicPcapMicro || be == magicPcapMicro || le == magicPcapNano || be == magicPcapNano:
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: bad pcap header: %w", name, err)
		}
		c.src, c.link = pr, pr.LinkType()
	default:
		return nil, fmt.Errorf("%s: not a pcap or pcapng file (first bytes %02x %02x %02x %02x)", name, head[0], head[1], head[2], head[3])
	}
	switch c.link {
	case layers.LinkTypeEthernet, layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6, 12 /* DLT_RAW on some systems */ :
	default:
		return nil, fmt.Errorf("%s: link type %v is not supported (Ethernet or raw IP)", name, c.link)
	}
	c.advance()
	return c, nil
}

// Name is the capture's path.
func (c *Capture) Name() string { return c.name }

// Close closes the underlying file, if any.
func (c *Capture) Close() error {
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
	if !c.valid {
		return nil, 0, false
	}
	frame, ts = c.data, c.ts
	// Copy out: the zero-copy reader reuses its buffer on advance. Raw IP
	// gets a zero-MAC Ethernet header of the right EtherType; MACs are never
	// part of the identity (DESIGN §2), so the fake header changes nothing
	// measured.
	if c.link != layers.LinkTypeEthernet {
		et := uint16(0x0800)
		if len(frame) > 0 && frame[0]>>4 == 6 {
			et = 0x86DD
		}
		c.scratch = append(c.scratch[:0], zeroEthernet[:]...)
		binary.BigEndian.PutUint16(c.scratch[12:], et)
		c.scratch = append(c.scratch, frame...)
	} else {
		c.scratch = append(c.scratch[:0], frame...)
	}
	frame = c.scratch
	c.advance()
	c.Frames++
	return frame, ts, true
}

func (c *Capture) advance() {
	c.valid = false
	if c.err != nil {
		return
	}
	data, ci, err := c.read()
	if err != nil {
		c.err = err
		if !errors.Is(err, io.EOF) {
			c.EndedEarly = fmt.Errorf("%s: capture ends with a damaged record after %d frames: %w", c.name, c.Frames, err)
		}
		return
	}
	if ci.CaptureLength < ci.Length {
		c.Truncated++
	}
	c.data, c.ts, c.valid = data, uint64(ci.Timestamp.UnixNano()), true
}

var zeroEthernet [14]byte

// read is one ZeroCopyReadPacketData with the parser's panics turned into a
// damaged-record error (see NewCapture).
func (c *Capture) read() (data []byte, ci gopacket.CaptureInfo, err error) {
	defer func() {
		if p := recover(); p != nil {
			data, err = nil, fmt.Errorf("%w: %v", errParserPanic, p)
		}
	}()
	return c.src.ZeroCopyReadPacketData()
}
