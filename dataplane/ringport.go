package dataplane

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ldafwd/ldafwd/ring"
)

// LinkConfig describes an in-process ring link: two ports, a and b, joined
// by one SPSC ring per direction, with an optional impairment stage on each.
type LinkConfig struct {
	Size  int           // ring slots per direction, power of two; default 1024
	MTU   int           // bytes per pool buffer; default 2048
	Pool  int           // buffers in the link's pool; default 4·Size + 2·(impairment queues) + 4·Burst
	Burst int           // largest burst one TxBurst/RxBurst call moves; default 64
	Clock func() uint64 // ns; default CLOCK_REALTIME (time.Now().UnixNano())
	AtoB  *ImpairConfig // frames sent on a, received on b; nil: perfect wire
	BtoA  *ImpairConfig // frames sent on b, received on a; nil: perfect wire
}

// Defaults for LinkConfig.
const (
	DefaultRingSize = 1024
	DefaultMTU      = 2048
	DefaultBurst    = 64
)

// RealtimeClock is CLOCK_REALTIME in ns since the Unix epoch, the clock
// two appliances on one host (or on PTP-synchronised hosts) share.
func RealtimeClock() uint64 { return uint64(time.Now().UnixNano()) }

// ErrRingConfig is wrapped by NewRingLink and OpenRingPort errors.
var ErrRingConfig = errors.New("dataplane: bad ring link")

// RingLink is an in-process wire between two RingPorts. Both ends share
// one PacketPool; frames cross the link by handing the buffer over (no
// copy) through the direction's ring.
type RingLink struct {
	name  string
	cfg   LinkConfig
	pool  *PacketPool
	ends  [2]*RingPort
	mu    sync.Mutex // guards opened/closed and registry membership
	open  [2]bool    // taken by OpenRingPort
	shut  [2]bool    // Close called
	inReg bool
}

// RingPort is one end of a RingLink. Like every Port it is driven by one
// goroutine at a time on the rx side and one on the tx side (usually the
// same worker); Stats and Close may be called from any goroutine.
type RingPort struct {
	name  string
	link  *RingLink
	pool  *PacketPool
	tx    *ring.SPSC[*Packet] // to the other end
	rx    *ring.SPSC[*Packet] // from the other end
	imp   *Impairer           // impairs frames arriving here; nil: perfect wire
	clock func() uint64
	peer  Port // frees foreign packets copied by TxBurst; nil: foreign packets refused

	out     []*Packet // TxBurst scratch, Burst long
	foreign []*Packet // originals of copied foreign packets, Burst long
	in      []*Packet // RxBurst scratch between ring and impairer, Burst long
	one     [1]*Packet

	lastTx                     uint64 // clock read of the last TxBurst (TxStamper); tx goroutine only
	closed                     atomic.Bool
	rxPkts, rxBytes            atomic.Uint64
	txPkts, txBytes, txDropped atomic.Uint64
	badFree                    atomic.Uint64
}

// NewRingLink builds a link. With a non-empty name it is also registered,
// so OpenRingPort("ring:<name>.a") and ("…b") return its ends; the name
// must not be in use and must not contain ':'. The ends returned by A and B
// are the same objects OpenRingPort hands out.
func NewRingLink(name string, cfg LinkConfig) (*RingLink, error) {
	if strings.ContainsAny(name, ": ") {
		return nil, fmt.Errorf("%w: name %q contains ':' or a space", ErrRingConfig, name)
	}
	if cfg.Size == 0 {
		cfg.Size = DefaultRingSize
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.Burst < 1 || cfg.Burst > 4096 {
		return nil, fmt.Errorf("%w: burst %d outside [1, 4096]", ErrRingConfig, cfg.Burst)
	}
	if cfg.Clock == nil {
		cfg.Clock = RealtimeClock
	}
	var imp [2]*Impairer
	queues := 0
	for _, ic := range []*ImpairConfig{cfg.AtoB, cfg.BtoA} {
		if ic != nil {
			q := ic.Queue
			if q == 0 {
				q = DefaultImpairQueue
			}
			queues += q
		}
	}
	if cfg.Pool == 0 {
		// Room for both rings and delay lines twice over: buffers handed
		// over to the next link of a chain still count against this pool.
		cfg.Pool = 4*cfg.Size + 2*queues + 4*cfg.Burst
	}
	ab, err := ring.NewSPSC[*Packet](cfg.Size)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRingConfig, err)
	}
	ba, _ := ring.NewSPSC[*Packet](cfg.Size)
	pool, err := NewPacketPool(cfg.Pool, cfg.MTU)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRingConfig, err)
	}
	for i, ic := range []*ImpairConfig{cfg.AtoB, cfg.BtoA} {
		if ic == nil {
			continue
		}
		if imp[i], err = NewImpairer(*ic, pool); err != nil {
			pool.Close()
			return nil, err
		}
	}
	l := &RingLink{name: name, cfg: cfg, pool: pool}
	// a transmits on ab and receives on ba; the stage for A→B sits at b's rx.
	l.ends[0] = l.newEnd("ring:"+name+".a", ab, ba, imp[1])
	l.ends[1] = l.newEnd("ring:"+name+".b", ba, ab, imp[0])
	if name != "" {
		regMu.Lock()
		defer regMu.Unlock()
		if _, dup := registry[name]; dup {
			pool.Close()
			return nil, fmt.Errorf("%w: link %q already exists", ErrRingConfig, name)
		}
		registry[name] = l
		l.inReg = true
	}
	return l, nil
}

func (l *RingLink) newEnd(name string, tx, rx *ring.SPSC[*Packet], imp *Impairer) *RingPort {
	b := l.cfg.Burst
	return &RingPort{
		name: name, link: l, pool: l.pool, tx: tx, rx: rx, imp: imp, clock: l.cfg.Clock,
		out: make([]*Packet, b), foreign: make([]*Packet, b), in: make([]*Packet, b),
	}
}

// A and B are the two ends.
func (l *RingLink) A() *RingPort { return l.ends[0] }
func (l *RingLink) B() *RingPort { return l.ends[1] }

// Pool is the link's packet pool.
func (l *RingLink) Pool() *PacketPool { return l.pool }

// Config is the link's config with defaults filled in.
func (l *RingLink) Config() LinkConfig { return l.cfg }

var (
	regMu    sync.Mutex
	registry = map[string]*RingLink{}
)

// OpenRingPort resolves a port spec "ring:<link>.a" or "ring:<link>.b"
// (the "ring:" prefix is optional). The two ends of a link are its two
// ports: frames sent on <link>.a are received on <link>.b and back. The
// first open of either end of an unknown link creates it with the default
// LinkConfig; NewRingLink beforehand gives it another config (impairment).
// Each end can be opened once; after both ends are closed the link is
// gone and the name can be used again.
func OpenRingPort(spec string) (Port, error) {
	name := strings.TrimPrefix(spec, "ring:")
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 || (name[dot+1:] != "a" && name[dot+1:] != "b") {
		return nil, fmt.Errorf("%w: spec %q: want ring:<link>.a or ring:<link>.b", ErrRingConfig, spec)
	}
	link, end := name[:dot], 0
	if name[dot+1:] == "b" {
		end = 1
	}
	regMu.Lock()
	l := registry[link]
	regMu.Unlock()
	if l == nil {
		var err error
		if l, err = NewRingLink(link, LinkConfig{}); err != nil {
			// Lost a race with another opener: use theirs.
			regMu.Lock()
			l = registry[link]
			regMu.Unlock()
			if l == nil {
				return nil, err
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[end] || l.shut[end] {
		return nil, fmt.Errorf("%w: %s is already open", ErrRingConfig, l.ends[end].name)
	}
	l.open[end] = true
	return l.ends[end], nil
}

// Name is the port's spec, "ring:<link>.a" or "ring:<link>.b".
func (p *RingPort) Name() string { return p.name }

// Link is the link this port is an end of.
func (p *RingPort) Link() *RingLink { return p.link }

// Impairer is the impairment stage on frames arriving at this port (nil
// for a perfect wire). Its Stats are the exact truth of that direction.
func (p *RingPort) Impairer() *Impairer { return p.imp }

// SetPeer names the port whose packets this port may be asked to transmit
// when they are not from a PacketPool (a DPDK or AF_XDP buffer): TxBurst
// copies such a frame into a link buffer and returns the original with
// peer.Free in one call per burst. Without a peer such packets are
// refused. Call before traffic starts.
func (p *RingPort) SetPeer(peer Port) { p.peer = peer }

// TxBurst sends pkts to the other end and returns how many it took (fewer
// when the ring is full). Pooled packets (any PacketPool) are handed over
// without copying — the receiver frees them to their own pool. The tx
// time, one clock read per burst, travels in TS. A foreign packet is copied
// (see SetPeer); one longer than the MTU is taken, counted in TxDropped
// and freed. No allocation, no lock.
func (p *RingPort) TxBurst(pkts []*Packet) int { return p.txBurst(pkts, true) }

// TxBurstStamped is TxBurst for frames whose TS already holds their
// transmit time (SoftQueues: a queue stamped them as a lane handed them
// over, before they waited for the wire): TS is kept, not rewritten.
func (p *RingPort) TxBurstStamped(pkts []*Packet) int { return p.txBurst(pkts, false) }

func (p *RingPort) txBurst(pkts []*Packet, stamp bool) int {
	if p.closed.Load() {
		return 0
	}
	n := min(len(pkts), p.tx.FreeCount())
	if n == 0 {
		return 0
	}
	now := p.clock()
	p.lastTx = now
	idx, bytes, dropped, stop := 0, 0, 0, false
	for idx < n && !stop {
		k, nf := 0, 0
		for k < len(p.out) && nf < len(p.foreign) && idx < n {
			q := pkts[idx]
			if !IsPooled(q) {
				if p.peer == nil {
					stop = true
					break
				}
				p.foreign[nf] = q
				if len(q.Data) > p.pool.mtu {
					nf++
					dropped++
					idx++ // taken and dropped, never sent
					continue
				}
				if p.pool.Alloc(p.one[:]) != 1 {
					stop = true
					break
				}
				nf++
				c := p.one[0]
				c.Data = c.Data[:copy(c.Data, q.Data)]
				c.TS = q.TS
				q = c
			}
			if stamp {
				q.TS = now
			}
			bytes += len(q.Data)
			p.out[k] = q
			k++
			idx++
		}
		if k > 0 {
			p.tx.EnqueueBulk(p.out[:k]) // cannot fail: we are the only producer and counted the room
		}
		if nf > 0 {
			p.peer.Free(p.foreign[:nf])
		}
	}
	p.txPkts.Add(uint64(idx - dropped))
	p.txBytes.Add(uint64(bytes))
	if dropped > 0 {
		p.txDropped.Add(uint64(dropped))
	}
	return idx
}

// LastTxNs is the tx time (TS) the last TxBurst gave the frames it took:
// the ring port is a TxStamper.
func (p *RingPort) LastTxNs() uint64 { return p.lastTx }

// RxBurst fills pkts with frames that have arrived and returns how many.
// Each packet's TS is its arrival time on the link clock: its tx time on a
// perfect wire, tx time + delay (and any queueing behind earlier frames)
// on an impaired one — the analogue of a NIC's hardware rx timestamp, not
// the time of the RxBurst call. An impaired port reads the clock once.
func (p *RingPort) RxBurst(pkts []*Packet) int {
	if p.closed.Load() {
		return 0
	}
	var n int
	if p.imp == nil {
		n = p.rx.DequeueBurst(pkts)
	} else {
		now := p.clock()
		p.admit()
		n = p.imp.Release(pkts, now)
	}
	if n == 0 {
		return 0
	}
	bytes := 0
	for _, q := range pkts[:n] {
		bytes += len(q.Data)
	}
	p.rxPkts.Add(uint64(n))
	p.rxBytes.Add(uint64(bytes))
	return n
}

// admit moves frames from the direction ring into the delay line, as many
// as it has room for.
func (p *RingPort) admit() {
	for {
		k := min(len(p.in), p.imp.Space())
		if k == 0 {
			return
		}
		m := p.rx.DequeueBurst(p.in[:k])
		if m == 0 {
			return
		}
		p.imp.Admit(p.in[:m])
		if m < k {
			return
		}
	}
}

// Drain is RxBurst for a link being shut down: it ignores the delay and
// hands out every frame in flight towards this port (held ones too), so
// the impairment truth accounts for every admitted frame.
func (p *RingPort) Drain(pkts []*Packet) int {
	if p.imp == nil {
		return p.RxBurst(pkts)
	}
	p.admit()
	n := p.imp.Flush(pkts)
	bytes := 0
	for _, q := range pkts[:n] {
		bytes += len(q.Data)
	}
	p.rxPkts.Add(uint64(n))
	p.rxBytes.Add(uint64(bytes))
	return n
}

// InFlight is a snapshot of the frames on their way to this port: in the
// ring plus in the delay line (the latter only exact from the rx goroutine).
func (p *RingPort) InFlight() int {
	n := p.rx.Count()
	if p.imp != nil {
		n += int(p.imp.pub.pending.Load())
	}
	return n
}

// Alloc takes empty MTU-sized buffers from the link's pool.
func (p *RingPort) Alloc(pkts []*Packet) int { return p.pool.Alloc(pkts) }

// Free returns packets to the pools they came from (any PacketPool); a
// packet that is in none is counted (Stats().RxErrors) and dropped.
func (p *RingPort) Free(pkts []*Packet) {
	if bad := FreePooled(pkts); bad > 0 {
		p.badFree.Add(uint64(bad))
	}
}

// Stats returns the port's counters. RxErrors counts Free calls with
// packets from no pool (a caller bug).
func (p *RingPort) Stats() Stats {
	return Stats{
		RxPackets: p.rxPkts.Load(), RxBytes: p.rxBytes.Load(),
		TxPackets: p.txPkts.Load(), TxBytes: p.txBytes.Load(), TxDropped: p.txDropped.Load(),
		RxErrors: p.badFree.Load(),
	}
}

// Close stops the port: later bursts return 0. When both ends are closed
// the link leaves the registry and its pool is closed; frames still in
// flight are dropped with it. Close twice is harmless.
func (p *RingPort) Close() error {
	p.closed.Store(true)
	l := p.link
	l.mu.Lock()
	end := 0
	if l.ends[1] == p {
		end = 1
	}
	l.shut[end] = true
	both := l.shut[0] && l.shut[1]
	l.mu.Unlock()
	if both {
		regMu.Lock()
		if l.inReg && registry[l.name] == l {
			delete(registry, l.name)
		}
		l.inReg = false
		regMu.Unlock()
		l.pool.Close()
	}
	return nil
}
