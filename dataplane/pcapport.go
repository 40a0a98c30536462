package dataplane

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/ldafwd/ldafwd/dataplane/pcapfile"
)

// PcapConfig describes a pcap port: a file it reads frames from, a file
// it writes transmitted frames to, or both.
type PcapConfig struct {
	Rx    string        // pcap or pcapng file to receive from; "" for none
	Tx    string        // pcap file (ns timestamps) to write transmitted frames to; "" for none
	Pace  bool          // replay Rx at file pace (gaps between timestamps kept) instead of full speed
	Clock func() uint64 // ns; default CLOCK_REALTIME
	MTU   int           // buffer size, bytes; default 2048; longer records are counted in RxErrors and skipped
	Pool  int           // buffers; default 1024
	Burst int           // largest burst; default 64
	// TxPacketTS writes each frame with its Packet.TS instead of the
	// clock at TxBurst (keeps a capture's own timestamps when copying
	// pcap to pcap).
	TxPacketTS bool
}

// PcapPort reads frames from a capture file and/or writes frames to one.
//
// Rx timestamps: at full speed TS is the record's own timestamp (ns), so
// an offline analysis sees the capture's times; at file pace the first
// record is released at the first RxBurst and each later one when the
// clock has advanced by its offset from the first, and TS is that release
// time. A record timestamped before its predecessor is released at once.
//
// Records are read by pcapfile.Reader, which checks each one. The stream
// ends at end of file; a damaged record (truncated, lengths that disagree,
// an impossible timestamp), a pcapng interface of a link type that is
// neither Ethernet nor raw IP, or a simple packet block (no timestamp) ends
// it too, counts one RxError and is kept in RxErr (a *pcapfile.DamageError
// naming the file, record and byte offset for damage). A record longer
// than the MTU or from a raw-IP pcapng interface is skipped and counted in
// RxErrors.
type PcapPort struct {
	name  string
	cfg   PcapConfig
	pool  *PacketPool
	clock func() uint64
	peer  Port

	rf     *os.File
	rd     *pcapfile.Reader
	eof    bool
	rxErr  error // why the stream ended early; nil at a clean EOF
	spare  []*Packet
	nspare int
	pend   *Packet // read, not yet due (file pace)
	pendTS uint64  // file timestamp of pend, ns
	t0, s0 uint64  // first file timestamp and its release time (file pace)
	last   uint64  // release time of the previous frame (file pace)
	paced  bool    // t0/s0 set

	wf      *os.File
	bw      *bufio.Writer
	w       *pcapgo.Writer
	txErr   error
	pooled  []*Packet
	foreign []*Packet

	closed                     atomic.Bool
	rxPkts, rxBytes, rxErrs    atomic.Uint64
	txPkts, txBytes, txDropped atomic.Uint64
	badFree                    atomic.Uint64
	rxEnded                    atomic.Bool
}

// ErrPcapFormat is wrapped by the NewPcapPort error for a receive file
// that is not a pcap or pcapng file of Ethernet frames.
var ErrPcapFormat = pcapfile.ErrNotCapture

// MaxPcapRecord bounds a record's captured length, bytes (the Tx file's
// snaplen; longer records read are damage).
const MaxPcapRecord = pcapfile.MaxRecord

// ErrPcapConfig is wrapped by NewPcapPort / OpenPcapPort config errors.
var ErrPcapConfig = errors.New("dataplane: bad pcap port")

// OpenPcapPort resolves "pcap:<file>[,pace][,tx=<file>]": receive from
// <file> (at full speed, or at file pace with ",pace") and, with
// ",tx=<out>", write transmitted frames to <out>. An empty <file>
// ("pcap:,tx=out.pcap") gives a transmit-only port.
func OpenPcapPort(spec string) (Port, error) {
	rest, ok := strings.CutPrefix(spec, "pcap:")
	if !ok {
		return nil, fmt.Errorf("%w: spec %q does not start with pcap:", ErrPcapConfig, spec)
	}
	parts := strings.Split(rest, ",")
	cfg := PcapConfig{Rx: parts[0]}
	for _, o := range parts[1:] {
		switch k, v, _ := strings.Cut(o, "="); k {
		case "pace":
			cfg.Pace = true
		case "tx":
			cfg.Tx = v
		default:
			return nil, fmt.Errorf("%w: spec %q: unknown option %q (want pace, tx=<file>)", ErrPcapConfig, spec, o)
		}
	}
	return NewPcapPort(spec, cfg)
}

// NewPcapPort opens the files of cfg. A receive file that is not a pcap
// or pcapng file with an Ethernet link type is an error here, not later.
func NewPcapPort(name string, cfg PcapConfig) (*PcapPort, error) {
	if cfg.Rx == "" && cfg.Tx == "" {
		return nil, fmt.Errorf("%w: %s: neither a file to read nor one to write", ErrPcapConfig, name)
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.Pool == 0 {
		cfg.Pool = 1024
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.Burst < 1 || cfg.Burst > cfg.Pool {
		return nil, fmt.Errorf("%w: burst %d outside [1, pool size %d]", ErrPcapConfig, cfg.Burst, cfg.Pool)
	}
	if cfg.Clock == nil {
		cfg.Clock = RealtimeClock
	}
	pool, err := NewPacketPool(cfg.Pool, cfg.MTU)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPcapConfig, name, err)
	}
	p := &PcapPort{
		name: name, cfg: cfg, pool: pool, clock: cfg.Clock,
		spare: make([]*Packet, cfg.Burst), pooled: make([]*Packet, cfg.Burst), foreign: make([]*Packet, cfg.Burst),
	}
	if cfg.Rx != "" {
		if p.rf, err = os.Open(cfg.Rx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("%w: %s: %w", ErrPcapConfig, name, err)
		}
		if p.rd, err = openPcapRx(p.rf); err != nil {
			p.rf.Close()
			pool.Close()
			return nil, fmt.Errorf("%s: %s: %w", name, cfg.Rx, err)
		}
	} else {
		p.eof = true
		p.rxEnded.Store(true)
	}
	if cfg.Tx != "" {
		if p.wf, err = os.Create(cfg.Tx); err != nil {
			if p.rf != nil {
				p.rf.Close()
			}
			pool.Close()
			return nil, fmt.Errorf("%w: %s: %w", ErrPcapConfig, name, err)
		}
		p.bw = bufio.NewWriterSize(p.wf, 256<<10)
		p.w = pcapgo.NewWriterNanos(p.bw)
		// snaplen: frames handed over from another pool may exceed our
		// MTU, and readers (pcapgo among them) reject records longer than
		// the header's snaplen; 256 KiB is tcpdump's maximum.
		if err := p.w.WriteFileHeader(MaxPcapRecord, layers.LinkTypeEthernet); err != nil {
			p.Close()
			return nil, fmt.Errorf("%w: %s: %w", ErrPcapConfig, name, err)
		}
	}
	return p, nil
}

// Name is the spec the port was opened with.
func (p *PcapPort) Name() string { return p.name }

// SetPeer: as RingPort.SetPeer, for frames from non-pool ports.
func (p *PcapPort) SetPeer(peer Port) { p.peer = peer }

// Done reports whether the receive stream has ended (end of file, or a
// truncated/malformed record) and no frame is pending.
func (p *PcapPort) Done() bool { return p.rxEnded.Load() }

// RxErr is why the receive stream ended early (nil at a clean end of file
// or while it runs). Read it after Done from the rx goroutine or after Close.
func (p *PcapPort) RxErr() error { return p.rxErr }

// TxErr is the first write error (nil if none); frames after it are
// counted in TxDropped.
func (p *PcapPort) TxErr() error { return p.txErr }

// RxBurst returns the next frames of the file (see PcapPort for timing).
func (p *PcapPort) RxBurst(pkts []*Packet) int {
	if p.closed.Load() || (p.eof && p.pend == nil) {
		return 0
	}
	var now uint64
	if p.cfg.Pace {
		now = p.clock()
	}
	n, bytes := 0, 0
	for n < len(pkts) {
		if p.pend == nil && !p.readOne() {
			break
		}
		q := p.pend
		if p.cfg.Pace {
			if !p.paced {
				p.t0, p.s0, p.last, p.paced = p.pendTS, now, now, true
			}
			due := p.last
			if p.pendTS > p.t0 && p.s0+(p.pendTS-p.t0) > due {
				due = p.s0 + (p.pendTS - p.t0)
			}
			if due > now {
				break
			}
			p.last = due
			q.TS = due
		} else {
			q.TS = p.pendTS
		}
		p.pend = nil
		pkts[n] = q
		bytes += len(q.Data)
		n++
	}
	if p.eof && p.pend == nil {
		p.rxEnded.Store(true)
	}
	if n > 0 {
		p.rxPkts.Add(uint64(n))
		p.rxBytes.Add(uint64(bytes))
	}
	return n
}

// readOne reads the next returnable record into p.pend; false at the end
// of the stream or when the pool is empty.
func (p *PcapPort) readOne() bool {
	for !p.eof {
		if p.nspare == 0 {
			p.nspare = p.pool.Alloc(p.spare)
			if p.nspare == 0 {
				return false
			}
		}
		q := p.spare[p.nspare-1]
		frame, link, ts, _, err := p.rd.Next(q.Data[:cap(q.Data)])
		switch {
		case err == nil && link == pcapfile.LinkEthernet:
			p.nspare--
			q.Data = q.Data[:len(frame)]
			p.pend, p.pendTS = q, ts
			return true
		case err == nil, err == pcapfile.ErrTooLong:
			p.rxErrs.Add(1) // raw IP, or longer than the MTU: skipped
		default:
			if err != io.EOF {
				p.rxErrs.Add(1)
				var d *pcapfile.DamageError
				if errors.As(err, &d) {
					d.File = p.cfg.Rx
				} else {
					err = fmt.Errorf("%s: %w", p.cfg.Rx, err)
				}
				p.rxErr = err
			}
			p.eof = true
			p.pool.Free(p.spare[:p.nspare])
			p.nspare = 0
		}
	}
	return false
}

// openPcapRx opens a receive stream: a pcap or pcapng file whose classic
// link type is Ethernet (a pcapng file's link types come per interface,
// with each record). Any other start is an error wrapping ErrPcapFormat.
func openPcapRx(r io.Reader) (*pcapfile.Reader, error) {
	rd, err := pcapfile.NewReader(r)
	if err == nil {
		if l := rd.ClassicLink(); l != 0 && l != pcapfile.LinkEthernet {
			err = fmt.Errorf("link type %d, only Ethernet (1) is supported", l)
		}
	}
	if err != nil && !errors.Is(err, ErrPcapFormat) {
		err = fmt.Errorf("%w: %w", ErrPcapFormat, err)
	}
	if err != nil {
		return nil, err
	}
	return rd, nil
}

// TxBurst writes pkts to the Tx file and returns how many it took: all of
// them, unless the port has no Tx file or a packet is foreign and no peer
// was set. Taken packets are freed (written or, after a write error,
// dropped and counted).
func (p *PcapPort) TxBurst(pkts []*Packet) int {
	if p.closed.Load() || p.w == nil {
		return 0
	}
	now := p.clock()
	idx, bytes, dropped := 0, 0, 0
	for idx < len(pkts) {
		np, nf := 0, 0
		stop := false
		for idx < len(pkts) && np < len(p.pooled) && nf < len(p.foreign) {
			q := pkts[idx]
			if IsPooled(q) {
				p.pooled[np] = q
				np++
			} else if p.peer != nil {
				p.foreign[nf] = q
				nf++
			} else {
				stop = true
				break
			}
			idx++
			if p.txErr != nil {
				dropped++
				continue
			}
			ts := now
			if p.cfg.TxPacketTS {
				ts = q.TS
			}
			ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(ts)), CaptureLength: len(q.Data), Length: len(q.Data)}
			if err := p.w.WritePacket(ci, q.Data); err != nil {
				p.txErr = err
				dropped++
				continue
			}
			bytes += len(q.Data)
		}
		FreePooled(p.pooled[:np])
		if nf > 0 {
			p.peer.Free(p.foreign[:nf])
		}
		if stop {
			break
		}
	}
	p.txPkts.Add(uint64(idx - dropped))
	p.txBytes.Add(uint64(bytes))
	if dropped > 0 {
		p.txDropped.Add(uint64(dropped))
	}
	return idx
}

// Flush writes buffered frames to the Tx file.
func (p *PcapPort) Flush() error {
	if p.bw == nil {
		return nil
	}
	if err := p.bw.Flush(); err != nil && p.txErr == nil {
		p.txErr = err
	}
	return p.txErr
}

// Alloc takes empty buffers from the port's pool.
func (p *PcapPort) Alloc(pkts []*Packet) int { return p.pool.Alloc(pkts) }

// Free returns packets to their pools (RxErrors counts strays, as for
// RingPort).
func (p *PcapPort) Free(pkts []*Packet) {
	if bad := FreePooled(pkts); bad > 0 {
		p.badFree.Add(uint64(bad))
	}
}

// Stats returns the counters; RxErrors counts skipped and bad records and
// stray Frees.
func (p *PcapPort) Stats() Stats {
	return Stats{
		RxPackets: p.rxPkts.Load(), RxBytes: p.rxBytes.Load(), RxErrors: p.rxErrs.Load() + p.badFree.Load(),
		TxPackets: p.txPkts.Load(), TxBytes: p.txBytes.Load(), TxDropped: p.txDropped.Load(),
	}
}

// Close flushes and closes the files; the first write or close error is
// returned. Later bursts return 0. Call it once the worker has stopped.
func (p *PcapPort) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	var err error
	if p.rf != nil {
		p.rf.Close()
	}
	if p.bw != nil {
		err = p.Flush()
		if cerr := p.wf.Close(); err == nil {
			err = cerr
		}
	}
	if p.pend != nil {
		p.one(p.pend)
		p.pend = nil
	}
	p.pool.Free(p.spare[:p.nspare])
	p.nspare = 0
	p.pool.Close()
	return err
}

func (p *PcapPort) one(q *Packet) {
	one := [1]*Packet{q}
	FreePooled(one[:])
}
