package dataplane

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ldafwd/ldafwd/ring"
)

// PacketPool is a preallocated set of packet buffers, the ring and pcap
// ports' counterpart of a DPDK mempool. Every buffer is a fixed MTU-sized
// slice of one big allocation; Packet headers live in one array. Alloc and
// Free move *Packet values through an MPMC ring, so any goroutine may
// allocate or free at any time without locks and without allocation.
//
// A pooled packet's Handle says which pool and slot it belongs to, so Free
// (and the package-level FreePooled) can return a packet to its own pool
// even after it has crossed into another port: a ring link hands buffers
// over instead of copying them (see RingPort.TxBurst).
type PacketPool struct {
	id    uint32
	mtu   int
	mem   []byte   // len(pkts)*mtu bytes, buffer i at [i*mtu, (i+1)*mtu)
	pkts  []Packet // headers, Handle = handle(id, i)
	free  *ring.MPMC[*Packet]
	stray atomic.Uint64 // Free of a packet that is not ours or freed twice
}

// Handle layout of a pooled packet: bit 62 marks a PacketPool buffer (a
// real pointer in user space — an rte_mbuf*, a UMEM offset — never has it
// on amd64/arm64 with 48-bit address spaces), bits 32..47 the pool id,
// bits 0..31 the slot.
const (
	handlePooled = uintptr(1) << 62
	maxPools     = 1 << 12
	poolIDMask   = maxPools - 1
)

// pools maps pool id → pool for FreePooled. Lookups on the hot path are
// one atomic load; registration takes poolsMu.
var (
	pools   [maxPools]atomic.Pointer[PacketPool]
	poolsMu sync.Mutex
	poolSeq uint32
)

// ErrPoolConfig is wrapped by NewPacketPool for a bad size or MTU.
var ErrPoolConfig = errors.New("dataplane: bad packet pool config")

// MaxMTU bounds a pool's buffer size (a jumbo frame plus headroom).
const MaxMTU = 16384

// NewPacketPool preallocates n buffers of mtu bytes (n ≥ 1, 64 ≤ mtu ≤
// MaxMTU), n rounded up to a power of two so the free ring holds exactly
// the pool (a free into a full pool is then always a double free), and
// registers the pool so FreePooled finds it. Close unregisters.
func NewPacketPool(n, mtu int) (*PacketPool, error) {
	if n < 1 || n > 1<<24 {
		return nil, fmt.Errorf("%w: %d buffers (want 1..2^24)", ErrPoolConfig, n)
	}
	if mtu < 64 || mtu > MaxMTU {
		return nil, fmt.Errorf("%w: mtu %d (want 64..%d)", ErrPoolConfig, mtu, MaxMTU)
	}
	size := 1
	for size < n {
		size <<= 1
	}
	free, err := ring.NewMPMC[*Packet](size)
	if err != nil {
		return nil, err
	}
	n = size
	p := &PacketPool{mtu: mtu, mem: make([]byte, n*mtu), pkts: make([]Packet, n), free: free}
	if err := p.register(); err != nil {
		return nil, err
	}
	ptrs := make([]*Packet, n)
	for i := range p.pkts {
		p.pkts[i].Data = p.mem[i*mtu : (i+1)*mtu : (i+1)*mtu]
		p.pkts[i].Handle = handlePooled | uintptr(p.id)<<32 | uintptr(i)
		ptrs[i] = &p.pkts[i]
	}
	p.free.EnqueueBulk(ptrs)
	return p, nil
}

func (p *PacketPool) register() error {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	for range maxPools {
		id := poolSeq & poolIDMask
		poolSeq++
		if pools[id].Load() == nil {
			p.id = id
			pools[id].Store(p)
			return nil
		}
	}
	return fmt.Errorf("%w: more than %d pools open", ErrPoolConfig, maxPools)
}

// Close unregisters the pool. Packets still out are no longer returned by
// FreePooled (they are counted as stray by nobody and left to the GC).
func (p *PacketPool) Close() {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	pools[p.id].CompareAndSwap(p, nil)
}

// MTU is the size of every buffer, bytes.
func (p *PacketPool) MTU() int { return p.mtu }

// Size is the number of buffers.
func (p *PacketPool) Size() int { return len(p.pkts) }

// Available is a snapshot of the number of free buffers.
func (p *PacketPool) Available() int { return p.free.Count() }

// Stray counts Free calls for packets that were not this pool's or were
// already free (a double free) — a bug in the caller, counted not panicked.
func (p *PacketPool) Stray() uint64 { return p.stray.Load() }

// Alloc fills pkts[0:n] with free buffers, Data reset to the full MTU and
// TS to 0, and returns n (fewer than len(pkts) when the pool runs low).
func (p *PacketPool) Alloc(pkts []*Packet) int {
	n := p.free.DequeueBurst(pkts)
	for _, q := range pkts[:n] {
		q.Data = q.Data[:p.mtu]
		q.TS = 0
	}
	return n
}

// owns reports whether q is one of p's packets (by address, so a Handle
// forged or left over from a closed pool whose id was reused is caught).
func (p *PacketPool) owns(q *Packet) bool {
	slot := q.Handle & 0xffffffff
	return q.Handle&handlePooled != 0 && int(slot) < len(p.pkts) && &p.pkts[slot] == q
}

// Free returns pkts to this pool; packets of other pools go to theirs (as
// FreePooled). Unknown packets are counted in Stray and dropped.
func (p *PacketPool) Free(pkts []*Packet) { FreePooled(pkts) }

// IsPooled reports whether q belongs to an open PacketPool, i.e. whether
// FreePooled can take it back. Ports use it to tell buffers they can hand
// over from foreign ones (an rte_mbuf) they must copy.
func IsPooled(q *Packet) bool {
	if q.Handle&handlePooled == 0 {
		return false
	}
	p := pools[(q.Handle>>32)&poolIDMask].Load()
	return p != nil && p.owns(q)
}

// FreePooled returns each packet to the PacketPool it came from and
// returns how many it could not place (not pooled, pool closed, or the
// pool's free ring already full — a double free). Runs of packets of one
// pool are returned with one ring operation.
func FreePooled(pkts []*Packet) int {
	bad := 0
	for i := 0; i < len(pkts); {
		q := pkts[i]
		var p *PacketPool
		if q.Handle&handlePooled != 0 {
			p = pools[(q.Handle>>32)&poolIDMask].Load()
		}
		if p == nil || !p.owns(q) {
			bad++
			i++
			continue
		}
		j := i + 1
		for j < len(pkts) && pkts[j].Handle>>32 == q.Handle>>32 && p.owns(pkts[j]) {
			j++
		}
		if k := p.free.EnqueueBurst(pkts[i:j]); k < j-i {
			p.stray.Add(uint64(j - i - k))
			bad += j - i - k
		}
		i = j
	}
	return bad
}
