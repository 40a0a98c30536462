package dataplane

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/ldafwd/ldafwd/ring"
)

// TapConfig configures a capture tap: a pcapng file of what a port
// receives.
type TapConfig struct {
	// Name is the pcapng interface name (the port's spec).
	Name string
	// SnapLen is how many bytes of each frame are kept; 0: 9216 (a jumbo
	// frame whole). Longer frames are cut and their original length kept.
	SnapLen int
	// Slots is how many frames each lane's ring holds between the worker
	// and the writer; a power of two, 0: 4096. A full ring costs frames
	// of the capture (Skipped), never of the traffic.
	Slots int
	// MaxBytes stops capturing once the file would grow past it (frames
	// after that are counted in Limited); 0: no limit.
	MaxBytes int64
	// FlushEvery is how often the writer pushes buffered blocks to the
	// file; 0: 100 ms.
	FlushEvery time.Duration
}

// Tap writes a pcapng file (nanosecond timestamps, the port's receive
// times) of the frames a port receives, off the packet path: each lane
// reading the port copies the burst it received into a bounded ring of
// preallocated slots (TapRing.Copy: no allocation, no lock, no syscall),
// or counts the frames it has no free slot for; one goroutine drains the
// rings into the file. Capturing never drops, delays beyond that copy, or
// changes a user's frame.
//
// Lifetime: NewTap, one Ring per lane that reads the port (before Start),
// Start, then Close once the lanes' workers have stopped: Close writes
// what the rings still hold, flushes and closes the file.
type Tap struct {
	cfg   TapConfig
	f     io.WriteCloser
	bw    *bufio.Writer
	w     *pcapgo.NgWriter
	rings []*TapRing

	captured atomic.Uint64 // frames written to the file
	skipped  atomic.Uint64 // frames a lane found no free slot for
	limited  atomic.Uint64 // frames not captured: MaxBytes reached
	full     atomic.Bool   // MaxBytes reached: lanes stop copying
	written  int64         // bytes in the file (writer goroutine)
	err      error         // first write error (writer goroutine; read after Close)

	stop    chan struct{}
	done    chan struct{}
	started bool
	once    sync.Once
}

// TapStats are a tap's counters.
type TapStats struct {
	Captured uint64 // frames written to the file
	Skipped  uint64 // frames not captured: the lane's ring was full (the writer fell behind)
	Limited  uint64 // frames not captured: the file reached MaxBytes
}

// CreateTap creates (truncates) the file at path and writes the pcapng
// section and interface headers.
func CreateTap(path string, cfg TapConfig) (*Tap, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	t, err := NewTap(f, cfg)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// NewTap writes the pcapng headers to w; Close closes w.
func NewTap(w io.WriteCloser, cfg TapConfig) (*Tap, error) {
	if cfg.SnapLen == 0 {
		cfg.SnapLen = 9216
	}
	if cfg.Slots == 0 {
		cfg.Slots = 4096
	}
	if cfg.FlushEvery == 0 {
		cfg.FlushEvery = 100 * time.Millisecond
	}
	if cfg.SnapLen < 64 || cfg.SnapLen > 65535 {
		return nil, fmt.Errorf("tap: snap length %d outside [64, 65535]", cfg.SnapLen)
	}
	if cfg.Slots < 64 || cfg.Slots&(cfg.Slots-1) != 0 || cfg.Slots > 1<<20 {
		return nil, fmt.Errorf("tap: %d slots: a power of two in [64, 2^20]", cfg.Slots)
	}
	if cfg.MaxBytes < 0 {
		return nil, errors.New("tap: negative size limit")
	}
	cw := &countWriter{w: w}
	t := &Tap{cfg: cfg, f: w, bw: bufio.NewWriterSize(cw, 1<<20), stop: make(chan struct{}), done: make(chan struct{})}
	intf := pcapgo.DefaultNgInterface
	intf.Name, intf.LinkType, intf.SnapLength, intf.TimestampResolution = cfg.Name, layers.LinkTypeEthernet, uint32(cfg.SnapLen), 9
	opts := pcapgo.DefaultNgWriterOptions
	opts.SectionInfo.Application = "ldafwd"
	var err error
	// NgWriter wraps t.bw (bufio hands back a large enough *bufio.Writer
	// as it is): one 1 MiB buffer between the blocks and the file.
	if t.w, err = pcapgo.NewNgWriterInterface(t.bw, intf, opts); err != nil {
		return nil, err
	}
	if err := t.w.Flush(); err != nil {
		return nil, err
	}
	t.written = cw.n // the section and interface headers
	return t, nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// Ring adds the ring of one lane that reads the tap's port; only that
// lane's worker may call its Copy. Call it before Start. A nil Tap gives
// a nil ring, whose Copy does nothing.
func (t *Tap) Ring(burst int) (*TapRing, error) {
	if t == nil {
		return nil, nil
	}
	if t.started {
		return nil, errors.New("tap: Ring after Start")
	}
	if burst <= 0 {
		burst = 32
	}
	r := &TapRing{tap: t, snap: t.cfg.SnapLen, data: make([]byte, t.cfg.Slots*t.cfg.SnapLen),
		meta: make([]tapSlot, t.cfg.Slots), idx: make([]uint32, burst)}
	var err error
	if r.free, err = ring.NewSPSC[uint32](t.cfg.Slots); err != nil {
		return nil, err
	}
	if r.filled, err = ring.NewSPSC[uint32](t.cfg.Slots); err != nil {
		return nil, err
	}
	all := make([]uint32, t.cfg.Slots)
	for i := range all {
		all[i] = uint32(i)
	}
	r.free.EnqueueBulk(all)
	t.rings = append(t.rings, r)
	return r, nil
}

// Start starts the writer goroutine.
func (t *Tap) Start() {
	if t == nil || t.started {
		return
	}
	t.started = true
	go t.run()
}

// Stats returns the counters; safe from any goroutine.
func (t *Tap) Stats() TapStats {
	if t == nil {
		return TapStats{}
	}
	return TapStats{Captured: t.captured.Load(), Skipped: t.skipped.Load(), Limited: t.limited.Load()}
}

// Name is the tap's interface name.
func (t *Tap) Name() string { return t.cfg.Name }

// Close stops the writer after it has written what the rings hold,
// flushes and closes the file, and returns the first write or close
// error. Call it after the lanes' workers have stopped.
func (t *Tap) Close() error {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		if t.started {
			close(t.stop)
			<-t.done
		} else {
			t.drain()
		}
		if err := t.bw.Flush(); err != nil && t.err == nil {
			t.err = err
		}
		if err := t.f.Close(); err != nil && t.err == nil {
			t.err = err
		}
	})
	return t.err
}

func (t *Tap) run() {
	defer close(t.done)
	tick := time.NewTicker(t.cfg.FlushEvery)
	defer tick.Stop()
	idle := 0
	for {
		if t.drain() > 0 {
			idle = 0
			continue
		}
		select {
		case <-t.stop:
			t.drain() // the workers have stopped: what is left is all
			return
		case <-tick.C:
			if t.err == nil {
				if err := t.w.Flush(); err != nil {
					t.err = err
				}
			}
		default:
			// Nothing to write: back off up to 1 ms (a capture is read
			// later; latency here costs nothing but ring room).
			idle = min(idle+1, 10)
			time.Sleep(time.Duration(idle) * 100 * time.Microsecond)
		}
	}
}

// drain writes what every ring holds and returns the frames it took.
func (t *Tap) drain() int {
	var idx [64]uint32
	total := 0
	for _, r := range t.rings {
		for {
			n := r.filled.DequeueBurst(idx[:])
			if n == 0 {
				break
			}
			for _, i := range idx[:n] {
				t.write(r, i)
			}
			r.free.EnqueueBulk(idx[:n])
			total += n
		}
	}
	return total
}

// write writes slot i of r as an Enhanced Packet Block.
func (t *Tap) write(r *TapRing, i uint32) {
	m := r.meta[i]
	if t.err != nil {
		t.skipped.Add(1)
		return
	}
	block := int64(32 + (m.n+3)&^3)
	if t.cfg.MaxBytes > 0 && t.written+block > t.cfg.MaxBytes {
		t.full.Store(true)
		t.limited.Add(1)
		return
	}
	data := r.data[int(i)*r.snap : int(i)*r.snap+int(m.n)]
	ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(m.ts)), CaptureLength: int(m.n), Length: int(m.orig)}
	if err := t.w.WritePacket(ci, data); err != nil {
		t.err = err
		t.skipped.Add(1)
		return
	}
	t.written += block
	t.captured.Add(1)
}

// tapSlot describes the frame in one slot.
type tapSlot struct {
	ts      uint64
	n, orig uint32
}

// TapRing is one lane's side of a Tap: free slots come back from the
// writer on free, copied frames go to it on filled (two SPSC rings, so
// neither side waits for the other).
type TapRing struct {
	tap          *Tap
	free, filled *ring.SPSC[uint32]
	snap         int
	data         []byte
	meta         []tapSlot
	idx          []uint32
}

// Copy copies the frames of a received burst (with their receive
// timestamps) into free slots and hands them to the writer. Frames it has
// no free slot for are counted in Skipped, once per burst: the capture
// loses them, the traffic does not. It allocates nothing and takes no
// lock. A nil ring does nothing.
func (r *TapRing) Copy(pkts []*Packet) {
	if r == nil || len(pkts) == 0 {
		return
	}
	if r.tap.full.Load() {
		r.tap.limited.Add(uint64(len(pkts)))
		return
	}
	skipped := 0
	for len(pkts) > 0 {
		chunk := pkts[:min(len(pkts), len(r.idx))]
		pkts = pkts[len(chunk):]
		k := r.free.DequeueBurst(r.idx[:len(chunk)])
		for j, i := range r.idx[:k] {
			p := chunk[j]
			n := copy(r.data[int(i)*r.snap:int(i+1)*r.snap], p.Data)
			r.meta[i] = tapSlot{ts: p.TS, n: uint32(n), orig: uint32(len(p.Data))}
		}
		r.filled.EnqueueBulk(r.idx[:k]) // room for every slot: never fails
		skipped += len(chunk) - k
	}
	if skipped > 0 {
		r.tap.skipped.Add(uint64(skipped))
	}
}
