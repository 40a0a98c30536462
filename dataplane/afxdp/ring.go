package afxdp

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ring is one single-producer single-consumer AF_XDP ring shared with the
// kernel. We produce on fill and tx, consume on rx and completion. The
// cached indices avoid touching the shared words for every descriptor; the
// shared ones are read/written once per burst.
type ring struct {
	producer, consumer, flags *uint32
	mask, size                uint32
	cachedProd, cachedCons    uint32
	addrs                     []uint64       // fill, completion
	descs                     []unix.XDPDesc // rx, tx
	mem                       []byte
}

// reserve returns how many of n slots are free for us to produce into,
// starting at index cachedProd.
func (r *ring) reserve(n uint32) uint32 {
	free := r.size - (r.cachedProd - r.cachedCons)
	if free < n {
		r.cachedCons = atomic.LoadUint32(r.consumer)
		free = r.size - (r.cachedProd - r.cachedCons)
	}
	return min(free, n)
}

// submit publishes n produced descriptors.
func (r *ring) submit(n uint32) {
	r.cachedProd += n
	atomic.StoreUint32(r.producer, r.cachedProd)
}

// peek returns how many of n descriptors are ready for us, starting at
// index cachedCons.
func (r *ring) peek(n uint32) uint32 {
	avail := r.cachedProd - r.cachedCons
	if avail < n {
		r.cachedProd = atomic.LoadUint32(r.producer)
		avail = r.cachedProd - r.cachedCons
	}
	return min(avail, n)
}

// release gives n consumed descriptors back to the kernel.
func (r *ring) release(n uint32) {
	r.cachedCons += n
	atomic.StoreUint32(r.consumer, r.cachedCons)
}

// pending is how many produced descriptors the kernel has not consumed.
func (r *ring) pending() uint32 {
	r.cachedCons = atomic.LoadUint32(r.consumer)
	return r.cachedProd - r.cachedCons
}

func (r *ring) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

func (r *ring) unmap() {
	if r.mem != nil {
		_ = unix.Munmap(r.mem)
		r.mem = nil
	}
}
